"""The step rules (``luong.search.rules``): ``ban_repeats`` on hand-made outputs, and
``no_repeat_ngram`` through every search loop (beam, constrained, sampling, with a prefix and
a shortlist) and every face it reaches without code of its own: the ``luong translate``
flag, the HTTP API's schema (which the explorer builds its controls from), and the refusal
of the exported ONNX runtime. The beam loop's outputs with the rule are checked against a
reference from the definition in test_search_reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, TINY_DATES_FLAGS, luong, small_model

from luong.config.search import OptionError, SearchOptions
from luong.data.shortlist import Shortlist
from luong.data.vocab import Vocab
from luong.search import decode
from luong.search.rules import StepRules, ban_repeats
from luong.server.app import ServedModel, create_app
from luong.translation.records import hypothesis_record
from luong.translation.translator import Translator

TEXTS = ["abc de", "j", "hij a bc", "ff gg hh ii", "gif", "a b c d e", "jjj", "aaaa bbbb"]
INF = float("-inf")


def repeated_ngrams(tokens: list[int], n: int) -> list[tuple[int, ...]]:
    """The n-grams that occur more than once in ``tokens`` (EOS not counted)."""
    body = [t for t in tokens if t != Vocab.eos_id]
    grams = [tuple(body[i : i + n]) for i in range(len(body) - n + 1)]
    return sorted({g for g in grams if grams.count(g) > 1})


def repeater(seed: int = 3) -> torch.nn.Module:
    """A float64 model that repeats itself: without the rule, some outputs hold an n-gram
    twice (test_the_model_repeats_without_the_rule)."""
    model = small_model(seed, SRC_SPACE).double()
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(2.0)
        model.decoder.out.bias[Vocab.eos_id] -= 4.0  # long outputs
    return model.eval()


def test_ban_repeats_forbids_the_ends_of_held_ngrams() -> None:
    outputs = torch.tensor([[1, 2, 3, 1, 2], [4, 4, 4, 4, 5]])
    for n, banned in [
        (3, [[3], []]),  # (1, 2) was followed by 3; (4, 5) never came before
        (2, [[3], []]),  # 2 was followed by 3; 5 never came before
        (1, [[1, 2, 3], [4, 5]]),  # every token written
        (5, [[], []]),  # (2, 3, 1, 2) never came before
        (6, [[], []]),  # no whole 6-gram yet
    ]:
        log_probs = torch.zeros(2, 7)
        ban_repeats(log_probs, outputs, n)
        assert [torch.isinf(row).nonzero().flatten().tolist() for row in log_probs] == banned, n


def test_ban_repeats_counts_every_occurrence() -> None:
    """A context held twice, followed by two different tokens: both are forbidden (a
    scatter that kept only one write per column would lose one)."""
    log_probs = torch.zeros(1, 8)
    ban_repeats(log_probs, torch.tensor([[1, 5, 1, 6, 1]]), 2)
    assert torch.isinf(log_probs[0]).nonzero().flatten().tolist() == [5, 6]


def test_step_rules_forbid_eos_before_the_minimum_and_follow_their_sentences() -> None:
    rules = StepRules.start(SearchOptions(beam=2, min_len=3), torch.tensor([10, 2]))
    assert rules.min_lens.tolist() == [3, 1]  # the limit minus one at most
    log_probs = torch.zeros(2, 5)
    rules.apply(log_probs, 1, torch.tensor([0, 1]))
    assert log_probs[:, Vocab.eos_id].tolist() == [INF, 0.0]
    kept = rules.select(torch.tensor([1]))
    assert kept.min_lens.tolist() == [1] and not kept.reads_outputs
    assert StepRules.start(SearchOptions(no_repeat_ngram=2), torch.tensor([4])).reads_outputs


def test_the_model_repeats_without_the_rule() -> None:
    """The checks below are not met trivially: plain beam search repeats bigrams here."""
    lists = decode(repeater(), TEXTS, SearchOptions(beam=3))
    assert any(repeated_ngrams(hyps[0].tokens, 2) for hyps in lists)


@pytest.mark.parametrize(
    "options",
    [
        SearchOptions(no_repeat_ngram=2),  # greedy's options, through the beam loop
        SearchOptions(beam=3, nbest=3, no_repeat_ngram=2),
        SearchOptions(beam=4, alpha=0.6, beta=0.2, no_repeat_ngram=1),
        SearchOptions(beam=3, prefix="7-", no_repeat_ngram=2),
        SearchOptions(sample=True, nbest=3, seed=5, no_repeat_ngram=2),
        SearchOptions(sample=True, nbest=2, seed=5, prefix="1", no_repeat_ngram=1),
    ],
    ids=["greedy", "beam-nbest", "penalties-unigram", "prefix", "sample", "sample-prefix"],
)
def test_no_output_holds_an_ngram_twice(options: SearchOptions) -> None:
    n = options.no_repeat_ngram
    model = repeater()
    prefix = model.tgt_vocab.encode(options.prefix, eos=False)
    lists = decode(model, TEXTS, options, batch_size=3)
    assert len(lists) == len(TEXTS)
    for text, hyps in zip(TEXTS, lists, strict=True):
        assert hyps, text
        for hyp in hyps:
            assert repeated_ngrams(hyp.tokens, n) == [], (text, hyp.tokens)
            assert hyp.tokens[: len(prefix)] == prefix


def test_the_rule_changes_outputs_only_where_they_repeat() -> None:
    """An n beyond every output's length bans nothing: the outputs are the plain search's,
    bit for bit; n = 2 changes exactly the outputs that held a bigram twice."""
    model = repeater()
    plain = decode(model, TEXTS, SearchOptions(beam=3))
    far = decode(model, TEXTS, SearchOptions(beam=3, no_repeat_ngram=100))
    assert [[(h.tokens, h.score) for h in hyps] for hyps in far] == [
        [(h.tokens, h.score) for h in hyps] for hyps in plain
    ]
    ruled = decode(model, TEXTS, SearchOptions(beam=3, no_repeat_ngram=2))
    for before, after in zip(plain, ruled, strict=True):
        if repeated_ngrams(before[0].tokens, 2):
            assert after[0].tokens != before[0].tokens
            assert after[0].score <= before[0].score  # a smaller space of outputs
        else:
            assert after[0].tokens == before[0].tokens


def test_constrained_search_keeps_its_phrases_and_the_rule() -> None:
    model = repeater()
    (piece,) = model.tgt_vocab.encode("7", eos=False)
    options = SearchOptions(beam=4, no_repeat_ngram=2)
    lists = decode(model, TEXTS[:4], options, constraints=[["7"]] * 4)
    for hyps in lists:
        tokens = hyps[0].tokens
        assert piece in tokens
        assert repeated_ngrams(tokens, 2) == []


def test_a_shortlists_search_follows_the_rule_in_its_columns() -> None:
    """With a shortlist the loop's tokens are columns; the rule bans columns, and the
    outputs (target ids) hold no repeated bigram."""
    model = repeater()
    size = len(model.tgt_vocab)
    g = torch.Generator().manual_seed(1)
    targets = torch.randint(4, size, (len(model.src_vocab), 3), generator=g)
    model.shortlist = Shortlist(targets, torch.tensor([4, 5]), size)
    plain = decode(model, TEXTS, SearchOptions(beam=3, shortlist=2))
    ruled = decode(model, TEXTS, SearchOptions(beam=3, shortlist=2, no_repeat_ngram=2))
    assert any(repeated_ngrams(hyps[0].tokens, 2) for hyps in plain)
    for hyps in ruled:
        assert repeated_ngrams(hyps[0].tokens, 2) == []


def test_the_options_check_the_rule_and_the_runtime_refuses_it() -> None:
    with pytest.raises(OptionError, match=r"no_repeat_ngram: expected at most 100, got 101"):
        SearchOptions(no_repeat_ngram=101)
    with pytest.raises(OptionError, match=r"no_repeat_ngram: expected an int >= 0, got -1"):
        SearchOptions(no_repeat_ngram=-1)
    assert not SearchOptions(no_repeat_ngram=3).greedy
    exported = SearchOptions(beam=3, alpha=0.6, min_len=2).for_runtime()
    assert exported == {
        "beam": 3, "nbest": 1, "alpha": 0.6, "beta": 0.0, "min_len": 2, "max_len": None,
        "shortlist": None,
    }  # fmt: skip
    for options, name in [
        (SearchOptions(no_repeat_ngram=3), "no_repeat_ngram"),
        (SearchOptions(sample=True), "sample"),
        (SearchOptions(prefix="x"), "prefix"),
    ]:
        with pytest.raises(OptionError, match=rf"^{name}: the exported ONNX runtime does not"):
            options.for_runtime()


def test_the_runtimes_options_are_the_exported_fields() -> None:
    """The metadata says which fields the runtime has: exactly its SearchOptions' fields."""
    import dataclasses

    from luong.export import runtime

    names = {f.name for f in dataclasses.fields(runtime.SearchOptions)}
    assert names == set(SearchOptions().for_runtime())
    runtime.SearchOptions(**SearchOptions(beam=2, nbest=2).for_runtime())


