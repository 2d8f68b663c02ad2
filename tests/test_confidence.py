"""The confidence of an output (``luong.translation.confidence``): its value against a model whose
probabilities are set by hand, and the faces that carry it: ``luong translate --format
jsonl``, ``POST /api/translate``, ``luong po`` (its comment and ``--min-confidence``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polib
import pytest
import torch
from fastapi.testclient import TestClient
from helpers import (
    SRC_SPACE,
    TINY_TGT,
    assert_one_line_error,
    luong,
    output_lines,
    small_model,
    with_pair,
)

from luong import Seq2Seq, Translator
from luong.catalogs.entries import MachineText
from luong.catalogs.fill import fill_catalog, translate_messages
from luong.common.errors import LuongError, LuongTypeError
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.config.translation_request import TranslationRequest
from luong.search import Hypothesis, decode
from luong.server.app import ServedModel, create_app
from luong.translation.confidence import confidence
from luong.translation.records import output_lines as translated_lines

# The oracle's next-token distribution, whatever the source and the output so far (ids:
# pad 0, bos 1, eos 2, unk 3, "x" 4, "y" 5): pad and bos never come.
PROBABILITIES = [0.0, 0.0, 0.5, 0.05, 0.3, 0.15]
# Beam 3, alpha 0, three outputs: </s> (0.5), x </s> (0.3 * 0.5), y </s> (0.15 * 0.5); their
# confidences are the geometric means of those token probabilities.
NBEST_TOKENS = [[2], [4, 2], [5, 2]]
NBEST_CONFIDENCE = [0.5, math.sqrt(0.3 * 0.5), math.sqrt(0.15 * 0.5)]
BEAM_3 = SearchOptions(beam=3, nbest=3)


def oracle(dtype: torch.dtype = torch.float32) -> Seq2Seq:
    """A model whose output layer ignores its input (weights 0) and whose biases are the
    logs of ``PROBABILITIES``: every step's distribution is ``PROBABILITIES``."""
    model = small_model(seed=0, src=SRC_SPACE, tgt=TINY_TGT).to(dtype)
    bias = [math.log(p) if p else -1e4 for p in PROBABILITIES]
    with torch.no_grad():
        model.decoder.out.weight.zero_()
        model.decoder.out.bias.copy_(torch.tensor(bias, dtype=dtype))
    return model


@pytest.fixture(scope="module")
def oracle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("confidence") / "oracle"
    oracle().save_pretrained(path)
    return path


def test_the_confidence_is_the_geometric_mean_of_the_models_probabilities() -> None:
    hyps = decode(oracle(torch.float64), ["abc"], BEAM_3)[0]
    assert [h.tokens for h in hyps] == NBEST_TOKENS
    for hypothesis, expected in zip(hyps, NBEST_CONFIDENCE, strict=True):
        assert confidence(hypothesis) == pytest.approx(expected, rel=1e-12)
    greedy = decode(oracle(torch.float64), ["abc"])[0][0]
    assert confidence(greedy) == pytest.approx(0.5, rel=1e-12)


def test_the_confidence_is_exp_of_the_mean_log_probability_in_float64() -> None:
    model = small_model(seed=3, src=SRC_SPACE)
    lists = decode(model, ["abc de", "j", "hij a bc"], SearchOptions(beam=4, nbest=4, max_len=9))
    for hyps in lists:
        for hypothesis in hyps:
            by_hand = float(np.exp(np.mean(np.array(hypothesis.log_probs, dtype=np.float64))))
            assert confidence(hypothesis) == pytest.approx(by_hand, rel=1e-12)
            assert 0.0 < confidence(hypothesis) <= 1.0


def hypothesis(log_probs: list[float]) -> Hypothesis:
    return Hypothesis(
        list(range(len(log_probs))), sum(log_probs), log_probs, torch.empty(len(log_probs), 0)
    )


def test_the_confidence_stays_in_zero_one() -> None:
    assert confidence(hypothesis([float("-inf"), -0.1])) == 0.0  # a token of probability 0
    assert confidence(hypothesis([1e-9, 0.0])) == 1.0  # rounding above 0 gives no more than 1
    assert math.isnan(confidence(hypothesis([float("nan"), -1.0])))
    assert confidence(hypothesis([-1.0, -3.0])) == pytest.approx(math.exp(-2.0), rel=1e-15)


def test_the_confidence_refuses_what_is_no_hypothesis() -> None:
    with pytest.raises(LuongTypeError, match="hypothesis: expected a Hypothesis, got list"):
        confidence([-0.5])  # type: ignore[arg-type]
    with pytest.raises(LuongError, match="hypothesis: expected at least one token, got none"):
        confidence(hypothesis([]))


def test_jsonl_records_carry_each_hypothesis_confidence() -> None:
    line = next(
        translated_lines(oracle(torch.float64), ["abc"], TranslationRequest(BEAM_3), format="jsonl")
    )
    records = json.loads(line)["hypotheses"]
    assert [r["confidence"] for r in records] == [round(c, 6) for c in NBEST_CONFIDENCE]
    # the text format is what it was: the outputs, tab-separated
    assert next(translated_lines(oracle(), ["abc"], TranslationRequest(BEAM_3))) == "\tx\ty"


