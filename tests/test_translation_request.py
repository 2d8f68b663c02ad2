"""``luong.config.translation_request``: one request, one value. Every face builds a
``TranslationRequest`` and hands it whole to ``Translator.answer``; ``translations`` is the
same path with the request's parts as arguments (issue 52, item 1)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import SRC_SPACE, small_model

from luong import RequestOptions, SearchOptions, TranslationRequest, Translator
from luong.common.errors import LuongError, LuongTypeError

TEXTS = ["abc de", "", "hij a", "j"]


def test_the_request_keeps_its_parts_and_turns_constraints_into_tuples() -> None:
    search = SearchOptions(beam=3)
    request = TranslationRequest(
        search,
        RequestOptions(placeholders="mask"),
        constraints=[["a b"], [], ["c"], []],
        exact=True,
        batch_size=2,
        window=4,
    )
    assert request.search is search and request.options.placeholders == "mask"
    assert request.constraints == (("a b",), (), ("c",), ())
    assert (request.exact, request.batch_size, request.window) == (True, 2, 4)
    defaults = TranslationRequest()
    assert (defaults.search, defaults.options, defaults.constraints) == (
        None,
        RequestOptions(),
        None,
    )
    assert (defaults.exact, defaults.batch_size, defaults.window) == (False, 512, None)
    with pytest.raises(AttributeError):  # frozen: a face cannot change it on the way
        request.batch_size = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        (
            {"search": {"beam": 2}},
            LuongTypeError,
            "search: expected SearchOptions or None, got dict",
        ),
        ({"options": None}, LuongTypeError, "options: expected RequestOptions, got NoneType"),
        ({"constraints": "abc"}, LuongTypeError, "constraints: expected one list of phrase"),
        ({"constraints": [["a"], "b"]}, LuongTypeError, r"got 'b' at 1"),
        ({"constraints": [[1]]}, LuongTypeError, r"got \[1\] at 0"),
        ({"exact": 1}, LuongTypeError, "exact: expected a bool, got int"),
        ({"batch_size": 0}, LuongError, "batch_size: expected an int >= 1, got 0"),
        ({"batch_size": True}, LuongTypeError, "batch_size: expected an int >= 1, got True"),
        ({"batch_size": 2.0}, LuongTypeError, "batch_size: expected an int >= 1, got 2.0"),
        ({"window": -1}, LuongError, "window: expected an int >= 1, got -1"),
        ({"max_src_len": 0}, LuongError, "max_src_len: expected an int >= 1, got 0"),
        (
            {
                "search": SearchOptions(sample=True),
                "options": RequestOptions(placeholders="constrain"),
            },
            LuongError,
            "sample: placeholders constrain keeps them by beam search",
        ),
    ],
)
def test_a_bad_request_is_refused_naming_its_field(
    fields: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        TranslationRequest(**fields)  # type: ignore[arg-type]


def test_answer_is_translations_with_the_parts_in_one_value() -> None:
    translator = Translator(small_model(2, SRC_SPACE))
    search = SearchOptions(beam=3, nbest=2)
    constraints = [["1"], [], [], ["2-3"]]
    keyword = list(
        translator.translations(TEXTS, search, constraints=constraints, batch_size=1, window=2)
    )
    request = TranslationRequest(search, constraints=constraints, batch_size=1, window=2)
    answered = list(translator.answer(TEXTS, request))
    assert [t.texts for t in answered] == [t.texts for t in keyword]
    assert [[h.score for h in t.hypotheses] for t in answered] == [
        [h.score for h in t.hypotheses] for t in keyword
    ]
    assert "1" in answered[0].texts[0] and "2-3" in answered[3].texts[0]
    # batch size and window cut the work, never the outputs
    whole = list(translator.answer(TEXTS, replace(request, batch_size=512, window=None)))
    assert [t.texts for t in whole] == [t.texts for t in answered]
    # no search given: the translator's decoding defaults (greedy search here)
    assert [t.texts for t in translator.answer(TEXTS)] == [
        t.texts for t in translator.answer(TEXTS, TranslationRequest(SearchOptions()))
    ]


def test_answer_refuses_what_is_not_one_request() -> None:
    translator = Translator(small_model(2, SRC_SPACE))
    with pytest.raises(
        TypeError, match="request: expected a TranslationRequest, got SearchOptions"
    ):
        translator.answer(TEXTS, SearchOptions())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"constraints: expected one list per source \(4\), got 1"):
        translator.answer(TEXTS, TranslationRequest(constraints=[["1"]]))
    # the request's own limit, as luong translate --max-src-len gives it
    longer = TranslationRequest(max_src_len=3)
    with pytest.raises(
        ValueError, match=r"sources\[0\]: 6 symbols, above the maximum source length 3"
    ):
        translator.answer(TEXTS, longer)
    assert len(list(translator.answer(["ab", "", "j"], longer))) == 3
    with pytest.raises(TypeError, match="memory: expected a TranslationMemory, got dict"):
        translator.translations(TEXTS, memory={})  # type: ignore[arg-type]
