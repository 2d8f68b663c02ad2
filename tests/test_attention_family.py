"""Tests of Luong's whole attention family (Luong et al. 2015, sections 3.1 and 3.2): the
location and scaled dot scores, local-m and local-p attention, and the model built with each.

Oracles: global attention with the same weights (local-m with a window covering the sentence
must equal it); the equations written here in numpy float64 from the module's own weights
(location's softmax(W_a h_t), local-p's p_t = S * sigmoid(v_p . tanh(W_p h_t)) and its
Gaussian, eq. 8-10); a hand example; central differences (gradcheck); the decoder stepped by
hand through the public ``forward`` with the target position passed explicitly.

Shapes: B batch, S source length, T target steps, d query width, K key width, D window.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SRC, TGT, small_batch, small_model, source_batch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

import luong
from luong.cli import build_parser
from luong.config.choices import ATTENTIONS, LOCALS
from luong.config.model import Seq2SeqConfig
from luong.config.search import SearchOptions
from luong.data.batching import ParallelData
from luong.model.attention import (
    GLOBAL_SCORES,
    LOCAL_MODES,
    LOCAL_SCORES,
    LuongAttention,
    length_mask,
    masked_softmax,
)
from luong.model.local_attention import LocalAttention
from luong.model.seq2seq import Seq2Seq
from luong.training.objective import loss_of
from luong.translation.translator import translate

D = 3  # query width of the module tests
# scripts/mutation.py runs these once per mutant: fewer property examples, drawn the same way.
MUTATION_RUN = os.environ.get("LUONG_MUTATION") == "1"


def inputs(
    d: int, key_dim: int, lengths: tuple[int, ...] = (5, 3, 0), seed: int = 0, src_len: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """float64 query [B, d], keys [B, S, K] and mask [B, S]: by default a full, a padded and
    an empty row."""
    g = torch.Generator().manual_seed(seed)
    batch, src_len = len(lengths), max(src_len, *lengths)
    query = 1.5 * torch.randn(batch, d, generator=g, dtype=torch.float64)
    keys = 1.5 * torch.randn(batch, src_len, key_dim, generator=g, dtype=torch.float64)
    return query, keys, length_mask(torch.tensor(lengths), src_len)


def numpy_params(att: nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().double().numpy().copy() for k, v in att.state_dict().items()}


def softmax_over(e: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Softmax of the scores ``e`` [S] over the allowed positions; zeros elsewhere."""
    out = np.zeros_like(e)
    if allowed.any():
        x = np.exp(e[allowed] - e[allowed].max())
        out[allowed] = x / x.sum()
    return out


# --- scaled dot ----------------------------------------------------------------------------------


def test_scaled_dot_is_dot_over_sqrt_d() -> None:
    d = 4
    dot = LuongAttention(d, "dot", rng=0).double()
    scaled = LuongAttention(d, "scaled_dot", rng=0).double()
    assert scaled.score == "scaled_dot" and dot.score == "dot"
    query, keys, mask = inputs(d, d, seed=1)
    expected = dot.scores(query, keys) / math.sqrt(d)
    torch.testing.assert_close(scaled.scores(query, keys), expected, atol=1e-12, rtol=0)
    _, weights = scaled(query, keys, mask)
    torch.testing.assert_close(weights, masked_softmax(expected, mask), atol=1e-12, rtol=0)
    # The same weights (W_c only) under the same names as dot: checkpoints are interchangeable.
    assert [(n, tuple(p.shape)) for n, p in scaled.state_dict().items()] == [
        ("combine.weight", (d, 2 * d))
    ]
    assert torch.equal(scaled.combine.weight, dot.combine.weight)
    # Plain dot stays unscaled.
    torch.testing.assert_close(
        dot.scores(query, keys), torch.einsum("bd,bsd->bs", query, keys), atol=1e-12, rtol=0
    )


def test_scaled_dot_needs_keys_as_wide_as_the_query() -> None:
    with pytest.raises(ValueError, match="the scaled_dot score needs key_dim == d = 4, got 3"):
        LuongAttention(4, "scaled_dot", key_dim=3)


# --- location ------------------------------------------------------------------------------------