def test_luong_translate_jsonl_writes_the_confidence(oracle_dir: Path) -> None:
    result = luong(
        "translate", str(oracle_dir), "--beam", "3", "--nbest", "3", "--format", "jsonl",
        stdin=b"abc\nj\n",
    )  # fmt: skip
    for line in output_lines(result):
        records = json.loads(line)["hypotheses"]
        assert [r["confidence"] for r in records] == [0.5, 0.387298, 0.273861]


def test_the_server_answers_with_the_confidence() -> None:
    app = create_app([ServedModel("oracle", Translator(oracle()), {})], max_wait_ms=0)
    with TestClient(app) as client:
        answer = client.post(
            "/api/translate", json={"sources": ["abc", "j"], "beam": 3, "nbest": 3}
        )
    assert answer.status_code == 200, answer.text
    for result in answer.json()["results"]:
        assert [h["confidence"] for h in result["hypotheses"]] == [0.5, 0.387298, 0.273861]


# -- luong po: the comment and --min-confidence --------------------------------------------

CATALOG = r"""msgid ""
msgstr ""
"Language: de\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

msgid "sure"
msgstr ""

msgid "unsure"
msgstr ""

msgid ""
"sure\n"
"unsure"
msgstr ""

msgctxt "count"
msgid "sure"
msgid_plural "half"
msgstr[0] ""
msgstr[1] ""

msgid "Done"
msgstr "Fertig"
"""
SURE = {"sure": 0.9, "unsure": 0.4, "half": 0.555}


def scored(texts: list[str]) -> list[MachineText]:
    return [MachineText(text.upper(), SURE[text]) for text in texts]


def entries(text: str) -> dict[tuple[str, str], polib.POEntry]:
    return {(e.msgid, e.msgid_plural): e for e in polib.pofile(text)}


def test_each_entry_filled_gets_its_lowest_line_confidence_in_a_comment() -> None:
    filled = fill_catalog(CATALOG, scored, target="de", model="m")
    by_id = entries(filled.text)
    confidences = {key: e.tcomment.splitlines()[0] for key, e in by_id.items() if e.fuzzy}
    assert confidences == {
        ("sure", ""): "luong: confidence 0.90",
        ("unsure", ""): "luong: confidence 0.40",
        ("sure\nunsure", ""): "luong: confidence 0.40",  # as sure as its weakest line
        ("sure", "half"): "luong: confidence 0.55",  # rounded down: 0.555 is not 0.56
    }
    assert all(
        e.tcomment.splitlines()[1] == "luong: machine translation by m, review it"
        for e in by_id.values()
        if e.fuzzy
    )
    assert by_id[("sure\nunsure", "")].msgstr == "SURE\nUNSURE"


def test_plain_strings_get_no_confidence_comment() -> None:
    filled = fill_catalog(CATALOG, lambda texts: list(texts), target="de", model="m")
    assert {e.tcomment for e in polib.pofile(filled.text) if e.fuzzy} == {
        "luong: machine translation by m, review it"
    }


def test_entries_below_the_minimum_confidence_stay_for_a_person() -> None:
    filled = fill_catalog(CATALOG, scored, target="de", model="m", min_confidence=0.55)
    by_id = entries(filled.text)
    assert by_id[("sure", "")].msgstr == "SURE"
    assert by_id[("sure", "half")].msgstr_plural == {0: "SURE", 1: "HALF"}
    for key in [("unsure", ""), ("sure\nunsure", "")]:
        assert (by_id[key].msgstr, by_id[key].tcomment, by_id[key].fuzzy) == ("", "", False)
    summary = filled.summary
    assert (summary.filled, summary.left_empty, summary.low_confidence) == (2, 0, 2)
    assert summary.untranslated == (
        'line 10 (msgid "unsure"): left untranslated: confidence 0.40, below the minimum 0.55',
        'line 13 (msgid "sure\\nunsure"): left untranslated: confidence 0.40, below the '
        "minimum 0.55",
    )
    assert summary.line() == (
        "filled 2 entries (1 plural, 2 plural forms); skipped 1 translated, 0 obsolete, 0 fuzzy; "
        "0 left as they were (an empty translation); 2 left untranslated (named below, 2 of "
        "them below the minimum confidence); placeholders checked: 0 of 0 format entries match"
    )
    # at the minimum: filled; 0 and 1 bound it
    assert (
        fill_catalog(CATALOG, scored, target="de", model="m", min_confidence=0.4).summary.filled
        == 4
    )
    assert (
        fill_catalog(CATALOG, scored, target="de", model="m", min_confidence=0).summary.filled == 4
    )
    assert (
        fill_catalog(CATALOG, scored, target="de", model="m", min_confidence=1).summary.filled == 0
    )


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan"), True, "0.5"])
def test_fill_catalog_refuses_a_minimum_that_is_no_confidence(value: object) -> None:
    with pytest.raises(LuongError, match=r"min_confidence: expected a number in \[0, 1\], got "):
        fill_catalog(CATALOG, scored, target="de", model="m", min_confidence=value)  # type: ignore[arg-type]


