"""``luong.translation.translator``: strings in, strings out, as ``SearchOptions`` say; the lines
``luong translate`` writes (``luong.translation.records``); the policy for sources too long;
JSON records of hypotheses."""

from __future__ import annotations

import json
import math

import pytest
import torch
from helpers import SRC_SPACE, small_model

from luong import Translator, Vocab
from luong.config.search import SearchOptions
from luong.config.translation_request import TranslationRequest
from luong.search import Hypothesis, decode, hypothesis_text
from luong.translation.admission import fit_sources
from luong.translation.records import hypothesis_record, output_lines
from luong.translation.translator import translate, translate_nbest

TEXTS = ["abc de", "", "hij a", "   ", "j"]


def test_translate_is_the_best_of_translate_nbest_and_of_decode() -> None:
    model = small_model(2, SRC_SPACE)
    options = SearchOptions(beam=4, nbest=3, alpha=0.6)
    lists = translate_nbest(model, TEXTS, options)
    assert [len(outs) for outs in lists] == [3, 0, 3, 0, 3]
    assert translate(model, TEXTS, options) == [outs[0] if outs else "" for outs in lists]
    decoded = decode(model, TEXTS, options)
    assert lists == [[hypothesis_text(model, h) for h in hyps] for hyps in decoded]
    translator = Translator(model)
    assert translator.translate(TEXTS, options) == translate(model, TEXTS, options)
    assert translator.translate_nbest(TEXTS, options) == lists
    assert translate(model, TEXTS) == translate(model, TEXTS, SearchOptions())  # greedy


def test_replace_unk_is_a_search_option() -> None:
    src = Vocab(["das", "ist", "gut"], tokens="space")
    tgt = Vocab(["this", "is"], tokens="space")
    model = small_model(0, src, tgt, attention="dot")
    with torch.no_grad():
        model.decoder.out.bias[Vocab.unk_id] += 20.0  # unknowns, then EOS at the limit
    kept = translate(model, ["das ist Kafka"], SearchOptions(max_len=3))
    replaced = translate(model, ["das ist Kafka"], SearchOptions(max_len=3, replace_unk=True))
    assert kept == ["<unk> <unk> <unk>"]
    words = replaced[0].split()
    assert len(words) == 3 and set(words) <= {"das", "ist", "Kafka"}


def test_output_lines_text_and_jsonl() -> None:
    model = small_model(3, SRC_SPACE)
    options = SearchOptions(beam=3, nbest=2)
    request = TranslationRequest(options)
    text = list(output_lines(model, TEXTS, request))
    assert text == ["\t".join(outs) for outs in translate_nbest(model, TEXTS, options)]
    records = [json.loads(line) for line in output_lines(model, TEXTS, request, format="jsonl")]
    assert [r["source"] for r in records] == TEXTS
    for record, hyps in zip(records, decode(model, TEXTS, options), strict=True):
        assert [h["text"] for h in record["hypotheses"]] == [
            hypothesis_text(model, h) for h in hyps
        ]
        for got, hyp in zip(record["hypotheses"], hyps, strict=True):
            assert got["score"] == round(hyp.score, 6)
            assert len(got["attention"]) == len(hyp.tokens) == len(got["tokens"])
    windowed = list(output_lines(model, TEXTS, TranslationRequest(options, batch_size=1, window=2)))
    assert windowed == text  # windows change the batches, never the lines or their order
    with pytest.raises(ValueError, match="format: expected one of text, jsonl, got 'xml'"):
        output_lines(model, TEXTS, request, format="xml")
    expected = "request: expected a TranslationRequest, got SearchOptions"
    with pytest.raises(TypeError, match=expected):
        output_lines(model, TEXTS, options)  # type: ignore[arg-type]


def test_hypothesis_record_writes_null_for_what_is_not_finite() -> None:
    model = small_model(1, SRC_SPACE)
    attention = torch.tensor([[0.25, float("nan"), 0.75], [0.0, 0.0, 1.0]])
    hyp = Hypothesis([5, Vocab.eos_id], -math.inf, [-math.inf, -0.5], attention)
    record = hypothesis_record(model, hyp, "ab")
    assert record["score"] is None
    assert record["attention"] == [[0.25, None, 0.75], [0.0, 0.0, 1.0]]
    assert record["tokens"][-1] == "</s>"
    json.dumps(record, allow_nan=False)  # JSON that every parser reads


def test_fit_sources_checks_and_truncates_and_counts_unknowns() -> None:
    model = small_model(0, SRC_SPACE, max_src_len=4)
    fitted = fit_sources(model, ["abc", "abcdefg", "xyz a"], truncate=True)
    assert fitted.sources == ["abc", "abcd", "xyz "]  # cut to 4 symbols
    assert (fitted.limit, fitted.truncated) == (4, [1, 2])
    assert (fitted.unknown_symbols, fitted.lines_with_unknown) == (3, 1)
    with pytest.raises(ValueError, match=r"^in.txt:2: 7 symbols, above the maximum source"):
        fit_sources(model, ["abc", "abcdefg"], name="in.txt")
    assert fit_sources(model, ["abcdefg"], max_src_len=8).truncated == []
    with pytest.raises(ValueError, match="max_src_len: expected an int >= 1, got 0"):
        fit_sources(model, ["abc"], max_src_len=0)


def test_a_translator_takes_a_model_or_an_ensemble_only() -> None:
    with pytest.raises(TypeError, match="model: expected a Seq2Seq or an Ensemble, got str"):
        Translator("runs/dates")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="directory: expected a model folder or a list of them"):
        Translator.from_pretrained(3)  # type: ignore[arg-type]