def location_oracle(params: dict[str, np.ndarray], h: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """a_t = softmax(W_a h_t) (eq. 8, location) over the first S rows, real positions only."""
    e = h @ params["score_proj.weight"][: mask.shape[1]].T  # [B, S]
    return np.stack([softmax_over(e[b], mask[b]) for b in range(e.shape[0])])


def test_location_weights_against_the_oracle() -> None:
    att = LuongAttention(D, "location", rng=3, key_dim=5, max_len=7).double()
    assert [(n, tuple(p.shape)) for n, p in att.state_dict().items()] == [
        ("score_proj.weight", (7, D)),
        ("combine.weight", (D, 5 + D)),
    ]
    query, keys, mask = inputs(D, 5, lengths=(5, 3, 0), seed=2)
    context, weights = att(query, keys, mask)
    expected = location_oracle(numpy_params(att), query.numpy(), mask.numpy())
    np.testing.assert_allclose(weights.detach().numpy(), expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(
        context.detach().numpy(), np.einsum("bs,bsk->bk", expected, keys.numpy()), atol=1e-12
    )


def test_location_masked_positions_are_exactly_zero_and_rows_sum_to_one() -> None:
    att = LuongAttention(D, "location", rng=4, max_len=6).double()
    query, keys, mask = inputs(D, D, lengths=(6, 2, 0), seed=5)
    query.requires_grad_(True)
    keys.requires_grad_(True)
    context, weights = att(query, keys, mask)
    assert (weights[~mask] == 0).all()
    assert (weights[mask] > 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.tensor([1.0, 1.0, 0.0]).double())
    assert torch.equal(context[2], torch.zeros(D, dtype=torch.float64))  # reads nothing
    (context.sum() + att.attentional(query, context).sum()).backward()
    assert torch.isfinite(query.grad).all() and torch.isfinite(keys.grad).all()
    assert (keys.grad[~mask] == 0).all()
    # The score reads no key: other keys change the context, never the weights.
    _, again = att(query, 5.0 * keys.detach(), mask)
    assert torch.equal(again, weights)


def test_location_project_keys_is_empty_and_checked() -> None:
    att = LuongAttention(D, "location", max_len=6)
    _, keys, mask = inputs(D, D, seed=0)
    proj = att.project_keys(keys.float())
    assert proj.shape == (3, 5, 0) and att.proj_dim == 0
    with pytest.raises(ValueError, match=r"proj: expected shape \[B, S, 0\] = \(3, 5, 0\)"):
        att.scores(torch.zeros(3, D), keys.float(), keys.float()[..., :D])


def test_location_longer_source_raises() -> None:
    att = LuongAttention(D, "location", max_len=4)
    query, keys, mask = torch.zeros(2, D), torch.zeros(2, 5, D), torch.ones(2, 5, dtype=torch.bool)
    message = "keys: the location score reads at most max_len = 4 source positions, got S = 5"
    for call in (
        lambda: att(query, keys, mask),
        lambda: att.scores(query, keys),
        lambda: att.project_keys(keys),
        lambda: att.project_keys_unchecked(keys),  # the decoder's path
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message
    att(query, keys[:, :4], mask[:, :4])  # S = max_len is fine
    # In a model: max_src_len symbols and the EOS fit (S = 5), one more does not.
    model = small_model(attention="location", max_src_len=4).double()
    with pytest.raises(ValueError, match="at most max_len = 5 source positions, got S = 6"):
        model.encode(torch.full((1, 6), 4), torch.tensor([6]))
    model.encode(torch.full((1, 5), 4), torch.tensor([5]))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: LuongAttention(3, "location"),
            "max_len: the location score needs the maximum source length, got None",
        ),
        (lambda: LuongAttention(3, "location", max_len=0), "max_len: expected an int >= 1"),
        (
            lambda: LuongAttention(3, "general", max_len=8),
            "max_len: only the location score takes a maximum source length, got max_len=8 "
            "with the general score",
        ),
    ],
)
def test_location_validation(build, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


# --- local-m -------------------------------------------------------------------------------------


def local(score: str, mode: str, window: int, rng: int = 0, key_dim: int | None = None, **kw):
    return LocalAttention(D, score, mode, window, rng, key_dim=key_dim, **kw).double()  # type: ignore[arg-type]


@pytest.mark.parametrize("score", LOCAL_SCORES)
def test_local_m_with_a_window_covering_the_sentence_is_global(score: str) -> None:
    key_dim = D if score in ("dot", "scaled_dot") else 5
    query, keys, mask = inputs(D, key_dim, seed=6)
    glob = LuongAttention(D, score, 7, key_dim=key_dim).double()  # type: ignore[arg-type]
    for window in (5, 9):  # D >= S
        att = local(score, "monotonic", window, rng=7, key_dim=key_dim)
        assert list(att.state_dict()) == list(glob.state_dict())  # same names: loadable
        att.load_state_dict(glob.state_dict())
        for t in (0, 2, 4):
            for got, expected in zip(
                att(query, keys, mask, step=t), glob(query, keys, mask), strict=True
            ):
                torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)


def test_local_m_hand_example() -> None:
    """S = 5, D = 1, t = 2: the window is positions 1..3; zeros elsewhere, the softmax inside."""
    att = local("dot", "monotonic", 1)
    query = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    keys = torch.tensor([[[s, 0.0, 0.0] for s in (4.0, 0.0, 1.0, 2.0, 9.0)]], dtype=torch.float64)
    mask = torch.ones(1, 5, dtype=torch.bool)
    context, weights = att(query, keys, mask, step=2)
    e = np.exp([0.0, 1.0, 2.0])
    expected = [0.0, *(e / e.sum()), 0.0]
    np.testing.assert_allclose(weights[0].numpy(), expected, atol=1e-15, rtol=0)
    assert weights[0, 0].item() == 0.0 and weights[0, 4].item() == 0.0
    np.testing.assert_allclose(context[0].numpy(), [float(np.dot(expected, [4, 0, 1, 2, 9])), 0, 0])
    torch.testing.assert_close(att.position(query, mask, step=2), torch.tensor([2.0]).double())


