"""One default search per model (``luong.config.decoding``): a model folder decodes as its
training decoded its test split on every face (``luong translate``, ``eval``, ``po``, the
Python API, ``/api/translate``, LibreTranslate's ``/translate``) unless told otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import polib
import pytest
import tomli_w
from fastapi.testclient import TestClient
from helpers import TGT, assert_one_line_error, luong, output_lines, small_config

import luong as luong_package
from luong import Seq2Seq, Vocab
from luong.config.decoding import decoding_defaults, with_defaults
from luong.config.run import read_toml_tables
from luong.config.search import OptionError, SearchOptions
from luong.server.app import ServedModel, create_app

SOURCES = ["3 May 1979", "Tuesday, March 6, 1979", "12.10.21", "August 17, 2031"]
DEFAULTS = SearchOptions(beam=3, alpha=0.6)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder (untrained weights: outputs of many symbols, different for each
    search) whose run decoded its test split with beam 3, alpha 0.6 (its config.toml)."""
    out = tmp_path_factory.mktemp("defaults") / "dates"
    src = Vocab(sorted(set("".join(SOURCES))))
    Seq2Seq(small_config(), src, TGT, seed=3).eval().save_pretrained(out)
    assert luong("pair", str(out), "--src-lang", "en", "--tgt-lang", "de").returncode == 0
    (out / "config.toml").write_text('task = "dates"\n\n[train]\ntest_beam = 3\ntest_alpha = 0.6\n')
    return out


def test_a_folder_gives_its_training_test_search_and_greedy_without_one(
    model: Path, tmp_path: Path
) -> None:
    assert decoding_defaults(model) == DEFAULTS
    assert decoding_defaults(tmp_path) == SearchOptions()  # no config.toml
    tables = read_toml_tables(model / "config.toml")
    tables["train"]["max_decode_len"] = 40
    (tmp_path / "config.toml").write_text(tomli_w.dumps(tables))
    assert decoding_defaults(tmp_path) == SearchOptions(beam=3, alpha=0.6, max_len=40)
    tables["train"]["test_beam"] = 0
    (tmp_path / "config.toml").write_text(tomli_w.dumps(tables))
    with pytest.raises(ValueError) as error:
        decoding_defaults(tmp_path)
    assert str(error.value).startswith(f"{tmp_path / 'config.toml'}: [train] test_beam: ")


def test_a_requests_fields_win_and_sampling_takes_no_beam() -> None:
    assert with_defaults({}, DEFAULTS) == DEFAULTS
    assert with_defaults({"nbest": 2}, DEFAULTS) == SearchOptions(beam=3, alpha=0.6, nbest=2)
    assert with_defaults({"beam": 1}, DEFAULTS) == SearchOptions(beam=1, alpha=0.6)
    assert with_defaults({"sample": True, "seed": 4}, DEFAULTS) == SearchOptions(
        sample=True, seed=4
    )
    with pytest.raises(OptionError, match=r"^nbest: expected at most beam = 3, got 4$"):
        with_defaults({"nbest": 4}, DEFAULTS)
    with pytest.raises(TypeError, match=r"^defaults: expected SearchOptions, got dict$"):
        with_defaults({}, {"beam": 3})  # type: ignore[arg-type]


def scores(lines: list[str]) -> list[float]:
    return [json.loads(line)["hypotheses"][0]["score"] for line in lines]


def test_every_face_decodes_as_the_models_test_split_was(model: Path, tmp_path: Path) -> None:
    given = "\n".join(SOURCES).encode() + b"\n"
    jsonl = ("--format", "jsonl")
    # The command line: no flags is beam 3 with alpha 0.6 (scores are length-normalised)
    plain = output_lines(luong("translate", str(model), *jsonl, stdin=given))
    explicit = ["--beam", "3", "--alpha", "0.6"]
    assert plain == output_lines(luong("translate", str(model), *jsonl, *explicit, stdin=given))
    greedy = output_lines(luong("translate", str(model), *jsonl, "--beam", "1", stdin=given))
    assert scores(plain) != scores(greedy)
    texts = [json.loads(line)["hypotheses"][0]["text"] for line in plain]
    assert all(texts)
    # The Python API
    translator = luong_package.load(model)
    assert translator.search == DEFAULTS
    assert translator.translate(SOURCES) == texts
    assert translator.translate(SOURCES, SearchOptions()) == [
        json.loads(line)["hypotheses"][0]["text"] for line in greedy
    ]
    # luong eval scores what luong translate writes
    evaluated = luong("eval", str(model), "--task", "dates", "--n", "40", "--json")
    again = luong("eval", str(model), "--task", "dates", "--n", "40", "--json", *explicit)
    assert json.loads(evaluated.stdout) == json.loads(again.stdout)
    # luong po: a template of the same messages gets the same translations
    template = polib.POFile()
    template.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for source in SOURCES:
        template.append(polib.POEntry(msgid=source, msgstr=""))
    template.save(str(tmp_path / "dates.pot"))
    out = tmp_path / "de.po"
    filled = luong("po", str(model), str(tmp_path / "dates.pot"), "--out", str(out))
    assert filled.returncode == 0, filled.stderr.decode()
    assert [entry.msgstr for entry in polib.pofile(str(out))] == texts
    # /api/translate with no decoding field, LibreTranslate's /translate
    with TestClient(create_app([ServedModel("dates", translator)], max_wait_ms=0)) as client:
        answer = client.post("/api/translate", json={"sources": SOURCES}).json()
        assert [r["hypotheses"][0]["text"] for r in answer["results"]] == texts
        libre = client.post("/translate", json={"q": SOURCES, "source": "en", "target": "de"})
        assert libre.json()["translatedText"] == texts
        listed = client.get("/api/models").json()["models"][0]["decoding"]
        assert SearchOptions(**listed) == DEFAULTS


def test_sampling_and_a_derived_folder(model: Path, tmp_path: Path) -> None:
    # --sample takes none of the model's beam: no "beam 3" error, one draw a line
    drawn = luong("translate", str(model), "--sample", "--seed", "1", stdin=b"3 May 1979\n")
    assert len(output_lines(drawn)) == 1
    # a flag that does not fit the model's defaults says so before the model loads
    assert_one_line_error(
        luong("translate", str(model), "--nbest", "4", stdin=b"3 May 1979\n"),
        "--nbest: expected at most beam = 3, got 4",
    )
    # an int8 form carries its run's config.toml, and with it the decoding defaults
    int8 = tmp_path / "int8"
    assert luong("quantize", str(model), "--out", str(int8)).returncode == 0
    assert luong_package.load(int8).search == DEFAULTS
