"""Tests of ``luong.model.attention``.

Three layers, as in STYLE.md: the specification's worked example by hand; golden values and
gradients against an oracle written here, in numpy float64, from each module's own
``state_dict()``; and the invariants and boundaries (exact zeros at padding, the relations
between the scores, parameter names, seeding, validation messages).

Shapes: B batch, S source length, T target steps, d query width, K key width (``key_dim``).
"""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest
import torch
from torch import Tensor, nn

import luong
from luong.model import attention
from luong.model.attention import BahdanauAttention, LuongAttention, length_mask, masked_softmax

KINDS = ("dot", "general", "concat", "bahdanau")
# (kind, key_dim) with d = 3: every score, and a key width other than d where it is allowed.
CASES = [
    ("dot", 3),
    ("general", 3),
    ("general", 5),
    ("concat", 3),
    ("concat", 5),
    ("bahdanau", 3),
    ("bahdanau", 5),
]
CASE_IDS = [f"{kind}-K{key_dim}" for kind, key_dim in CASES]
D = 3


def make(
    kind: str, d: int, key_dim: int | None = None, rng: int | torch.Generator | None = 0
) -> LuongAttention | BahdanauAttention:
    if kind == "bahdanau":
        return BahdanauAttention(d, rng, key_dim=key_dim)
    return LuongAttention(d, kind, rng, key_dim=key_dim)  # type: ignore[arg-type]


class Step(nn.Module):
    """One attention step as a single module call: the read, then the attentional state."""

    def __init__(self, att: nn.Module) -> None:
        super().__init__()
        self.att = att

    def forward(self, query: Tensor, keys: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        context, weights = self.att(query, keys, mask)
        return context, weights, self.att.attentional(query, context)


def inputs(
    d: int, key_dim: int, lengths: tuple[int, ...] = (4, 2, 0), seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """float64 query [B, d], keys [B, S, K] and mask [B, S]: a full, a padded and an empty row."""
    g = torch.Generator().manual_seed(seed)
    batch, src_len = len(lengths), max(lengths)
    query = 1.5 * torch.randn(batch, d, generator=g, dtype=torch.float64)
    keys = 1.5 * torch.randn(batch, src_len, key_dim, generator=g, dtype=torch.float64)
    return query, keys, length_mask(torch.tensor(lengths), src_len)


# --- the oracle: the equations in numpy float64 -------------------------------------------------


def numpy_params(att: nn.Module) -> dict[str, np.ndarray]:
    return {
        name: value.detach().double().numpy().copy() for name, value in att.state_dict().items()
    }


def oracle(
    kind: str, params: dict[str, np.ndarray], h: np.ndarray, k: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scores [B, S], weights [B, S], context [B, K] and h~ [B, d] from the equations.

    dot h.k, general h.(W_a k), concat v.tanh(W_a [h ; k]), Bahdanau v.tanh(W_q h + W_k k);
    a softmax over the real positions only (an empty row has no weight); c = sum_s a_s k_s;
    h~ = tanh(W_c [c ; h]).
    """
    if kind == "dot":
        e = np.einsum("bd,bsd->bs", h, k)
    elif kind == "general":
        e = np.einsum("bd,dk,bsk->bs", h, params["score_proj.weight"], k)
    elif kind == "concat":
        h_rows = np.broadcast_to(h[:, None, :], (*k.shape[:2], h.shape[1]))
        hk = np.concatenate([h_rows, k], axis=-1)  # [B, S, d + K]
        e = np.tanh(hk @ params["score_proj.weight"].T) @ params["v.weight"][0]
    else:
        hidden = (h @ params["query_proj.weight"].T)[:, None, :] + k @ params["key_proj.weight"].T
        e = np.tanh(hidden) @ params["v.weight"][0]
    weights = np.zeros_like(e)
    for b in range(e.shape[0]):
        real = mask[b]
        if real.any():
            x = np.exp(e[b, real] - e[b, real].max())
            weights[b, real] = x / x.sum()
    context = np.einsum("bs,bsk->bk", weights, k)
    attentional = np.tanh(np.concatenate([context, h], axis=-1) @ params["combine.weight"].T)
    return e, weights, context, attentional


def central_differences(f: typing.Callable[[], float], x: np.ndarray, eps: float = 1e-6):
    """d f / d x by central differences, perturbing ``x`` in place (and restoring it)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad


# --- section 3 of the specification, by hand ----------------------------------------------------


def hand_example(combine: list[list[float]]) -> tuple[LuongAttention, Tensor, Tensor, Tensor]:
    """d = 2, dot, h = (1, 0), keys (1, 0), (0, 1), (2, 0), the third one padding."""
    att = LuongAttention(2, "dot")
    with torch.no_grad():
        att.combine.weight.copy_(torch.tensor(combine))
    query = torch.tensor([[1.0, 0.0]])
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]]])
    mask = torch.tensor([[True, True, False]])
    return att, query, keys, mask