def test_a_minimum_needs_translations_that_carry_a_confidence() -> None:
    with pytest.raises(LuongError, match="min_confidence: the translations carry no confidence"):
        fill_catalog(CATALOG, lambda texts: list(texts), target="de", model="m", min_confidence=0.5)


PO_CATALOG = "".join(
    f'msgid "{text}"\nmsgstr ""\n\n' for text in ["abc", "de f", "hij", "gg a", "jj"]
)
SEARCH = SearchOptions(min_len=3)  # an untrained model's outputs are otherwise empty


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("po") / "tiny"
    with_pair(small_model(seed=4, src=SRC_SPACE)).save_pretrained(path)
    return path


def test_luong_po_writes_the_confidence_and_leaves_the_least_sure_entries(
    tiny: Path, tmp_path: Path
) -> None:
    texts = ["abc", "de f", "hij", "gg a", "jj"]
    translator = Translator(Seq2Seq.from_pretrained(tiny))
    machine = translate_messages(
        translator, texts, TranslationRequest(SEARCH, RequestOptions(placeholders="constrain"))
    )
    values = sorted(m.confidence for m in machine)
    assert len(set(values)) == 5  # the untrained model is surer of some than of others
    threshold = round((values[1] + values[2]) / 2, 6)  # two entries below it
    catalog, out = tmp_path / "t.pot", tmp_path / "t.po"
    catalog.write_text(PO_CATALOG, encoding="utf-8")
    result = luong(
        "po", str(tiny), str(catalog), "--out", str(out), "--tgt-lang", "de", "--min-len", "3",
        "--min-confidence", str(threshold),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stderr.decode().splitlines()
    assert "3 left untranslated" not in lines[0]
    assert "2 left untranslated (named below, 2 of them below the minimum confidence)" in lines[0]
    low = [
        (i, t, m)
        for i, (t, m) in enumerate(zip(texts, machine, strict=True))
        if m.confidence < threshold
    ]
    assert lines[1:] == [
        f'luong: {catalog}: line {1 + 3 * i} (msgid "{text}"): left untranslated: confidence '
        f"{math.floor(m.confidence * 100) / 100:.2f}, below the minimum {threshold:g}"
        for i, text, m in low
    ]
    by_id = {e.msgid: e for e in polib.pofile(str(out))}
    for text, m in zip(texts, machine, strict=True):
        entry = by_id[text]
        if m.confidence < threshold:
            assert (entry.msgstr, entry.tcomment) == ("", "")
        else:
            assert entry.msgstr == m.text
            assert entry.tcomment == (
                f"luong: confidence {math.floor(m.confidence * 100) / 100:.2f}\n"
                "luong: machine translation by tiny, review it"
            )


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "abc", "inf"])
def test_luong_po_refuses_a_bad_min_confidence(tiny: Path, tmp_path: Path, value: str) -> None:
    catalog, out = tmp_path / "t.pot", tmp_path / "t.po"
    catalog.write_text(PO_CATALOG, encoding="utf-8")
    result = luong(
        "po", str(tiny), str(catalog), "--out", str(out), "--tgt-lang", "de",
        "--min-confidence", value,
    )  # fmt: skip
    assert result.returncode == 2
    assert_one_line_error(
        result, f"luong: error: --min-confidence: expected a number in [0, 1], got '{value}'"
    )
    assert not out.exists()


def test_an_entry_whose_confidence_is_nan_is_left_below_any_minimum() -> None:
    def nan_for_unsure(texts: list[str]) -> list[MachineText]:
        return [MachineText(t.upper(), math.nan if t == "unsure" else 0.9) for t in texts]

    filled = fill_catalog(CATALOG, nan_for_unsure, target="de", model="m", min_confidence=0)
    assert filled.summary.untranslated[0] == (
        'line 10 (msgid "unsure"): left untranslated: confidence nan, below the minimum 0'
    )
    assert filled.summary.low_confidence == 2  # "sure\nunsure" too


def test_fuzzy_entries_below_the_minimum_keep_their_translation_and_say_so() -> None:
    catalog = CATALOG + '\n#, fuzzy\nmsgctxt "old"\nmsgid "unsure"\nmsgstr "Alt"\n'
    filled = fill_catalog(
        catalog, scored, target="de", model="m", min_confidence=0.55, retranslate_fuzzy=True
    )
    kept = [(e.msgctxt, e.msgstr, e.fuzzy) for e in polib.pofile(filled.text) if e.msgstr]
    assert ("old", "Alt", True) in kept
    summary = filled.summary
    # it said "left untranslated" of the fuzzy entry, which keeps its earlier translation
    assert summary.untranslated[-1] == (
        'line 29 (msgid "unsure"): kept its fuzzy translation: confidence 0.40, below the '
        "minimum 0.55"
    )
    assert summary.untranslated[0].startswith('line 10 (msgid "unsure"): left untranslated:')
    assert "; 2 left untranslated, 1 fuzzy kept as they were (named below, 3 of them below " in (
        summary.line()
    )
