"""Fuzzing with hypothesis: attention, masks and search over random small models and inputs.

Lengths include 0 and 1, batches of 1, scores as large as +-1e4 (and keys scaled to make
them), float32 and float64. Nothing may be NaN or infinite in outputs or gradients; weights
are non-negative and sum to 1 over real positions (0 for an empty row); search outputs are
well formed. Under CI (``CI=true``) every property runs 1,000 examples; 150 otherwise.
"""

from __future__ import annotations

import os

import torch
from helpers import TINY_SRC, TINY_TGT, small_model, source_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from luong import BahdanauAttention, LuongAttention, Vocab, length_mask
from luong.search import greedy_search

EXAMPLES = 1000 if os.environ.get("CI", "").lower() in ("1", "true", "yes") else 150
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)

SCORES = ["dot", "general", "concat", "bahdanau"]


@st.composite
def attention_case(draw: st.DrawFn) -> dict:
    return {
        "score": draw(st.sampled_from(SCORES)),
        "batch": draw(st.integers(1, 4)),
        "length": draw(st.integers(1, 7)),
        "d": draw(st.integers(1, 6)),
        "key_dim": draw(st.integers(1, 6)),
        "dtype": draw(st.sampled_from([torch.float32, torch.float64])),
        "scale": draw(st.sampled_from([1e-3, 1.0, 30.0, 100.0])),
        "seed": draw(st.integers(0, 2**16)),
        "lengths": draw(st.lists(st.integers(0, 7), min_size=4, max_size=4)),
    }


def build(case: dict) -> torch.nn.Module:
    key_dim = case["d"] if case["score"] == "dot" else case["key_dim"]
    if case["score"] == "bahdanau":
        return BahdanauAttention(case["d"], case["seed"], key_dim=key_dim).to(case["dtype"])
    return LuongAttention(case["d"], case["score"], case["seed"], key_dim=key_dim).to(case["dtype"])


@FUZZ
@given(attention_case())
def test_attention_is_finite_and_normalised_for_any_input(case: dict) -> None:
    attention = build(case)
    g = torch.Generator().manual_seed(case["seed"])
    B, S, dtype = case["batch"], case["length"], case["dtype"]
    # Query and keys scaled so that dot/general scores reach about +-1e4.
    query = (torch.randn(B, attention.d, generator=g, dtype=dtype) * case["scale"]).requires_grad_()
    keys = torch.randn(B, S, attention.key_dim, generator=g, dtype=dtype) * case["scale"]
    keys.requires_grad_()
    lengths = torch.tensor([min(n, S) for n in case["lengths"][:B]])
    mask = length_mask(lengths, S)
    context, weights = attention(query, keys, mask)
    attentional = attention.attentional(query, context)
    (context.sum() + attentional.sum() + (weights * torch.arange(S)).sum()).backward()

    for tensor in (context, weights, attentional, query.grad, keys.grad):
        assert torch.isfinite(tensor).all()
    assert (weights >= 0).all()
    assert torch.equal(weights[~mask], torch.zeros_like(weights[~mask]))
    sums = weights.sum(-1).double()
    expected = (lengths > 0).double()
    assert torch.allclose(sums, expected, atol=1e-5)
    assert torch.count_nonzero(context[lengths == 0]) == 0
    assert torch.count_nonzero(keys.grad[~mask]) == 0
    for parameter in attention.parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all()


@FUZZ
@given(
    lengths=st.lists(st.integers(0, 9), min_size=1, max_size=5),
    extra=st.integers(0, 3),
)
def test_length_mask_matches_its_definition(lengths: list[int], extra: int) -> None:
    width = max(lengths) + extra
    mask = length_mask(torch.tensor(lengths), width)
    assert mask.shape == (len(lengths), width)
    for row, n in enumerate(lengths):
        assert mask[row].tolist() == [True] * n + [False] * (width - n)


@st.composite
def model_case(draw: st.DrawFn) -> dict:
    return {
        "cell": draw(st.sampled_from(["gru", "lstm"])),
        "attention": draw(st.sampled_from(SCORES)),
        "input_feed": draw(st.booleans()),
        "bidirectional": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
        "lengths": draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)),
        "max_len": draw(st.integers(1, 6)),
    }


@FUZZ
@given(model_case())
def test_greedy_search_output_is_well_formed(case: dict) -> None:
    hidden = 4
    model = small_model(
        case["seed"],
        TINY_SRC,
        TINY_TGT,
        cell=case["cell"],
        emb_dim=3,
        enc_hidden=hidden,
        bidirectional=case["bidirectional"],
        dec_hidden=hidden * (2 if case["bidirectional"] else 1),
        attention=case["attention"],
        input_feed=case["input_feed"],
    )
    src, lengths = source_batch(case["lengths"], case["seed"], vocab=TINY_SRC)
    hyps = greedy_search(model, src, lengths, case["max_len"])
    assert len(hyps) == len(lengths)
    for hyp, n in zip(hyps, lengths.tolist(), strict=True):
        assert 1 <= len(hyp.tokens) <= case["max_len"]
        assert Vocab.eos_id not in hyp.tokens[:-1]
        assert all(0 <= t < len(model.tgt_vocab) for t in hyp.tokens)
        assert len(hyp.log_probs) == len(hyp.tokens)
        assert all(lp <= 0.0 and lp == lp for lp in hyp.log_probs)
        assert abs(hyp.score - sum(hyp.log_probs)) < 1e-9
        assert hyp.attention.shape == (len(hyp.tokens), n)
        assert torch.isfinite(hyp.attention).all()
        assert torch.allclose(hyp.attention.sum(-1), torch.ones(len(hyp.tokens)), atol=1e-5)
