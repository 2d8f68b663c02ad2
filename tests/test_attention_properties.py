"""Property tests of ``luong.model.attention`` over random shapes and lengths (hypothesis).

For any batch B, source length S, query width d, key width K and lengths in [0, S], every
score reads a distribution over the real positions only: weights are non-negative, padded ones
exactly 0, each row sums to 1 (to 0 when the row has no real position), the context is a mix of
real keys, and nothing is NaN in forward or backward.

``scripts/mutation.py`` sets LUONG_MUTATION=1: it runs these once per mutant, so it asks for
fewer examples, drawn the same way every time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from luong.model.attention import BahdanauAttention, LuongAttention, length_mask

MUTATION_RUN = os.environ.get("LUONG_MUTATION") == "1"
PROPERTY_SETTINGS = settings(
    max_examples=12 if MUTATION_RUN else 80, deadline=None, derandomize=MUTATION_RUN
)


@dataclass
class Problem:
    kind: str
    d: int
    key_dim: int
    lengths: list[int]
    src_len: int
    seed: int


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    kind = draw(st.sampled_from(["dot", "general", "concat", "bahdanau"]))
    d = draw(st.integers(1, 5))
    key_dim = d if kind == "dot" else draw(st.integers(1, 5))
    src_len = draw(st.integers(1, 6))
    lengths = draw(st.lists(st.integers(0, src_len), min_size=1, max_size=4))
    return Problem(kind, d, key_dim, lengths, src_len, draw(st.integers(0, 2**31 - 1)))


def build(problem: Problem, scale: float = 1.0):
    """The module (float64) and its inputs: query [B, d], keys [B, S, K], mask [B, S]."""
    if problem.kind == "bahdanau":
        att = BahdanauAttention(problem.d, problem.seed, key_dim=problem.key_dim)
    else:
        att = LuongAttention(problem.d, problem.kind, problem.seed, key_dim=problem.key_dim)
    g = torch.Generator().manual_seed(problem.seed)
    batch = len(problem.lengths)
    query = scale * torch.randn(batch, problem.d, generator=g, dtype=torch.float64)
    keys = scale * torch.randn(
        batch, problem.src_len, problem.key_dim, generator=g, dtype=torch.float64
    )
    mask = length_mask(torch.tensor(problem.lengths), problem.src_len)
    return att.double(), query.requires_grad_(True), keys.requires_grad_(True), mask


@PROPERTY_SETTINGS
@given(problems(), st.sampled_from([1.0, 30.0]))
def test_weights_are_a_distribution_over_real_positions(problem: Problem, scale: float) -> None:
    att, query, keys, mask = build(problem, scale)
    context, weights = att(query, keys, mask)
    attentional = att.attentional(query, context)

    assert weights.shape == mask.shape and context.shape == (len(problem.lengths), problem.key_dim)
    assert (weights >= 0).all()
    assert (weights[~mask] == 0).all()
    has_real = torch.tensor([n > 0 for n in problem.lengths])
    expected_sums = has_real.to(torch.float64)
    torch.testing.assert_close(weights.sum(-1), expected_sums, rtol=0, atol=1e-12)
    assert (context[~has_real] == 0).all()
    for out in (context, weights, attentional):
        assert not out.isnan().any()
    assert attentional.abs().max() <= 1.0

    (context.sum() + weights.square().sum() + attentional.sum()).backward()
    grads = [query.grad, keys.grad] + [p.grad for p in att.parameters()]
    for grad in grads:
        assert grad is not None and torch.isfinite(grad).all()
    assert (keys.grad[~mask] == 0).all()


@PROPERTY_SETTINGS
@given(problems())
def test_padding_is_never_read(problem: Problem) -> None:
    att, query, keys, mask = build(problem)
    context, weights = att(query, keys, mask)
    noisy = keys.detach().clone()
    noise = torch.randn(noisy.shape, generator=torch.Generator().manual_seed(problem.seed))
    noisy[~mask] = 1e3 * noise.to(torch.float64)[~mask]
    noisy_context, noisy_weights = att(query, noisy, mask)
    assert torch.equal(noisy_weights, weights)
    assert torch.equal(noisy_context, context)


@PROPERTY_SETTINGS
@given(problems())
def test_each_row_is_attended_on_its_own(problem: Problem) -> None:
    att, query, keys, mask = build(problem)
    context, weights = att(query, keys, mask, att.project_keys(keys))
    for b in range(len(problem.lengths)):
        row_context, row_weights = att(query[b : b + 1], keys[b : b + 1], mask[b : b + 1])
        torch.testing.assert_close(row_weights[0], weights[b], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(row_context[0], context[b], rtol=1e-12, atol=1e-12)