def test_hand_example_dot() -> None:
    att, query, keys, mask = hand_example([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])  # [I I]
    assert torch.equal(att.scores(query, keys), torch.tensor([[1.0, 0.0, 2.0]]))
    context, weights = att(query, keys, mask)
    torch.testing.assert_close(
        weights, torch.tensor([[0.731059, 0.268941, 0.0]]), atol=1e-6, rtol=0
    )
    assert weights[0, 2].item() == 0.0
    assert weights[0, 0].item() == pytest.approx(math.e / (math.e + 1), abs=1e-7)
    torch.testing.assert_close(context, torch.tensor([[0.731059, 0.268941]]), atol=1e-6, rtol=0)
    # W_c [c ; h] = c + h = (1.731059, 0.268941), then the tanh.
    attentional = att.attentional(query, context)
    torch.testing.assert_close(attentional, torch.tensor([[0.939181, 0.262640]]), atol=1e-6, rtol=0)


def test_hand_example_attentional_order() -> None:
    # W_c = [I 0] reads only the first d columns of [c ; h]: the context.
    att, query, keys, mask = hand_example([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    context, _ = att(query, keys, mask)
    expected = torch.tensor([[math.tanh(0.731059), math.tanh(0.268941)]])
    torch.testing.assert_close(att.attentional(query, context), expected, atol=1e-6, rtol=0)
    # W_c = [0 I] reads only the query: tanh(h) = (tanh 1, 0).
    with torch.no_grad():
        att.combine.weight.copy_(torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]))
    expected = torch.tensor([[math.tanh(1.0), 0.0]])
    torch.testing.assert_close(att.attentional(query, context), expected, atol=1e-7, rtol=0)


