"""``luong.config.search``: every decoding option once, checked on construction, and what is
generated from it: the command line's flags, the server's request model. A new option added
in a subclass reaches the flags, the server's schema and the search with no other edit."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, small_model

import luong.server.app
import luong.translation.translator
from luong import Translator
from luong.cli.common import UsageError, add_search_flags, search_options
from luong.config.search import (
    MAX_BEAM,
    MAX_SEED,
    OptionError,
    OptionTypeError,
    SearchOptions,
    check_field,
    option,
    option_specs,
)
from luong.config.train import TrainConfig
from luong.server.api_requests import request_model
from luong.server.app import ServedModel, create_app


def test_the_defaults_are_greedy_search() -> None:
    options = SearchOptions()
    assert options.greedy
    assert (options.beam, options.nbest, options.max_len, options.combine) == (
        1,
        1,
        None,
        "logprob",
    )
    assert not SearchOptions(beam=1, alpha=0.5).greedy  # a penalty: beam search with one beam
    assert not SearchOptions(prefix="1").greedy and not SearchOptions(sample=True).greedy


def test_every_field_has_its_help_and_the_values_are_normalised() -> None:
    specs = option_specs(SearchOptions)
    assert [f.name for f, _, _ in specs] == [f.name for f in dataclasses.fields(SearchOptions)]
    assert all(spec.help and "\n" not in spec.help for _, _, spec in specs)
    options = SearchOptions(alpha=1, beta=0)  # JSON integers in float fields
    assert isinstance(options.alpha, float) and isinstance(options.beta, float)
    assert options == SearchOptions(alpha=1.0) and hash(options) == hash(SearchOptions(alpha=1.0))
    assert options.to_json()["alpha"] == 1.0


ONE_LINE = "prefix: expected one line of text, got a line break, tab or NUL in it"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"beam": 0}, "beam: expected an int >= 1, got 0"),
        ({"beam": MAX_BEAM + 1}, f"beam: expected at most {MAX_BEAM}, got {MAX_BEAM + 1}"),
        ({"beam": 2, "nbest": 3}, "nbest: expected at most beam = 2, got 3"),
        ({"sample": True, "nbest": 1001}, "nbest: expected at most 1000, got 1001"),
        ({"alpha": float("inf")}, "alpha: expected a finite number >= 0, got inf"),
        ({"alpha": 5.5}, "alpha: expected at most 5, got 5.5"),
        ({"beta": -0.1}, "beta: expected a finite number >= 0, got -0.1"),
        ({"min_len": 10001}, "min_len: expected at most 10000, got 10001"),
        ({"max_len": 10001}, "max_len: expected at most 10000, got 10001"),
        (
            {"max_len": 4, "min_len": 4},
            "min_len: expected < max_len = 4 (EOS could never come), got 4",
        ),
        ({"prefix": "a" * 1001}, "prefix: expected at most 1000 characters, got 1001"),
        ({"prefix": "a\tb"}, ONE_LINE),
        ({"prefix": "a\u2028b"}, ONE_LINE),
        (
            {"prefix": "ab\ud800"},
            "prefix: expected valid Unicode, got a lone surrogate at character 2",
        ),
        ({"prefix": "1", "min_len": 1}, "min_len: not with a prefix or sampling, got 1"),
        ({"sample": True, "beam": 3}, "beam: sampling draws one token a step, expected 1, got 3"),
        (
            {"sample": True, "temperature": 0.0},
            "temperature: expected a finite number > 0, got 0.0",
        ),
        ({"sample": True, "temperature": 1e3}, "temperature: expected at most 100, got 1000.0"),
        (
            {"sample": True, "seed": MAX_SEED + 1},
            f"seed: expected at most {MAX_SEED}, got {MAX_SEED + 1}",
        ),
        ({"temperature": 0.5}, "temperature: only when sampling"),
        ({"top_k": 5}, "top_k: only when sampling"),
        ({"seed": 0}, "seed: only when sampling"),
        ({"combine": "mean"}, "combine: expected one of logprob, prob, got 'mean'"),
    ],
)
def test_bad_values_are_named_with_the_value(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionError) as error:
        SearchOptions(**fields)
    assert str(error.value) == message
    assert isinstance(error.value, ValueError)
    assert error.value.name == message.split(":")[0]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"beam": 2.0}, "beam: expected an int >= 1, got 2.0"),
        ({"beam": True}, "beam: expected an int >= 1, got True"),
        ({"alpha": "0.5"}, "alpha: expected a finite number >= 0, got '0.5'"),
        ({"sample": 1}, "sample: expected true or false, got 1"),
        ({"prefix": 5}, "prefix: expected a string, got int"),
        ({"seed": 1.0, "sample": True}, "seed: expected an int >= 0, got 1.0"),
    ],
)
def test_values_of_the_wrong_type_are_type_errors(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionTypeError) as error:
        SearchOptions(**fields)
    assert str(error.value) == message and isinstance(error.value, TypeError)


def test_the_bounds_are_inclusive_where_they_say_so() -> None:
    edge = SearchOptions(beam=MAX_BEAM, nbest=MAX_BEAM, alpha=5, beta=10, max_len=10_000)
    assert (edge.beam, edge.alpha, edge.beta, edge.max_len) == (1000, 5.0, 10.0, 10_000)
    drawing = SearchOptions(sample=True, temperature=100, seed=MAX_SEED, top_k=1, nbest=1000)
    assert drawing.seed == 2**64 - 1
    assert SearchOptions(sample=True, temperature=1e-300).temperature == 1e-300  # > 0
    assert SearchOptions(min_len=9, max_len=10).min_len == 9


def test_train_config_checks_its_decoding_as_search_options() -> None:
    config = TrainConfig(test_beam=5, test_alpha=0.6, max_decode_len=40)
    assert config.test_search == SearchOptions(beam=5, alpha=0.6, max_len=40)
    assert config.dev_search == SearchOptions(max_len=40)
    assert TrainConfig().dev_search == SearchOptions()
    with pytest.raises(ValueError, match="^test_beam: expected at most 1000, got 1001$"):
        TrainConfig(test_beam=1001)
    with pytest.raises(ValueError, match="^max_decode_len: expected at most 10000, got 20000$"):
        TrainConfig(max_decode_len=20_000)


def test_check_field_refuses_a_type_it_cannot_check() -> None:
    spec = option("a list")
    with pytest.raises(TypeError, match="options are int, float, bool or str"):
        check_field("words", list, spec, [])

    @dataclass(frozen=True)
    class Bare(SearchOptions):
        window: int = 3  # no option(...) metadata

    with pytest.raises(TypeError, match=r"Bare.window: expected metadata=option\(...\)"):
        Bare()


def test_flags_are_made_from_the_fields() -> None:
    parser = argparse.ArgumentParser()
    add_search_flags(parser)
    flags = {a.option_strings[0] for a in parser._actions if a.option_strings} - {"-h"}
    assert flags == {"--" + f.name.replace("_", "-") for f in dataclasses.fields(SearchOptions)}
    args = parser.parse_args(["--beam", "5", "--nbest", "2", "--alpha", "0.6", "--replace-unk"])
    assert search_options(args) == SearchOptions(beam=5, nbest=2, alpha=0.6, replace_unk=True)
    assert search_options(parser.parse_args([])) == SearchOptions()  # nothing given: defaults
    with pytest.raises(UsageError, match=r"^--top-k: only when sampling$"):
        search_options(parser.parse_args(["--top-k", "3"]))
    fewer = argparse.ArgumentParser()
    add_search_flags(fewer, exclude=("nbest", "seed"))
    with pytest.raises(SystemExit):
        fewer.parse_args(["--nbest", "2"])  # not one of this command's flags
    fewer.add_argument("--seed", type=int)  # a command's own --seed (eval's: the data's)
    assert search_options(fewer.parse_args(["--seed", "3"])) == SearchOptions()


# -- a new option, added in a subclass ---------------------------------------------------------


@dataclass(frozen=True)
class WithTopP(SearchOptions):
    """A test-only option: nucleus sampling's p (Holtzman et al. 2020)."""

    top_p: float = field(
        default=1.0,
        metadata=option(
            "with sample: draw from the smallest set of tokens of mass p",
            above=0.0,
            high=1.0,
            metavar="P",
        ),  # fmt: skip
    )