def test_local_m_window_is_clipped_to_the_sentence_and_may_be_empty() -> None:
    att = local("general", "monotonic", 1, key_dim=4)
    query, keys, mask = inputs(D, 4, lengths=(5, 3, 0), seed=8)
    query.requires_grad_(True)
    keys.requires_grad_(True)
    scores = att.scores(query, keys)
    for t, windows in {
        0: [(0, 1), (0, 1), ()],  # [-1, 1] clipped to the start
        3: [(2, 3, 4), (2,), ()],  # row 1 has 3 real positions: [2, 4] clipped to {2}
        5: [(4,), (), ()],  # row 1's window [4, 6] is past its end: empty
    }.items():
        context, weights = att(query, keys, mask, step=t)
        for b, window in enumerate(windows):
            allowed = torch.zeros(5, dtype=torch.bool)
            allowed[list(window)] = True
            expected = masked_softmax(scores[b : b + 1], allowed[None])[0]
            torch.testing.assert_close(weights[b], expected, atol=1e-12, rtol=0)
            assert (weights[b, ~allowed] == 0).all()
            if not window:
                assert torch.equal(context[b], torch.zeros(4, dtype=torch.float64))
        (context.sum() + att.attentional(query, context).sum()).backward()
        assert torch.isfinite(query.grad).all() and torch.isfinite(keys.grad).all()
        assert (keys.grad[~mask] == 0).all()


