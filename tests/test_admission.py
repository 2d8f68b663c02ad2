"""One admission rule (``luong.translation.admission``): a verdict per source (unrepresentable,
empty, too long as the request decodes it), the limit of an ensemble and of a location-score
model, and each face mapping the same verdict to its own error: ``fit_sources``' line for
the command line, the HTTP API's 413 and 422, ``luong po``'s reason to leave an entry,
``luong plot``'s ``text:`` error."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, TINY_MODEL_FLAGS, assert_one_line_error, small_model
from helpers import luong as run_luong

from luong.catalogs.fill import too_long
from luong.common.lines import lone_surrogate
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.evaluation.plot import plot_translation
from luong.model.ensemble import Ensemble
from luong.server.app import ServedModel, ServeLimits, create_app
from luong.service.limits import LimitError, check_request
from luong.translation.admission import Verdict, admit, fit_sources, read_length, source_limit
from luong.translation.translator import Translator

MASK = RequestOptions(placeholders="mask")
CONSTRAIN = RequestOptions(placeholders="constrain")


def test_each_kind_of_verdict() -> None:
    model = small_model(0, SRC_SPACE, max_src_len=6)
    sources = ["abc", "", "   ", "abcdefgh", "ab\ud800c", "abcdef", "a\x00b"]
    verdicts = admit(model, sources)
    assert verdicts == [
        None,
        Verdict("empty"),
        Verdict("empty"),
        Verdict("too_long", 8, 6),
        Verdict("unrepresentable", 2),
        None,  # exactly the limit
        Verdict("binary", 1),  # a NUL: a binary file's byte, which was translated as text
    ]
    assert [v.refused for v in verdicts if v is not None] == [False, False, True, True, True]
    assert verdicts[3].detail == "8 symbols, above the maximum source length 6"  # type: ignore[union-attr]
    assert verdicts[4].detail == "not valid Unicode (a lone surrogate at character 2)"  # type: ignore[union-attr]
    assert verdicts[6].detail == "binary data, not text (a NUL at character 1)"  # type: ignore[union-attr]


def test_the_length_is_read_as_the_request_decodes_the_source() -> None:
    """ "{}{}a" is 5 symbols; masked, "%d %d a" is 7. Off reads it as it is, mask masked,
    constrain the longer of the two."""
    model = small_model(0, SRC_SPACE, max_src_len=6)
    vocab = model.src_vocab
    text = "{}{}a"
    assert [read_length(vocab, text, p) for p in ("off", "mask", "constrain")] == [5, 7, 7]
    assert admit(model, [text]) == [None]
    for request in (MASK, CONSTRAIN):
        (verdict,) = admit(model, [text], request)
        assert verdict == Verdict("too_long", 7, 6, request.placeholders)
        assert verdict.detail == (
            f"7 symbols with its placeholders masked (placeholders {request.placeholders}), "
            "above the maximum source length 6"
        )
    # masking that shortens: constrain still reads the text as it is where that is longer
    assert read_length(vocab, "a %s b", "constrain") == read_length(vocab, "a %s b", "off")


def test_the_limit_is_every_members_and_a_location_models_cap() -> None:
    ensemble = Ensemble([small_model(0, SRC_SPACE, max_src_len=9),
                         small_model(1, SRC_SPACE, max_src_len=4)])  # fmt: skip
    assert source_limit(ensemble) == 4 and Translator(ensemble).max_src_len == 4
    assert admit(ensemble, ["abcde"]) == [Verdict("too_long", 5, 4)]
    assert admit(ensemble, ["abcde"], max_src_len=20) == [None]  # no location model
    location = small_model(0, SRC_SPACE, attention="location", max_src_len=5)
    with pytest.raises(ValueError, match="a location-score model reads at most 5 symbols, got 6"):
        admit(location, ["a"], max_src_len=6)
    for bad in (0, True, "5"):
        with pytest.raises(ValueError, match="max_src_len: expected an int >= 1"):
            source_limit(location, bad)  # type: ignore[arg-type]


def test_fit_sources_names_the_first_refused_line_and_cuts_to_fit() -> None:
    model = small_model(0, SRC_SPACE, max_src_len=6)
    sources = ["abc", "abcdefgh", "", "{}{}a", "xyz"]
    with pytest.raises(
        ValueError,
        match=r"^in\.txt:4: 7 symbols with its placeholders masked \(placeholders mask\), "
        r"above the maximum source length 6 \(1 such lines\); pass --truncate to cut them$",
    ):
        fit_sources(model, ["abc", "", "x", "{}{}a"], name="in.txt", request=MASK)
    message = (
        r"in\.txt:2: 8 symbols, above the maximum source length 6 \(1 such lines\); pass "
        r"--truncate to cut them, or --max-src-len"
    )
    with pytest.raises(ValueError, match=message):
        fit_sources(model, sources, name="in.txt")
    fitted = fit_sources(model, sources, truncate=True, request=MASK)
    assert fitted.truncated == [1, 3]
    assert len(fitted.sources) == len(sources)  # N in, N out
    assert all(v is None or not v.refused for v in admit(model, fitted.sources, MASK))
    assert fitted.sources[1] == "abcdef"
    assert fitted.sources[3] == "{}{}"  # masked "%d %d": 5 symbols, "%d %d a" 7
    with pytest.raises(ValueError, match=r"^<input>:2: not valid Unicode \(a lone surrogate"):
        fit_sources(model, ["a", "b\udc80"], truncate=True)


def test_the_faces_map_the_same_verdict() -> None:
    """The HTTP API (413 for too long, 422 for not Unicode, the limit the lower of the
    deployment's and every member's), ``luong po``'s reason, ``luong plot``'s error."""
    ensemble = Ensemble([small_model(0, SRC_SPACE, max_src_len=9),
                         small_model(1, SRC_SPACE, max_src_len=5)])  # fmt: skip
    served = ServedModel("one", Translator(ensemble), {})
    limits = ServeLimits(max_sources=4, max_source_len=8)
    with TestClient(create_app([served], limits=limits, max_wait_ms=0)) as client:
        answer = client.post("/api/translate", json={"sources": ["ab", "abcdef"]})
        assert answer.status_code == 413
        assert answer.json()["detail"] == (
            "max_source_len: source 1 has 6 symbols, above the limit of 5"
        )  # the smaller member's limit, not the first member's 9
        assert client.post("/api/translate", json={"sources": ["{}{}a"]}).status_code == 200
        for mode in ("mask", "constrain"):  # "%d %d a": 7 symbols
            body = {"sources": ["{}{}a"], "placeholders": mode}
            masked = client.post("/api/translate", json=body)
            assert masked.status_code == 413
            assert masked.json()["detail"] == (
                "max_source_len: source 0 has 7 symbols, above the limit of 5"
            )
        surrogate = client.post("/api/translate", content=b'{"sources": ["a\\ud800"]}',
                                headers={"content-type": "application/json"})  # fmt: skip
        assert surrogate.status_code == 422
        assert "sources: source 0 is not valid Unicode (a lone surrogate at character 1)" in (
            surrogate.text
        )
        nul = client.post("/api/translate", json={"sources": ["a\u0000b"]})  # it answered "ab"
        assert nul.status_code == 422
        assert "sources: source 0 is binary data, not text (a NUL at character 1)" in nul.text
        answer = client.post("/api/translate", json={"sources": ["ab", "abcde"]})
        assert answer.status_code == 200
    reason = too_long(Translator(ensemble), "constrain")
    assert reason("abcde") is None
    assert reason("{}{}a") == "7 symbols, above the model's maximum source length 5"
    with pytest.raises(ValueError, match=r"^text: 6 symbols, above the maximum source length 5$"):
        plot_translation(Translator(ensemble), "abcdef", "never-written.png")
    with pytest.raises(ValueError, match=r"^text: expected a non-empty input, got '  '$"):
        plot_translation(Translator(ensemble), "  ", "never-written.png")


def test_a_requests_limits_need_no_transport() -> None:
    """``check_request`` raises ``LimitError``s that say too large (413) or invalid (422),
    with the messages the HTTP API answers; nothing of HTTP in them."""
    translator = Translator(small_model(0, SRC_SPACE, max_src_len=9))
    limits = ServeLimits(max_sources=2, max_source_len=4, max_beam=3)
    cases = [
        (["a", "b", "c"], SearchOptions(), True, "max_sources: 3 sources, above the limit of 2"),
        (["abcdef"], SearchOptions(), True, "max_source_len: source 0 has 6 symbols, above "
         "the limit of 4"),
        (["a\ud800"], SearchOptions(), False, "sources: source 0 is not valid Unicode (a "
         "lone surrogate at character 1)"),
        (["ab", "a\x00b"], SearchOptions(), False, "sources: source 1 is binary data, not "
         "text (a NUL at character 1)"),
        (["ab"], SearchOptions(beam=5), False, "max_beam: beam 5, above the limit of 3"),
    ]  # fmt: skip
    for sources, search, too_large, message in cases:
        with pytest.raises(LimitError) as caught:
            check_request(sources, search, translator, limits, RequestOptions())
        assert (caught.value.too_large, str(caught.value)) == (too_large, message)
    check_request(["ab", "abcd"], SearchOptions(beam=3), translator, limits, RequestOptions())


def test_luong_eval_admits_by_the_same_rule_before_decoding(tmp_path: Path) -> None:
    """``luong eval`` checked nothing: a source longer than the model reads was decoded past
    its limit and scored. It now refuses by ``Translator.admit``'s verdict, naming the first
    pair and how many, before anything is decoded."""
    model = tmp_path / "model"
    small_model(0, max_src_len=5).save_pretrained(model)
    data = tmp_path / "pairs.tsv"
    data.write_text("abc\t12\nabcdefghij\t12\nab\t1\nabcdefg\t3\n", encoding="utf-8")
    result = run_luong("eval", str(model), "--data", str(data))
    assert_one_line_error(
        result,
        f"luong: error: {data}: pair 2: its source is 10 symbols, above the maximum source "
        "length 5 (2 such pairs); a score over them would not be the model's",
    )
    data.write_text("abc\t12\nab\t1\n", encoding="utf-8")  # every source fits: scored
    assert run_luong("eval", str(model), "--data", str(data), "--json").returncode == 0


def test_the_translator_refuses_a_source_it_does_not_take_before_decoding() -> None:
    """``load().translate`` (``Translator.answer``, the path every face takes) decoded a
    source past the model's limit; it now refuses by the same verdicts, naming the first
    refused source and how many, before anything is decoded."""
    translator = Translator(small_model(0, SRC_SPACE, max_src_len=6))
    sources = ["abc", "abcdefgh", "", "ab\ud800c", "abcdefghij"]
    with pytest.raises(
        ValueError,
        match=r"^sources\[1\]: 8 symbols, above the maximum source length 6 \(3 refused "
        r"sources\); cut it",
    ):
        translator.translate(sources)
    with pytest.raises(ValueError, match=r"^sources\[0\]: not valid Unicode \(a lone surrogate"):
        translator.translate(["ab\ud800c"])
    masked = "{}{}a"  # 5 symbols as typed; masked, "%d %d a" is 7
    assert len(translator.translate([masked])) == 1
    with pytest.raises(ValueError, match=r"7 symbols with its placeholders masked \(placeholders"):
        translator.translate([masked], request=MASK)
    assert len(translator.translate(["abc", "", "abcdef"])) == 3  # empty and the limit pass


def test_a_run_refuses_a_test_split_it_could_not_decode_before_the_first_step(
    tmp_path: Path,
) -> None:
    """A run checked its dev sources' lengths up front, but its test split only when it was
    decoded after the last epoch; now both, by the same rule, and nothing is written."""
    train, dev, test = (tmp_path / f"{name}.tsv" for name in ("train", "dev", "test"))
    train.write_text("abc\t12\nab\t1\n" * 8, encoding="utf-8")
    dev.write_text("abc\t12\n", encoding="utf-8")
    test.write_text("abc\t12\nabcdefghij\t3\n", encoding="utf-8")
    out = tmp_path / "run"
    result = run_luong(
        "train", "--train", str(train), "--dev", str(dev), "--test", str(test),
        "--out", str(out), "--max-src-len", "5", *TINY_MODEL_FLAGS,
    )  # fmt: skip
    assert_one_line_error(
        result,
        "luong: error: test_pairs: 1 sources are longer than the model's max_src_len=5 "
        "symbols (the longest has 10); raise max_src_len (--max-src-len 10)",
    )
    assert not out.exists()


def test_lone_surrogate_names_the_first_one_or_none() -> None:
    # The one check that admission, the search options and the glossaries word their
    # messages from: the place of the first character UTF-8 cannot write.
    assert lone_surrogate("") is None
    assert lone_surrogate("caf\u00e9 \U0001f600") is None  # a pair in UTF-8 is fine
    assert lone_surrogate("ab\ud800cd\udfff") == 2
    assert lone_surrogate(b"x\xff".decode("utf-8", "surrogateescape")) == 1