def test_a_new_option_reaches_the_flags_the_schema_and_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The field above, and nothing else: its flag, its check with its message, its place
    in the server's schema with its bounds, and the search receives it in the options it is
    called with. One edit remains, and it cannot be generated: the code in ``luong.search``
    that reads ``options.top_p`` (here, the search is only seen receiving it)."""
    parser = argparse.ArgumentParser()
    add_search_flags(parser, cls=WithTopP)
    args = parser.parse_args(["--sample", "--top-p", "0.9", "--seed", "3"])
    assert search_options(args, WithTopP) == WithTopP(sample=True, top_p=0.9, seed=3)
    with pytest.raises(UsageError, match=r"^--top-p: expected at most 1, got 1.5$"):
        search_options(parser.parse_args(["--top-p", "1.5"]), WithTopP)
    assert "--top-p P" in parser.format_help()

    schema = request_model(WithTopP).model_json_schema()["properties"]["top_p"]
    assert schema["exclusiveMinimum"] == 0.0 and schema["maximum"] == 1.0
    assert schema["default"] == 1.0 and schema["description"].startswith("with sample")

    seen: list[SearchOptions] = []
    decode_batches = (
        luong.translation.translator.decode_batches
    )  # the server decodes through Translator

    def spy(model: Any, sources: Any, options: SearchOptions, **kwargs: Any) -> Any:
        seen.append(options)
        return decode_batches(model, sources, options, **kwargs)

    monkeypatch.setattr(luong.translation.translator, "decode_batches", spy)
    served = ServedModel("one", Translator(small_model(src=SRC_SPACE)))
    with TestClient(create_app([served], max_wait_ms=0, options=WithTopP)) as client:
        body = {"sources": ["abc"], "sample": True, "seed": 1, "top_p": 0.5}
        assert client.post("/api/translate", json=body).status_code == 200
        refused = client.post("/api/translate", json={"sources": ["abc"], "top_p": 0})
        assert refused.json() == {"detail": "top_p: expected a finite number > 0, got 0.0"}
        openapi = client.get("/openapi.json").json()
    assert seen == [WithTopP(sample=True, seed=1, top_p=0.5)]
    assert "top_p" in openapi["components"]["schemas"]["TranslateRequest"]["properties"]


def test_create_app_takes_only_search_options_classes() -> None:
    served = ServedModel("one", Translator(small_model(src=SRC_SPACE)))
    with pytest.raises(TypeError, match="options: expected SearchOptions or a subclass, got"):
        create_app([served], options=dict)  # type: ignore[arg-type]
