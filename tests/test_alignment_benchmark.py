"""benchmarks/alignment.py: its AER against golden numbers, its diagonal floor, and its
force-decoding (the reference's tokens teacher-forced, a row of attention for each). eflomal,
which the benchmark runs, is not needed here (it is imported only when it aligns)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from helpers import SRC_SPACE, small_model

from luong.config.search import SearchOptions
from luong.data.vocab import Vocab
from luong.search import decode
from luong.translation.alignment import hypothesis_alignment

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "alignment.py"
TGT_SPACE = Vocab(list("0123456789- "))


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("alignment_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load()


def test_aer_of_equal_disjoint_and_hand_made_links() -> None:
    s = [{(0, 0), (1, 1)}, {(0, 0)}]
    same = bench.agreement(s, s)
    assert (same.aer, same.precision, same.recall, same.links, same.sentences) == (0, 1, 1, 3, 2)
    disjoint = bench.agreement([{(1, 0)}, {(0, 1)}], s)
    assert (disjoint.aer, disjoint.precision, disjoint.recall) == (1, 0, 0)
    # A = {0-0, 2-1, 1-2}, S = {0-0}, P = {0-0, 1-1, 1-2}: |A&S| = 1, |A&P| = 2,
    # AER = 1 - (1 + 2) / (3 + 1) = 0.25, precision 2/3, recall 1.
    hand = bench.agreement([{(0, 0), (2, 1), (1, 2)}], [{(0, 0)}], [{(0, 0), (1, 1), (1, 2)}])
    assert (hand.aer, hand.precision, hand.recall) == (0.25, 2 / 3, 1.0)
    # One reference set: AER = 1 - F1. Here P = R = 1/2 over the corpus.
    half = bench.agreement([{(0, 0), (1, 0)}, set()], [{(0, 0)}, {(1, 1)}])
    assert (half.aer, half.precision, half.recall) == (0.5, 0.5, 0.5)


def test_aer_refuses_what_it_cannot_score() -> None:
    with pytest.raises(ValueError, match="got 1, 2 and 2"):
        bench.agreement([set()], [set(), set()])
    with pytest.raises(ValueError, match=r"sentence 0: .* got \[\(0, 0\)\] sure only"):
        bench.agreement([{(0, 0)}], [{(0, 0)}], [{(1, 1)}])
    with pytest.raises(ValueError, match="got 0 predicted and 1 sure"):
        bench.agreement([set()], [{(0, 0)}])


def test_the_diagonal_floor() -> None:
    assert bench.diagonal_links(3, 3) == {(0, 0), (1, 1), (2, 2)}
    assert bench.diagonal_links(4, 2) == {(0, 0), (2, 1)}
    # 1 source word: round(2 * 1 / 3) = 1 is past the end, so the last word.
    assert bench.diagonal_links(1, 3) == {(0, 0), (0, 1), (0, 2)}
    assert bench.diagonal_links(0, 3) == set()


@pytest.mark.parametrize("local", ["none", "monotonic", "predictive"])
def test_force_decoding_attends_the_reference_tokens_as_the_search_forces_them(local: str) -> None:
    # Global attention teacher-forces through the fused recurrence, local attention step by
    # step; the search forces its prefix step by step, one sentence at a time.
    model = small_model(src=SRC_SPACE, tgt=TGT_SPACE, local=local, window=2)
    pairs = [("ab cd", "12 3"), ("abc  de fghij", "4 56-7 8 9"), ("j", "0"), ("a b", "")]
    hyps = bench.force_decode(model, pairs, batch_size=2)  # padded batches, reordered
    for (source, target), hyp in zip(pairs, hyps, strict=True):
        tokens = model.tgt_vocab.encode(target, eos=True)
        assert hyp.tokens == tokens  # the reference's ids and EOS: a row for each
        assert hyp.attention.shape == (len(tokens), len(model.src_vocab.encode(source)))
        sums = hyp.attention.sum(1)
        if local == "predictive":  # eq. 10: a Gaussian around p_t scales the weights
            assert bool(((sums > 0) & (sums <= 1)).all())
        else:
            torch.testing.assert_close(sums, torch.ones(len(tokens)))
        assert hyp.score == pytest.approx(sum(hyp.log_probs))
        # The search's forced prefix gives the same rows for the reference's tokens and
        # the same log-probabilities.
        (searched,) = decode(model, [source], SearchOptions(prefix=target, max_len=40))[0:1]
        forced = len(tokens) - 1
        assert searched[0].tokens[:forced] == tokens[:forced]
        torch.testing.assert_close(searched[0].attention[:forced], hyp.attention[:forced])
        assert searched[0].log_probs[:forced] == pytest.approx(hyp.log_probs[:forced], abs=1e-5)
        links = hypothesis_alignment(hyp, source, model.src_vocab, model.tgt_vocab)
        assert sorted(j for _, j in links) == list(range(len(target.split())))
    links, changed = bench.model_links(model, pairs, batch_size=3)
    assert changed == [] and [len(s) for s in links] == [2, 4, 1, 0]