def test_local_m_needs_the_step() -> None:
    att = local("dot", "monotonic", 2)
    query, keys, mask = inputs(D, D)
    with pytest.raises(ValueError, match="step: local-m attention needs the target position t"):
        att(query, keys, mask)
    for step in (-1, 1.0, True):
        with pytest.raises(ValueError, match=f"step: expected an int >= 0, got {step!r}"):
            att(query, keys, mask, step=step)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_batched_queries_match_one_step_at_a_time(mode: str) -> None:
    """The decoder's fast path: T queries at once from target position ``step``."""
    att = local("general", mode, 1, rng=2, key_dim=4)
    _, keys, mask = inputs(D, 4, lengths=(6, 3, 0), seed=9)
    queries = torch.randn(3, 4, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    proj = att.project_keys(keys)
    context, weights = att.attend_unchecked(queries, keys, mask, proj, 2)
    assert context.shape == (3, 4, 4) and weights.shape == (3, 4, 6)
    for t in range(4):
        step_context, step_weights = att(queries[:, t], keys, mask, step=2 + t)
        torch.testing.assert_close(context[:, t], step_context, atol=1e-12, rtol=0)
        torch.testing.assert_close(weights[:, t], step_weights, atol=1e-12, rtol=0)


# --- local-p -------------------------------------------------------------------------------------


def local_p_oracle(
    att: LocalAttention, h: np.ndarray, k: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """p_t [B] (eq. 9) and the weights [B, S] (eq. 10) in numpy, from the module's weights and
    its content scores (``scores`` is checked against its own oracle in test_attention.py)."""
    params = numpy_params(att)
    e = att.scores(torch.from_numpy(h), torch.from_numpy(k)).detach().numpy()
    lengths = mask.sum(-1)
    gate = np.tanh(h @ params["position_proj.weight"].T) @ params["position_v.weight"][0]
    p = lengths / (1.0 + np.exp(-gate))
    s = np.arange(mask.shape[1])
    sigma = att.window / 2.0
    weights = np.zeros_like(e)
    for b in range(e.shape[0]):
        window = mask[b] & (np.abs(s - p[b]) <= att.window)
        gauss = np.exp(-((s - p[b]) ** 2) / (2 * sigma**2))
        if att.renormalize:
            weights[b] = softmax_over(e[b] + np.log(gauss), window)
        else:
            weights[b] = softmax_over(e[b], window) * gauss
    return p, weights


@pytest.mark.parametrize("renormalize", [False, True])
@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_local_p_against_the_oracle(score: str, renormalize: bool) -> None:
    key_dim = D if score == "dot" else 4
    att = local(score, "predictive", 2, rng=11, key_dim=key_dim, renormalize=renormalize)
    query, keys, mask = inputs(D, key_dim, lengths=(9, 6, 0), seed=12)
    context, weights = att(query, keys, mask)
    p, expected = local_p_oracle(att, query.numpy(), keys.numpy(), mask.numpy())
    np.testing.assert_allclose(att.position(query, mask).detach().numpy(), p, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(
        context.detach().numpy(), np.einsum("bs,bsk->bk", expected, keys.numpy()), atol=1e-12
    )
    assert (weights[~mask] == 0).all() and torch.equal(context[2], torch.zeros(key_dim).double())
    sums = weights.sum(-1)
    if renormalize:
        torch.testing.assert_close(sums, torch.tensor([1.0, 1.0, 0.0]).double())
    else:
        assert (sums[:2] < 1.0).all() and (sums[:2] > math.exp(-2)).all()  # need not sum to 1
        assert sums[2] == 0.0


def test_local_p_gaussian_is_one_at_p_t_and_exp_minus_two_at_the_window_edge() -> None:
    """With v_p = 0, p_t = S / 2: S = 8 gives p_t = 4 (D = 2, sigma = 1), S = 6 gives 3."""
    att = local("general", "predictive", 2, rng=1)
    with torch.no_grad():
        att.position_v.weight.zero_()
    query, keys, mask = inputs(D, D, lengths=(8, 6), seed=3)
    torch.testing.assert_close(att.position(query, mask), torch.tensor([4.0, 3.0]).double())
    _, weights = att(query, keys, mask)
    for b, (p, length) in enumerate(((4, 8), (3, 6))):
        window = torch.zeros(8, dtype=torch.bool)
        window[p - 2 : p + 3] = True
        softmax = masked_softmax(att.scores(query, keys)[b : b + 1], window[None])[0]
        factor = torch.where(window, weights[b] / softmax.clamp(min=1e-300), torch.zeros(8))
        assert factor[p].item() == pytest.approx(1.0, abs=1e-15)
        assert factor[p + 2].item() == pytest.approx(math.exp(-2), abs=1e-15)
        assert factor[p - 2].item() == pytest.approx(math.exp(-2), abs=1e-15)
        assert factor[p + 1].item() == pytest.approx(math.exp(-0.5), abs=1e-15)
        assert (weights[b, ~window] == 0).all()  # outside [p_t - D, p_t + D]
        assert (weights[b, length:] == 0).all()


def test_local_p_uses_each_sentences_own_length() -> None:
    """p_t = S_b * sigmoid(...), S_b the sentence's real length: padding changes nothing."""
    att = local("concat", "predictive", 2, rng=5, key_dim=4)
    query, keys, mask = inputs(D, 4, lengths=(4,), seed=6)
    padded_keys = torch.cat([keys, torch.randn(1, 3, 4, dtype=torch.float64)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(1, 3, dtype=torch.bool)], dim=1)
    context, weights = att(query, keys, mask)
    padded_context, padded_weights = att(query, padded_keys, padded_mask)
    torch.testing.assert_close(padded_weights[:, :4], weights, atol=1e-14, rtol=0)
    assert (padded_weights[:, 4:] == 0).all()
    torch.testing.assert_close(padded_context, context, atol=1e-14, rtol=0)
    gate = att.position_v(torch.tanh(att.position_proj(query)))[:, 0]
    torch.testing.assert_close(att.position(query, padded_mask), 4 * torch.sigmoid(gate))


class Step(nn.Module):
    """One attention step as one module call (for functional_call): context, weights, h~."""

    def __init__(self, att: nn.Module, step: int | None = None) -> None:
        super().__init__()
        self.att = att
        self.t = step

    def forward(self, query: Tensor, keys: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if self.t is None:
            context, weights = self.att(query, keys, mask)
        else:
            context, weights = self.att(query, keys, mask, step=self.t)
        return context, weights, self.att.attentional(query, context)


def window_margin(att: LocalAttention, query: Tensor, mask: Tensor) -> float:
    """How far p_t is from putting a real position on a window edge (gradcheck perturbs p_t
    and must not move a position in or out of the window)."""
    p = att.position(query, mask).detach()
    s = torch.arange(mask.shape[1], dtype=p.dtype)
    return float(((s[None] - p[:, None]).abs() - att.window).abs()[mask].min())


@pytest.mark.parametrize(
    ("score", "renormalize"), [("dot", False), ("general", False), ("concat", True)]
)
def test_local_p_gradcheck_through_w_p_v_p_query_and_keys(score: str, renormalize: bool) -> None:
    key_dim = D if score == "dot" else 4
    att = local(score, "predictive", 2, rng=13, key_dim=key_dim, renormalize=renormalize)
    step = Step(att)
    query, keys, mask = inputs(D, key_dim, lengths=(7, 4, 0), seed=14)
    assert window_margin(att, query, mask) > 1e-3  # no window edge within reach of eps
    names = [name for name, _ in step.named_parameters()]
    assert names[-2:] == ["att.position_proj.weight", "att.position_v.weight"]
    params = [p.detach().clone().requires_grad_(True) for p in step.parameters()]

    def fn(query: Tensor, keys: Tensor, *params: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return torch.func.functional_call(
            step, dict(zip(names, params, strict=True)), (query, keys, mask)
        )

    args = (query.requires_grad_(True), keys.requires_grad_(True), *params)
    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-6, rtol=1e-5)
    # p_t really carries gradient into W_p and v_p (through the Gaussian).
    context, weights, attentional = step(query, keys, mask)
    (attentional.sum() + weights.sum()).backward()
    assert att.position_proj.weight.grad.abs().max() > 1e-6
    assert att.position_v.weight.grad.abs().max() > 1e-6


@pytest.mark.parametrize("score", ["general", "location"])
def test_location_and_local_m_gradcheck(score: str) -> None:
    if score == "location":
        att: nn.Module = LuongAttention(D, "location", 3, key_dim=4, max_len=8).double()
        step = Step(att)
    else:
        att = local("general", "monotonic", 1, rng=3, key_dim=4)
        step = Step(att, step=2)
    query, keys, mask = inputs(D, 4, lengths=(6, 2, 0), seed=15)
    names = [name for name, _ in step.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in step.parameters()]

    def fn(query: Tensor, keys: Tensor, *params: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return torch.func.functional_call(
            step, dict(zip(names, params, strict=True)), (query, keys, mask)
        )

    args = (query.requires_grad_(True), keys.requires_grad_(True), *params)
    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-6, rtol=1e-5)


# --- parameters, initialisation, validation ------------------------------------------------------


def test_local_parameters_in_order_and_seeded() -> None:
    att = LocalAttention(4, "concat", "predictive", 3, rng=5, key_dim=6)
    assert [(n, tuple(p.shape)) for n, p in att.named_parameters()] == [
        ("score_proj.weight", (4, 10)),
        ("v.weight", (1, 4)),
        ("combine.weight", (4, 10)),
        ("position_proj.weight", (4, 4)),
        ("position_v.weight", (1, 4)),
    ]
    g = torch.Generator().manual_seed(5)
    for name, param in att.named_parameters():  # U(-1/sqrt(fan_in), ..) in registration order
        bound = 1.0 / math.sqrt(param.shape[1])
        assert torch.equal(
            param.detach(), torch.empty(param.shape).uniform_(-bound, bound, generator=g)
        ), name
    glob = LuongAttention(4, "concat", 5, key_dim=6)
    for name, value in glob.state_dict().items():  # the score's weights are global's
        assert torch.equal(att.state_dict()[name], value)
    assert [n for n, _ in local("dot", "monotonic", 2).named_parameters()] == ["combine.weight"]
    assert att.extra_repr() == "d=4, score='concat', key_dim=6, mode='predictive', window=3"
    assert att.query_from == "current"


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (
            lambda: LocalAttention(3, "location", "monotonic", 2),  # type: ignore[arg-type]
            ValueError,
            "score: expected one of dot, general, concat, scaled_dot inside a local window, "
            "got 'location'",
        ),
        (
            lambda: LocalAttention(3, "dot", "gaussian", 2),  # type: ignore[arg-type]
            ValueError,
            "mode: expected one of monotonic, predictive, got 'gaussian'",
        ),
        (
            lambda: LocalAttention(3, "dot", "predictive", 0),
            ValueError,
            "window: expected an int D >= 1, got 0",
        ),
        (
            lambda: LocalAttention(3, "dot", "predictive", 2.5),  # type: ignore[arg-type]
            ValueError,
            "window: expected an int D >= 1, got 2.5",
        ),
        (
            lambda: LocalAttention(3, "dot", "monotonic", 2, renormalize=True),
            ValueError,
            "renormalize: only local-p's weights need it (local-m's sum to 1), got "
            "renormalize=True with mode 'monotonic'",
        ),
        (
            lambda: LocalAttention(3, "dot", "predictive", 2, renormalize=1),  # type: ignore[arg-type]
            TypeError,
            "renormalize: expected a bool, got 1",
        ),
        (
            lambda: LocalAttention(3, "dot", "predictive", 2, key_dim=4),
            ValueError,
            "key_dim: the dot score needs key_dim == d = 3, got 4; "
            "use general or concat for keys of another width",
        ),
    ],
)
def test_local_validation(build, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        build()
    assert str(info.value) == message


def test_local_calls_validate_shapes() -> None:
    att = LocalAttention(4, "general", "predictive", 2, key_dim=3)
    query, keys, mask = torch.zeros(2, 4), torch.zeros(2, 5, 3), torch.ones(2, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"keys: expected shape \[B, S, 3\], got \(2, 5, 4\)"):
        att(query, torch.zeros(2, 5, 4), mask)
    with pytest.raises(ValueError, match=r"mask: expected shape \[B, S\] = \(2, 5\), got \(2, 4\)"):
        att(query, keys, mask[:, :4])
    with pytest.raises(ValueError, match=r"proj: expected shape \[B, S, d\] = \(2, 5, 4\)"):
        att(query, keys, mask, keys)
    with pytest.raises(ValueError, match=r"mask: expected batch 2 \(the query's\), got 3"):
        att.position(query, torch.ones(3, 5, dtype=torch.bool))
    att(query, keys, mask)  # local-p: no step needed
    att(query, keys, mask, step=4)


@pytest.mark.parametrize(
    "make",
    [
        lambda: LuongAttention(D, "location", 0, max_len=6).double(),
        lambda: local("general", "monotonic", 1),
        lambda: local("concat", "predictive", 2),
    ],
)
def test_no_state_is_kept_between_calls(make) -> None:
    att = make()
    before = {k: set(v) if isinstance(v, dict) else v for k, v in vars(att).items()}
    query, keys, mask = inputs(D, D, seed=16)
    first = (
        att(query, keys, mask, step=1)
        if isinstance(att, LocalAttention)
        else att(query, keys, mask)
    )
    assert {k: set(v) if isinstance(v, dict) else v for k, v in vars(att).items()} == before
    again = (
        att(query, keys, mask, step=1)
        if isinstance(att, LocalAttention)
        else att(query, keys, mask)
    )
    for x, y in zip(first, again, strict=True):
        assert torch.equal(x, y)


@st.composite
def local_problems(draw: st.DrawFn):
    mode = draw(st.sampled_from(LOCAL_MODES))
    renormalize = mode == "predictive" and draw(st.booleans())
    score = draw(st.sampled_from(LOCAL_SCORES))
    src_len = draw(st.integers(1, 7))
    lengths = draw(st.lists(st.integers(0, src_len), min_size=1, max_size=4))
    return (
        mode,
        renormalize,
        score,
        draw(st.integers(1, 4)),
        src_len,
        lengths,
        draw(st.integers(0, 9)),
        draw(st.integers(0, 2**31 - 1)),
    )


@settings(max_examples=12 if MUTATION_RUN else 60, deadline=None, derandomize=MUTATION_RUN)
@given(local_problems())
def test_local_weights_live_inside_the_window_and_the_sentence(problem) -> None:
    mode, renormalize, score, window, src_len, lengths, t, seed = problem
    att = LocalAttention(D, score, mode, window, seed, renormalize=renormalize).double()
    g = torch.Generator().manual_seed(seed)
    query = (3 * torch.randn(len(lengths), D, generator=g, dtype=torch.float64)).requires_grad_()
    keys = torch.randn(len(lengths), src_len, D, generator=g, dtype=torch.float64).requires_grad_()
    mask = length_mask(torch.tensor(lengths), src_len)
    context, weights = att(query, keys, mask, step=t)
    p = att.position(query.detach(), mask, step=t)
    s = torch.arange(src_len, dtype=torch.float64)
    inside = mask & ((s[None] - p[:, None]).abs() <= window)
    assert (weights >= 0).all() and (weights[~inside] == 0).all()
    sums = weights.sum(-1)
    full = torch.where(inside.any(-1), 1.0, 0.0).double()
    if mode == "monotonic" or renormalize:
        torch.testing.assert_close(sums, full, atol=1e-12, rtol=0)
    else:
        assert (sums <= full + 1e-12).all()
    (context.sum() + weights.sum()).backward()
    assert torch.isfinite(query.grad).all() and torch.isfinite(keys.grad).all()
    assert (keys.grad[~inside] == 0).all()


# --- the decoder and the model -------------------------------------------------------------------

SRC_LENGTHS = (6, 3, 1)
T = 5
MECHANISMS = [
    {"attention": "location", "max_src_len": 12},
    {"attention": "scaled_dot"},
    {"attention": "dot", "local": "monotonic", "window": 1},
    {"attention": "general", "local": "monotonic", "window": 2},
    {"attention": "dot", "local": "predictive", "window": 1},
    {"attention": "general", "local": "predictive", "window": 2},
    {"attention": "concat", "local": "predictive", "window": 3},
]
MECHANISM_IDS = ["-".join(str(v) for v in m.values()) for m in MECHANISMS]


def reference_decode(model: Seq2Seq, src: Tensor, lengths: Tensor, tgt_in: Tensor):
    """Teacher-forced logits and weights, stepping the decoder's own nn.GRU by hand and
    attending through the public ``forward`` with the target position t passed explicitly."""
    dec, att = model.decoder, model.decoder.attention
    keys, final = model.encoder(src, lengths)
    hidden, _ = model.bridge(final)
    mask = length_mask(lengths, src.shape[1])
    feed = keys.new_zeros(src.shape[0], model.config.dec_hidden)
    logits, weights = [], []
    for t in range(tgt_in.shape[1]):
        parts = [dec.embedding(tgt_in[:, t])] + ([feed] if model.config.input_feed else [])
        _, hidden = dec.rnn(torch.cat(parts, dim=-1).unsqueeze(1), hidden.contiguous())
        if isinstance(att, LocalAttention):
            context, w = att(hidden[-1], keys, mask, step=t)
        else:
            context, w = att(hidden[-1], keys, mask)
        feed = att.attentional(hidden[-1], context)
        logits.append(dec.out(feed))
        weights.append(w)
    return torch.stack(logits, dim=1), torch.stack(weights, dim=1)


@pytest.mark.parametrize("feed", [True, False], ids=["feed", "nofeed"])
@pytest.mark.parametrize("fields", MECHANISMS, ids=MECHANISM_IDS)
def test_decoder_steps_equal_forward_and_the_reference(fields: dict, feed: bool) -> None:
    model = small_model(input_feed=feed, **fields).double()
    assert type(model.decoder.attention) is (
        LocalAttention if "local" in fields else LuongAttention
    )
    assert model.decoder.fast_path is not feed
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        logits, weights = model.decoder(tgt_in, state, memory)
        expected_logits, expected_weights = reference_decode(model, src, lengths, tgt_in)
        step_logits, step_weights = [], []
        for t in range(T):
            assert state.step == t
            out, state, w = model.decoder.step(tgt_in[:, t], state, memory)
            step_logits.append(out)
            step_weights.append(w)
    assert state.step == T
    torch.testing.assert_close(torch.stack(step_logits, 1), logits, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.stack(step_weights, 1), weights, atol=1e-6, rtol=0)
    torch.testing.assert_close(logits, expected_logits, atol=1e-6, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=0)
    assert (weights[~length_mask(lengths)[:, None, :].expand_as(weights)] == 0).all()
    if fields.get("local") == "monotonic":  # step t reads [t - D, t + D] only
        s, t = torch.arange(weights.shape[-1]), torch.arange(T)
        outside = (s[None, :] - t[:, None]).abs() > fields["window"]
        assert (weights[:, outside] == 0).all()


def test_decoder_state_step_survives_reorder() -> None:
    model = small_model(attention="dot", local="monotonic", window=1).double()
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    memory, state = model.encode(src, lengths)
    assert state.step == 0
    _, state, _ = model.decoder.step(tgt_in[:, 0], state, memory)
    _, state, _ = model.decoder.step(tgt_in[:, 1], state, memory)
    moved = state.reorder(torch.tensor([2, 0]))
    assert moved.step == state.step == 2
    assert moved.hidden.shape[1] == 2


@pytest.mark.parametrize("fields", [*MECHANISMS, {"attention": "bahdanau"}, {"attention": "dot"}])
def test_model_trains_without_nan_and_round_trips(fields: dict, tmp_path: Path) -> None:
    model = small_model(seed=3, **fields).train()
    pairs = [("abcdef", "12-3"), ("ghij", "4-56"), ("jihgfedcba", "7890-1"), ("a", "2")]
    data = ParallelData(pairs, SRC, TGT)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(4):
        loss = loss_of(model, data.batch(range(len(pairs))))
        optimizer.zero_grad()
        loss.backward()
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    if fields.get("local") == "predictive":
        assert model.decoder.attention.position_proj.weight.grad.abs().max() > 0
    model.eval()
    path = model.save_pretrained(tmp_path / "m")
    saved = json.loads((path / "config.json").read_text())["model"]
    assert {k: saved[k] for k in fields} == fields
    loaded = Seq2Seq.from_pretrained(path)
    assert loaded.config == model.config
    assert list(loaded.state_dict()) == list(model.state_dict())
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    with torch.no_grad():
        assert torch.equal(loaded(src, lengths, tgt_in), model(src, lengths, tgt_in))
    texts = ["abc", "jihgf", "a"]
    options = SearchOptions(max_len=6)
    assert translate(loaded, texts, options) == translate(model, texts, options)


@pytest.mark.parametrize("fields", MECHANISMS, ids=MECHANISM_IDS)
def test_greedy_and_beam_search_run_with_every_mechanism(fields: dict) -> None:
    model = small_model(seed=5, **fields).double()
    src, lengths = source_batch(SRC_LENGTHS, 2)
    greedy = luong.greedy_search(model, src, lengths, max_len=7)
    assert len(greedy) == 3
    one = luong.beam_search(model, src, lengths, SearchOptions(beam=1), max_len=7)
    assert [h[0].tokens for h in one] == [h.tokens for h in greedy]  # beam 1 is greedy
    lists = luong.beam_search(model, src, lengths, SearchOptions(beam=3, nbest=3), max_len=7)
    assert [len(hyps) for hyps in lists] == [3, 3, 3]
    for b, hyps in enumerate(lists):
        for hyp in hyps:
            assert math.isfinite(hyp.score)
            att = hyp.attention  # [len(tokens), S_b]: the weights along the beam's own path
            assert att.shape == (len(hyp.tokens), SRC_LENGTHS[b]) and (att >= 0).all()
            sums = att.sum(-1)
            if fields.get("local") == "predictive":
                assert (sums <= 1 + 1e-6).all() and (sums > 0).all()
            elif fields.get("local") == "monotonic":
                t, s = torch.arange(att.shape[0])[:, None], torch.arange(att.shape[1])[None]
                assert (att[(s - t).abs() > fields["window"]] == 0).all()
            else:
                torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-6, rtol=0)


# --- the config ----------------------------------------------------------------------------------


def test_config_local_fields_validate() -> None:
    for attention in ("location", "bahdanau"):
        with pytest.raises(
            ValueError,
            match=rf"local 'predictive': expected attention one of dot, general, concat, "
            rf"scaled_dot inside the window, got '{attention}'",
        ):
            Seq2SeqConfig(attention=attention, local="predictive")
    for name in ("window", "max_src_len"):
        for value in (0, 2.0, True):
            with pytest.raises(ValueError, match=f"{name}: expected an int >= 1"):
                Seq2SeqConfig(**{name: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="attention 'scaled_dot' needs keys as wide"):
        Seq2SeqConfig(attention="scaled_dot", dec_hidden=64)
    assert set(ATTENTIONS) == {*GLOBAL_SCORES, "bahdanau"}
    assert LOCALS == ("none", "monotonic", "predictive")


def test_cli_flags_come_from_the_config() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["train", "dates", "--out", "x", "--attention", "general", "--local", "predictive"]
        + ["--window", "4", "--max-src-len", "40"]
    )
    assert (args.attention, args.local, args.window, args.max_src_len) == (
        "general",
        "predictive",
        4,
        40,
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "dates", "--out", "x", "--local", "global"])


# --- details the mutation run asked for ----------------------------------------------------------


def test_local_m_batched_queries_start_at_step_zero_by_default() -> None:
    """The decoder's fast path passes no step: T queries are the steps 0 .. T - 1."""
    att = local("dot", "monotonic", 1, rng=2)
    _, keys, mask = inputs(D, D, lengths=(6, 3, 0), seed=5)
    queries = torch.randn(3, 4, D, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    _, weights = att.attend_unchecked(queries, keys, mask, att.project_keys(keys))
    for t in range(4):
        _, step_weights = att(queries[:, t], keys, mask, step=t)
        torch.testing.assert_close(weights[:, t], step_weights, atol=1e-12, rtol=0)


def test_location_checks_the_source_length_not_the_key_width() -> None:
    att = LuongAttention(D, "location", key_dim=2, max_len=4)  # K = 2 <= max_len < S = 5
    keys, mask = torch.zeros(1, 5, 2), torch.ones(1, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match="at most max_len = 4 source positions, got S = 5"):
        att(torch.zeros(1, D), keys, mask)
    # With the projection given, the key check is the only guard (no key projection runs).
    with pytest.raises(ValueError, match="at most max_len = 4 source positions, got S = 5"):
        att.scores(torch.zeros(1, D), keys, torch.zeros(1, 5, 0))


def test_local_defaults_and_reprs() -> None:
    att = LocalAttention(D, "dot")
    assert (att.mode, att.window, att.renormalize) == ("monotonic", 10, False)
    assert repr(att) == (
        "LocalAttention(\n  d=3, score='dot', key_dim=3, mode='monotonic', window=10\n"
        "  (combine): Linear(in_features=6, out_features=3, bias=False)\n)"
    )
    p = LocalAttention(D, "dot", "predictive", 2, renormalize=True)
    assert p.extra_repr() == (
        "d=3, score='dot', key_dim=3, mode='predictive', window=2, renormalize=True"
    )
    location = LuongAttention(D, "location", max_len=5)
    assert location.extra_repr() == "d=3, score='location', key_dim=3, max_len=5"
    assert LuongAttention(D, "dot").extra_repr() == "d=3, score='dot', key_dim=3"


def test_local_scores_are_the_ones_a_window_takes() -> None:
    assert LOCAL_SCORES == ("dot", "general", "concat", "scaled_dot")
    for score in LOCAL_SCORES:
        LocalAttention(D, score, "monotonic", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError) as info:
        LocalAttention(D, "location", "monotonic", 2)  # type: ignore[arg-type]
    assert str(info.value) == (
        "score: expected one of dot, general, concat, scaled_dot inside a local window, "
        "got 'location'"
    )


def test_position_and_step_messages() -> None:
    att = local("dot", "predictive", 2)
    query, _, mask = inputs(D, D)
    messages = [
        (
            lambda: att.position(query, [[True]]),
            "mask: expected a bool tensor [B, S], got [[True]]",
        ),
        (
            lambda: att.position(query, mask.float()),
            "mask: expected a bool tensor [B, S], got 'torch.float32 (3, 5)'",
        ),
        (
            lambda: att.position(query, mask[:2]),
            "mask: expected batch 3 (the query's), got 2",
        ),
        (lambda: att.position(query[:, :2], mask), "query: expected shape [B, 3], got (3, 2)"),
        (lambda: att.position(query, mask, step=-1), "step: expected an int >= 0, got -1"),
        (
            lambda: local("dot", "monotonic", 2).position(query, mask),
            "step: local-m attention needs the target position t of the query (an int >= 0), "
            "got None",
        ),
    ]
    for call, message in messages:
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        LuongAttention(D, "location")
    assert (
        str(info.value) == "max_len: the location score needs the maximum source length, got None"
    )