def test_the_http_api_takes_the_rule_from_its_schema() -> None:
    model = repeater().float()
    served = ServedModel("one", Translator(model), {})
    with TestClient(create_app([served], max_wait_ms=0)) as client:
        schema = client.get("/openapi.json").json()
        field = schema["components"]["schemas"]["TranslateRequest"]["properties"]
        assert field["no_repeat_ngram"]["maximum"] == 100  # the explorer's control reads it
        body = {"sources": TEXTS, "beam": 3, "no_repeat_ngram": 2}
        answer = client.post("/api/translate", json=body)
        assert answer.status_code == 200, answer.text
        got = [r["hypotheses"][0] for r in answer.json()["results"]]
        refused = client.post("/api/translate", json={**body, "no_repeat_ngram": 0.5})
        assert refused.status_code == 422
    offline = decode(model, TEXTS, SearchOptions(beam=3, no_repeat_ngram=2))
    pairs = zip(TEXTS, offline, strict=True)
    expected = [hypothesis_record(model, hyps[0], text) for text, hyps in pairs]
    for record in expected:
        del record["attention"]
    assert got == expected


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rules") / "dates"
    result = luong("train", "dates", "--out", str(out), *TINY_DATES_FLAGS)
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_translate_takes_no_repeat_ngram(model_dir: Path) -> None:
    lines = "3 May 1979\n12.10.21\n\nMonday, March 5, 1979\n"
    result = luong(
        "translate", str(model_dir), "--beam", "3", "--no-repeat-ngram", "1", "--format", "jsonl",
        stdin=lines.encode(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    entries = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(entries) == 4  # N lines in, N lines out
    for entry in entries:
        for hyp in entry["hypotheses"]:
            body = [t for t in hyp["tokens"] if t != "</s>"]
            assert len(body) == len(set(body)), body  # n = 1: no symbol twice
    bad = luong("translate", str(model_dir), "--no-repeat-ngram", "-2", stdin=b"x\n")
    assert bad.returncode != 0
    assert "no-repeat-ngram" in bad.stderr.decode() and "Traceback" not in bad.stderr.decode()