def test_dot_is_not_scaled() -> None:
    att, query, keys, _ = hand_example([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    assert att.scores(query, keys).tolist() == [[1.0, 0.0, 2.0]]
    # d = 4, where 1/sqrt(d) = 1/2 would halve every score.
    att = LuongAttention(4, "dot")
    query = torch.tensor([[1.0, 1.0, 1.0, 1.0]])
    keys = torch.tensor([[[1.0, 1.0, 1.0, 1.0], [2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, -3.0]]])
    assert att.scores(query, keys).tolist() == [[4.0, 2.0, -3.0]]


# --- golden values and gradients against the oracle ---------------------------------------------


@pytest.mark.parametrize(("kind", "key_dim"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("grad", [True, False], ids=["training", "no_grad"])
def test_golden_values_against_numpy_oracle(kind: str, key_dim: int, grad: bool) -> None:
    # With gradients the one-query products run as broadcast products, without them as
    # batched matrix products (the faster form each way): both must give the oracle's values.
    att = make(kind, D, key_dim, rng=7).double()
    query, keys, mask = inputs(D, key_dim, seed=1)
    e, weights, context, attentional = oracle(
        kind, numpy_params(att), query.numpy(), keys.numpy(), mask.numpy()
    )
    with torch.set_grad_enabled(grad):
        got_context, got_weights = att(query, keys, mask)
        got_scores = att.scores(query, keys)
        got_attentional = att.attentional(query, got_context).detach().numpy()
    np.testing.assert_allclose(got_scores.detach().numpy(), e, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_weights.detach().numpy(), weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_context.detach().numpy(), context, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_attentional, attentional, rtol=1e-12, atol=1e-12)
    # The oracle's rows: a full one, a padded one, an empty one. The test sees them all.
    assert (weights[0] > 0).all() and (weights[1, 2:] == 0).all() and (weights[2] == 0).all()


@pytest.mark.parametrize(("kind", "key_dim"), CASES, ids=CASE_IDS)
def test_golden_gradients_against_numpy_finite_differences(kind: str, key_dim: int) -> None:
    att = make(kind, D, key_dim, rng=3).double()
    query, keys, mask = inputs(D, key_dim, seed=2)
    rs = np.random.default_rng(0)
    cotangents = [rs.standard_normal(shape) for shape in ((3, 4), (3, key_dim), (3, D))]

    # Autograd: a scalar loss that reads the weights, the context and h~.
    query.requires_grad_(True)
    keys.requires_grad_(True)
    context, weights, attentional = Step(att)(query, keys, mask)
    loss = sum(
        (out * torch.from_numpy(g)).sum()
        for out, g in zip((weights, context, attentional), cotangents, strict=True)
    )
    loss.backward()
    autograd = {"query": query.grad, "keys": keys.grad}
    autograd |= {name: p.grad for name, p in att.named_parameters()}

    # The oracle's loss, differentiated numerically through every input and parameter.
    params = numpy_params(att)
    h, k, m = query.detach().numpy().copy(), keys.detach().numpy().copy(), mask.numpy()

    def oracle_loss() -> float:
        _, w, c, ht = oracle(kind, params, h, k, m)
        return float(sum((out * g).sum() for out, g in zip((w, c, ht), cotangents, strict=True)))

    numeric = {"query": central_differences(oracle_loss, h)}
    numeric["keys"] = central_differences(oracle_loss, k)
    numeric |= {name: central_differences(oracle_loss, value) for name, value in params.items()}

    assert autograd.keys() == numeric.keys()
    for name, grad in autograd.items():
        assert grad is not None, name
        np.testing.assert_allclose(grad.numpy(), numeric[name], rtol=1e-6, atol=1e-8, err_msg=name)
    # Both agree that padded keys and the empty row's keys get no gradient at all.
    assert (keys.grad[1, 2:] == 0).all() and (keys.grad[2] == 0).all()
    assert keys.grad[0].abs().min() > 0


@pytest.mark.parametrize(("kind", "key_dim"), CASES, ids=CASE_IDS)
def test_gradcheck_every_input_and_parameter(kind: str, key_dim: int) -> None:
    step = Step(make(kind, D, key_dim, rng=5).double())
    query, keys, mask = inputs(D, key_dim, seed=3)  # rows: full, padded, empty
    names = [name for name, _ in step.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in step.parameters()]
    assert len(params) == {"dot": 1, "general": 2, "concat": 3, "bahdanau": 4}[kind]

    def fn(query: Tensor, keys: Tensor, *params: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return torch.func.functional_call(
            step, dict(zip(names, params, strict=True)), (query, keys, mask)
        )

    args = (query.requires_grad_(True), keys.requires_grad_(True), *params)
    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-6, rtol=1e-5)


# --- relations between the scores ---------------------------------------------------------------


def test_general_with_identity_is_dot() -> None:
    dot = LuongAttention(4, "dot", rng=0).double()
    general = LuongAttention(4, "general", rng=1).double()
    with torch.no_grad():
        general.score_proj.weight.copy_(torch.eye(4))
        general.combine.weight.copy_(dot.combine.weight)
    query, keys, mask = inputs(4, 4, lengths=(5, 3), seed=4)
    torch.testing.assert_close(general.scores(query, keys), dot.scores(query, keys))
    got, expected = Step(general)(query, keys, mask), Step(dot)(query, keys, mask)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)


def test_general_is_not_symmetric() -> None:
    att = LuongAttention(2, "general")
    w_a = torch.tensor([[1.0, 2.0], [0.0, 1.0]])
    with torch.no_grad():
        att.score_proj.weight.copy_(w_a)
    query = torch.tensor([[1.0, 0.0]])
    keys = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    # h . (W_a k) = (2, 1); W_a^T would give (0, 1).
    assert att.scores(query, keys).tolist() == [[2.0, 1.0]]
    assert torch.equal(att.project_keys(keys), torch.tensor([[[2.0, 1.0], [1.0, 0.0]]]))
    # A random W_a: the module matches h^T W_a k and differs from h^T W_a^T k.
    att = LuongAttention(3, "general", rng=2).double()
    query, keys, _ = inputs(3, 3, lengths=(4, 4), seed=5)
    w_a = att.score_proj.weight.detach()
    expected = torch.einsum("bd,dk,bsk->bs", query, w_a, keys)
    transposed = torch.einsum("bd,kd,bsk->bs", query, w_a, keys)
    torch.testing.assert_close(att.scores(query, keys), expected)
    assert (att.scores(query, keys) - transposed).abs().max() > 0.1


@pytest.mark.parametrize("key_dim", [3, 5])
def test_concat_projection_splits_the_weight(key_dim: int) -> None:
    att = LuongAttention(D, "concat", rng=4, key_dim=key_dim).double()
    query, keys, _ = inputs(D, key_dim, lengths=(4, 4, 4), seed=6)
    w_a, v = att.score_proj.weight.detach(), att.v.weight.detach()
    # The cache is W_k k with W_k the last K columns of W_a (the first d multiply the query).
    proj = att.project_keys(keys)
    torch.testing.assert_close(proj, keys @ w_a[:, D:].T)
    # The score from the cache equals the unsplit v . tanh(W_a [h ; k]).
    hk = torch.cat([query.unsqueeze(1).expand(-1, keys.shape[1], -1), keys], dim=-1)
    expected = torch.tanh(hk @ w_a.T) @ v[0]
    torch.testing.assert_close(att.scores(query, keys, proj), expected)
    torch.testing.assert_close(att.scores(query, keys), expected)


@pytest.mark.parametrize("kind", KINDS)
def test_project_keys_is_the_per_sentence_part(kind: str) -> None:
    att = make(kind, D, 5 if kind != "dot" else D, rng=8).double()
    query, keys, mask = inputs(D, att.key_dim, seed=7)
    proj = att.project_keys(keys)
    assert proj.shape == (3, 4, D)
    weight = {
        "dot": None,
        "general": "score_proj.weight",
        "concat": "score_proj.weight",
        "bahdanau": "key_proj.weight",
    }[kind]
    if weight is None:
        assert proj is keys
    else:
        w = att.state_dict()[weight][:, -att.key_dim :]
        torch.testing.assert_close(proj, keys @ w.T)
    # Passing the cache changes nothing.
    assert torch.equal(att.scores(query, keys, proj), att.scores(query, keys))
    for got, expected in zip(att(query, keys, mask, proj), att(query, keys, mask), strict=True):
        assert torch.equal(got, expected)


# --- masking ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_masked_weights_are_exactly_zero(kind: str) -> None:
    key_dim = D if kind == "dot" else 5
    att = make(kind, D, key_dim, rng=9).double()
    query, keys, mask = inputs(D, key_dim, lengths=(4, 2, 0), seed=8)
    keys.requires_grad_(True)
    query.requires_grad_(True)
    context, weights, attentional = Step(att)(query, keys, mask)

    assert (weights[~mask] == 0).all()
    assert (weights[0] > 0).all() and (weights[1, :2] > 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))
    # The empty row reads nothing: zero weights, a zero context, a finite h~.
    assert torch.equal(context[2], torch.zeros(key_dim, dtype=torch.float64))
    assert torch.isfinite(attentional).all()

    (context.sum() + attentional.sum() + (weights * torch.arange(4.0)).sum()).backward()
    assert torch.isfinite(keys.grad).all() and torch.isfinite(query.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in att.parameters())
    assert (keys.grad[~mask] == 0).all()
    assert keys.grad[1, :2].abs().min() > 0
    # Whatever sits at the padded positions, nothing changes.
    noisy = keys.detach().clone()
    noisy[~mask] = 1e6 * torch.randn(int((~mask).sum()), key_dim, dtype=torch.float64)
    for got, expected in zip(att(query, noisy, mask), (context, weights), strict=True):
        assert torch.equal(got, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_masked_weights_are_exactly_zero_at_any_score_magnitude(dtype: torch.dtype) -> None:
    # Real scores far below -1e9 still carry all the weight: a finite fill value would not do.
    scores = torch.tensor(
        [[-1e10, -1e10, 7.0], [-4e12, 5.0, 5.0], [3e10, 3e10, 1e30], [-1e30, 2.0, -1e30]],
        dtype=dtype,
    )
    mask = torch.tensor(
        [[True, True, False], [True, False, False], [True, True, False]] + [[False] * 3]
    )
    weights = masked_softmax(scores, mask)
    expected = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]
    assert weights.tolist() == expected
    # The read: dot scores of -1e10 and -1e10 - 1 give the hand example's weights.
    att = LuongAttention(2, "dot").double()
    query = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    keys = torch.tensor([[[-1e10, 0.0], [-1e10 - 1.0, 1.0], [5.0, 0.0]]], dtype=torch.float64)
    keys.requires_grad_(True)
    context, weights = att(query, keys, torch.tensor([[True, True, False]]))
    torch.testing.assert_close(
        weights, torch.tensor([[0.731059, 0.268941, 0.0]], dtype=torch.float64), atol=1e-6, rtol=0
    )
    assert weights[0, 2].item() == 0.0
    context.sum().backward()
    assert torch.isfinite(keys.grad).all() and (keys.grad[0, 2] == 0).all()


# --- batched queries (the decoder's unchecked fast path) -----------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_batched_queries_match_one_step_at_a_time(kind: str) -> None:
    key_dim = D if kind == "dot" else 5
    att = make(kind, D, key_dim, rng=10).double()
    _, keys, mask = inputs(D, key_dim, lengths=(4, 2, 0), seed=9)
    queries = torch.randn(3, 2, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    proj = att.project_keys(keys)
    context, weights = att.attend_unchecked(queries, keys, mask, proj)
    attentional = att.attentional_unchecked(queries, context)
    assert context.shape == (3, 2, key_dim) and weights.shape == (3, 2, 4)
    for t in range(2):
        step_context, step_weights = att(queries[:, t], keys, mask)
        torch.testing.assert_close(context[:, t], step_context)
        torch.testing.assert_close(weights[:, t], step_weights)
        torch.testing.assert_close(attentional[:, t], att.attentional(queries[:, t], step_context))
    assert (weights[~mask.unsqueeze(1).expand(-1, 2, -1)] == 0).all()


# --- dtypes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-12), (torch.bfloat16, 4e-2)]
)
@pytest.mark.parametrize("kind", KINDS)
def test_forward_in_every_float_dtype(kind: str, dtype: torch.dtype, tol: float) -> None:
    key_dim = D if kind == "dot" else 5
    att = make(kind, D, key_dim, rng=11).to(dtype)
    query, keys, mask = inputs(D, key_dim, seed=10)
    query, keys = query.to(dtype), keys.to(dtype)
    context, weights, attentional = Step(att)(query, keys, mask)
    assert context.dtype == weights.dtype == attentional.dtype == dtype
    expected = oracle(
        kind, numpy_params(att), query.double().numpy(), keys.double().numpy(), mask.numpy()
    )[1:]
    for got, want in zip((weights, context, attentional), expected, strict=True):
        np.testing.assert_allclose(got.double().detach().numpy(), want, rtol=tol, atol=tol)
    assert (weights[~mask] == 0).all()


# --- parameters, seeding, public names ----------------------------------------------------------


def expected_parameters(kind: str, d: int, k: int) -> list[tuple[str, tuple[int, int]]]:
    combine = ("combine.weight", (d, k + d))
    return {
        "dot": [combine],
        "general": [("score_proj.weight", (d, k)), combine],
        "concat": [("score_proj.weight", (d, d + k)), ("v.weight", (1, d)), combine],
        "bahdanau": [
            ("query_proj.weight", (d, d)),
            ("key_proj.weight", (d, k)),
            ("v.weight", (1, d)),
            combine,
        ],
    }[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_parameter_names_and_shapes(kind: str) -> None:
    key_dim = 4 if kind == "dot" else 6
    att = make(kind, 4, key_dim)
    expected = expected_parameters(kind, 4, key_dim)
    assert [(n, tuple(t.shape)) for n, t in att.state_dict().items()] == expected
    assert [(n, tuple(p.shape)) for n, p in att.named_parameters()] == expected
    assert (att.d, att.key_dim, att.score) == (4, key_dim, kind)
    expected_from = "previous" if kind == "bahdanau" else "current"
    assert att.query_from == type(att).query_from == expected_from
    # key_dim defaults to d.
    assert make(kind, 5).key_dim == 5
    assert [tuple(p.shape) for p in make(kind, 5).parameters()] == [
        s for _, s in expected_parameters(kind, 5, 5)
    ]


def test_extra_repr_names_the_widths() -> None:
    assert LuongAttention(3, "general", key_dim=5).extra_repr() == "d=3, score='general', key_dim=5"
    assert BahdanauAttention(3, key_dim=5).extra_repr() == "d=3, key_dim=5"


def test_width_one_works() -> None:
    for kind in KINDS:
        att = make(kind, 1, key_dim=1)
        context, weights = att(
            torch.ones(2, 1), torch.ones(2, 3, 1), length_mask(torch.tensor([3, 1]))
        )
        assert context.shape == (2, 1) and weights.shape == (2, 3)
        assert weights.tolist()[1] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("kind", KINDS)
def test_init_is_the_documented_uniform(kind: str) -> None:
    key_dim = 4 if kind == "dot" else 7
    att = make(kind, 4, key_dim, rng=123)
    g = torch.Generator().manual_seed(123)
    for name, param in att.named_parameters():
        bound = 1.0 / math.sqrt(param.shape[1])  # fan_in: the input width
        expected = torch.empty(param.shape).uniform_(-bound, bound, generator=g)
        assert torch.equal(param.detach(), expected), name
        assert param.abs().max() <= bound


@pytest.mark.parametrize("kind", KINDS)
def test_rng_same_seed_same_weights(kind: str) -> None:
    def weights(rng: int | torch.Generator | None) -> list[Tensor]:
        return [p.detach() for p in make(kind, 4, rng=rng).parameters()]

    def same(a: list[Tensor], b: list[Tensor]) -> bool:
        return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))

    assert same(weights(1), weights(1))
    assert not same(weights(1), weights(2))
    assert same(weights(torch.Generator().manual_seed(1)), weights(1))
    shared = torch.Generator().manual_seed(1)
    assert not same(weights(shared), weights(shared))  # one generator, two draws
    torch.manual_seed(42)
    first = weights(None)
    torch.manual_seed(42)
    assert same(first, weights(None))


@pytest.mark.parametrize("rng", ["seed", 1.5, True, [1]])
def test_validation_rng_type(rng: object) -> None:
    with pytest.raises(TypeError) as info:
        LuongAttention(4, "dot", rng)  # type: ignore[arg-type]
    expected = f"rng: expected None, an int seed or a torch.Generator, got {type(rng).__name__}"
    assert str(info.value) == expected
    with pytest.raises(TypeError):
        BahdanauAttention(4, rng)  # type: ignore[arg-type]


def test_public_names() -> None:
    assert set(attention.__all__) <= set(dir(attention))
    for name in ("BahdanauAttention", "LuongAttention", "length_mask", "masked_softmax"):
        assert getattr(luong, name) is getattr(attention, name)
    assert attention.SCORES == ("dot", "general", "concat")
    assert typing.get_args(attention.Score) == attention.SCORES


# --- length_mask --------------------------------------------------------------------------------


def test_length_mask_values() -> None:
    mask = length_mask(torch.tensor([3, 1, 0]))
    assert mask.dtype == torch.bool
    assert mask.tolist() == [[True, True, True], [True, False, False], [False, False, False]]
    assert length_mask(torch.tensor([2, 0], dtype=torch.int32), max_len=4).tolist() == [
        [True, True, False, False],
        [False, False, False, False],
    ]
    assert length_mask(torch.tensor([2]), max_len=2).tolist() == [[True, True]]
    assert length_mask(torch.tensor([0, 0])).shape == (2, 0)
    assert length_mask(torch.tensor([0, 0]), max_len=0).shape == (2, 0)
    assert length_mask(torch.zeros(0, dtype=torch.long)).shape == (0, 0)
    assert length_mask(torch.zeros(0, dtype=torch.long), max_len=3).shape == (0, 3)


@pytest.mark.parametrize(
    ("lengths", "max_len", "error", "message"),
    [
        ([2, -1], None, ValueError, "lengths: expected non-negative lengths, got [2, -1]"),
        ([-3], 4, ValueError, "lengths: expected non-negative lengths, got [-3]"),
        ([3, 1], 2, ValueError, "lengths: expected every length <= max_len=2, got 3"),
        ([1], -1, ValueError, "max_len: expected a non-negative int, got -1"),
        ([1], 2.5, ValueError, "max_len: expected a non-negative int, got 2.5"),
        ([1], True, ValueError, "max_len: expected a non-negative int, got True"),
    ],
)
def test_validation_length_mask(
    lengths: list[int], max_len: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        length_mask(torch.tensor(lengths), max_len)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_validation_length_mask_type_and_rank() -> None:
    cases = [
        ([1, 2], TypeError, "lengths: expected an integer tensor [B], got list"),
        (
            torch.tensor([1.0]),
            TypeError,
            "lengths: expected an integer tensor [B], got dtype torch.float32",
        ),
        (
            torch.tensor([True]),
            TypeError,
            "lengths: expected an integer tensor [B], got dtype torch.bool",
        ),
        (
            torch.tensor([1j]),
            TypeError,
            "lengths: expected an integer tensor [B], got dtype torch.complex64",
        ),
        (
            torch.tensor([[1, 2]]),
            ValueError,
            "lengths: expected a 1-D tensor [B], got shape (1, 2)",
        ),
    ]
    for lengths, error, message in cases:
        with pytest.raises(error) as info:
            length_mask(lengths)  # type: ignore[arg-type]
        assert str(info.value) == message


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: LuongAttention(4, "bilinear"),
            "score: expected one of dot, general, concat, location, scaled_dot, got 'bilinear'",
        ),
        (lambda: LuongAttention(0, "dot"), "d: expected an int >= 1, got 0"),
        (lambda: LuongAttention(2.0, "general"), "d: expected an int >= 1, got 2.0"),
        (lambda: LuongAttention(True, "concat"), "d: expected an int >= 1, got True"),
        (
            lambda: LuongAttention(4, "general", key_dim=0),
            "key_dim: expected an int >= 1, got 0",
        ),
        (
            lambda: LuongAttention(4, "concat", key_dim=True),
            "key_dim: expected an int >= 1, got True",
        ),
        (
            lambda: LuongAttention(4, "dot", key_dim=3),
            "key_dim: the dot score needs key_dim == d = 4, got 3; "
            "use general or concat for keys of another width",
        ),
        (lambda: BahdanauAttention(-2), "d: expected an int >= 1, got -2"),
        (lambda: BahdanauAttention(4, key_dim=0), "key_dim: expected an int >= 1, got 0"),
    ],
)
def test_validation_constructor(build: typing.Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value) == message


def test_validation_dot_accepts_key_dim_equal_to_d() -> None:
    assert LuongAttention(4, "dot", key_dim=4).key_dim == 4
    assert LuongAttention(4, "general", key_dim=3).key_dim == 3


# d = 4, K = 3, B = 2, S = 5: every number in a message names one thing.
Q, KEYS, MASK = torch.zeros(2, 4), torch.zeros(2, 5, 3), torch.ones(2, 5, dtype=torch.bool)
CALLS = [
    # (what is called, with which arguments, the error, its exact message)
    (
        "forward",
        (torch.zeros(2, 5), KEYS, MASK),
        ValueError,
        "query: expected shape [B, 4], got (2, 5)",
    ),
    (
        "forward",
        (torch.zeros(2, 1, 4), KEYS, MASK),
        ValueError,
        "query: expected shape [B, 4], got (2, 1, 4)",
    ),
    (
        "forward",
        ([[0.0] * 4] * 2, KEYS, MASK),
        TypeError,
        "query: expected a tensor [B, 4], got list",
    ),
    (
        "forward",
        (Q.long(), KEYS, MASK),
        TypeError,
        "query: expected a floating-point tensor, got dtype torch.int64",
    ),
    (
        "forward",
        (Q, torch.zeros(2, 5, 4), MASK),
        ValueError,
        "keys: expected shape [B, S, 3], got (2, 5, 4)",
    ),
    (
        "forward",
        (Q, torch.zeros(2, 3), MASK),
        ValueError,
        "keys: expected shape [B, S, 3], got (2, 3)",
    ),
    (
        "forward",
        (Q, torch.zeros(3, 5, 3), MASK),
        ValueError,
        "keys: expected batch 2 (the query's), got 3",
    ),
    (
        "forward",
        (Q, KEYS, MASK[:, :4]),
        ValueError,
        "mask: expected shape [B, S] = (2, 5), got (2, 4)",
    ),
    ("forward", (Q, KEYS, MASK[0]), ValueError, "mask: expected shape [B, S] = (2, 5), got (5,)"),
    (
        "forward",
        (Q, KEYS, MASK.float()),
        ValueError,
        "mask: expected dtype torch.bool, got torch.float32",
    ),
    (
        "forward",
        (Q, KEYS, MASK.long()),
        ValueError,
        "mask: expected dtype torch.bool, got torch.int64",
    ),
    (
        "forward",
        (Q, KEYS, MASK.tolist()),
        TypeError,
        "mask: expected a bool tensor [B, S], got list",
    ),
    (
        "forward",
        (Q, KEYS, MASK, torch.zeros(2, 5, 3)),
        ValueError,
        "proj: expected shape [B, S, d] = (2, 5, 4), got (2, 5, 3)",
    ),
    (
        "scores",
        (Q, KEYS, torch.zeros(2, 4, 4)),
        ValueError,
        "proj: expected shape [B, S, d] = (2, 5, 4), got (2, 4, 4)",
    ),
    (
        "scores",
        (Q, KEYS, torch.zeros(5, 2, 4)),
        ValueError,
        "proj: expected shape [B, S, d] = (2, 5, 4), got (5, 2, 4)",
    ),
    (
        "scores",
        (Q, KEYS, "cache"),
        ValueError,
        "proj: expected shape [B, S, d] = (2, 5, 4), got str",
    ),
    ("scores", (torch.zeros(2, 3), KEYS), ValueError, "query: expected shape [B, 4], got (2, 3)"),
    (
        "scores",
        (Q, KEYS.int()),
        TypeError,
        "keys: expected a floating-point tensor, got dtype torch.int32",
    ),
    (
        "project_keys",
        (torch.zeros(2, 5, 4),),
        ValueError,
        "keys: expected shape [B, S, 3], got (2, 5, 4)",
    ),
    ("project_keys", ("keys",), TypeError, "keys: expected a tensor [B, S, 3], got str"),
    (
        "attentional",
        (Q, torch.zeros(2, 4)),
        ValueError,
        "context: expected shape [B, 3], got (2, 4)",
    ),
    (
        "attentional",
        (torch.zeros(2, 3), torch.zeros(2, 3)),
        ValueError,
        "query: expected shape [B, 4], got (2, 3)",
    ),
    (
        "attentional",
        (Q, torch.zeros(6, 3)),
        ValueError,
        "context: expected batch 2 (the query's), got 6",
    ),
]


@pytest.mark.parametrize("kind", ["general", "concat", "bahdanau"])
@pytest.mark.parametrize(
    ("method", "args", "error", "message"), CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)]
)
def test_validation_calls(
    kind: str, method: str, args: tuple, error: type[Exception], message: str
) -> None:
    att = make(kind, 4, key_dim=3)
    with pytest.raises(error) as info:
        getattr(att, method)(*args)
    assert str(info.value) == message
    # The same call with valid arguments works, so the check is not over-eager.
    valid = {"forward": (Q, KEYS, MASK), "scores": (Q, KEYS), "project_keys": (KEYS,)}
    getattr(att, method)(*valid.get(method, (Q, torch.zeros(2, 3))))


def test_validation_dot_widths() -> None:
    att = LuongAttention(4, "dot")
    with pytest.raises(ValueError) as info:
        att(Q, KEYS, MASK)
    assert str(info.value) == "keys: expected shape [B, S, 4], got (2, 5, 3)"
