"""Tests of ``luong.recurrence``: the input-fed decoder's steps as one autograd node.

Oracles: ``torch.autograd.gradcheck`` (the written-out backward against finite differences of
the forward, float64), and the decoder's step-by-step path (``Decoder._unroll_steps``, which
autograd differentiates), whose outputs and every gradient the fused path must reproduce, with
dropout between layers drawing the same masks.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import Tensor

from luong.attention import BahdanauAttention, LocalAttention, LuongAttention
from luong.decoder import Decoder, DecoderState
from luong.recurrence import Recurrence, recur

B, T, S, D, E, V = 4, 5, 6, 8, 5, 11


def make_mask() -> Tensor:
    """Padding in two rows, a row with one real position, and a row with none."""
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 4:] = False
    mask[2, 1:] = False
    mask[3, :] = False
    return mask


def inputs(lstm: bool, layers: int, key_dim: int = D, seed: int = 0) -> list[Tensor | None]:
    """Random float64 arguments of ``recur`` after its spec, all requiring gradients."""
    gen = torch.Generator().manual_seed(seed)
    width = (4 if lstm else 3) * D

    def rand(*shape: int) -> Tensor:
        return (torch.rand(*shape, generator=gen, dtype=torch.float64) - 0.5).requires_grad_()

    layer_weights = [rand(width, D), rand(width)]
    for _ in range(layers - 1):
        layer_weights += [rand(width, D), rand(width), rand(width, D), rand(width)]
    return [
        rand(T, B, width),  # gates
        rand(layers, B, D),  # hidden
        rand(layers, B, D) if lstm else None,  # cell
        rand(B, D),  # feed
        rand(B, S, key_dim),  # keys
        rand(B, S, D),  # proj
        make_mask(),
        rand(width, D),  # feed weight
        rand(D, key_dim + D),  # combine weight
        *layer_weights,
    ]


@pytest.mark.parametrize(("lstm", "layers"), [(False, 1), (True, 1), (False, 2), (True, 2)])
def test_gradcheck(lstm: bool, layers: int) -> None:
    args = inputs(lstm, layers, key_dim=D - 2)
    spec = Recurrence(lstm, layers)

    def fn(*tensors: Tensor | None) -> tuple[Tensor, Tensor]:
        return recur(spec, *tensors[:9], list(tensors[9:]))  # type: ignore[arg-type]

    assert torch.autograd.gradcheck(fn, args, atol=1e-8)


@pytest.mark.parametrize("lstm", [False, True])
def test_gradcheck_with_a_proj_shared_by_every_sentence(lstm: bool) -> None:
    """The location score: proj_s is row s of W_a, ``[S, d]``, the same for every sentence."""
    args = inputs(lstm, 1)
    args[5] = args[5][0].detach().clone().requires_grad_()  # type: ignore[index, union-attr]
    spec = Recurrence(lstm, 1)

    def fn(*tensors: Tensor | None) -> tuple[Tensor, Tensor]:
        return recur(spec, *tensors[:9], list(tensors[9:]))  # type: ignore[arg-type]

    assert torch.autograd.gradcheck(fn, args, atol=1e-8)


def test_gradcheck_with_dropout_between_layers() -> None:
    spec = Recurrence(False, 2, dropout=0.4)

    def fn(*tensors: Tensor | None) -> tuple[Tensor, Tensor]:
        with torch.random.fork_rng():
            torch.manual_seed(3)  # the same masks at every evaluation
            return recur(spec, *tensors[:9], list(tensors[9:]))  # type: ignore[arg-type]

    assert torch.autograd.gradcheck(fn, inputs(False, 2), atol=1e-8)


def test_a_row_without_real_positions_attends_nowhere_and_gets_no_gradient() -> None:
    args = inputs(False, 1)
    attentional, weights = recur(Recurrence(False, 1), *args[:9], args[9:])  # type: ignore[arg-type]
    assert torch.equal(weights[3], torch.zeros(T, S, dtype=torch.float64))
    assert torch.equal(weights[2, :, 1:], torch.zeros(T, S - 1, dtype=torch.float64))
    torch.testing.assert_close(weights[2, :, 0], torch.ones(T, dtype=torch.float64))
    torch.testing.assert_close(weights[:3].sum(-1), torch.ones(3, T, dtype=torch.float64))
    (attentional.sum() + weights.sum()).backward()
    keys, proj = args[4], args[5]
    assert torch.equal(keys.grad[3], torch.zeros_like(keys.grad[3]))  # type: ignore[index]
    assert torch.equal(proj.grad[1, 4:], torch.zeros_like(proj.grad[1, 4:]))  # type: ignore[index]


def decoder(cell: str, score: str, layers: int, dropout: float) -> Decoder:
    key_dim = 6 if score in ("general", "location") else D
    attention = LuongAttention(
        D, score, rng=0, key_dim=key_dim, max_len=S if score == "location" else None
    )
    torch.manual_seed(0)
    return Decoder(V, E, D, layers, cell, attention, True, dropout, 0).double().train()


def unroll(dec: Decoder, fused: bool, tgt: Tensor, keys: Tensor, hidden: Tensor, cell):
    """Outputs and every gradient of one teacher-forced unroll, with fixed random draws."""
    for tensor in (keys, hidden, cell):
        if tensor is not None:
            tensor.grad = None
    dec.zero_grad()
    torch.manual_seed(1)
    memory = dec.memory(keys, make_mask())
    state = DecoderState(hidden, cell, torch.zeros(B, D, dtype=torch.float64))
    if fused:
        attentional, weights = dec._unroll_fused(tgt, state, memory)
    else:
        attentional, weights = dec._unroll_steps(dec._input_gates(tgt), state, memory)
    gen = torch.Generator().manual_seed(2)
    upstream = torch.randn(attentional.shape, generator=gen, dtype=torch.float64)
    upstream_weights = torch.randn(weights.shape, generator=gen, dtype=torch.float64)
    ((attentional * upstream).sum() + (weights * upstream_weights).sum()).backward()
    # Every parameter but the output layer's, which the unroll does not reach.
    grads = [p.grad for n, p in dec.named_parameters() if not n.startswith("out.")]
    grads += [keys.grad, hidden.grad]
    grads += [cell.grad] if cell is not None else []
    return [attentional.detach(), weights.detach(), *grads]


@pytest.mark.parametrize(
    ("cell", "score", "layers", "dropout"),
    list(
        itertools.product(
            ["gru", "lstm"], ["dot", "scaled_dot", "general", "location"], [1, 2], [0.0, 0.3]
        )
    ),
)
def test_fused_path_equals_the_step_by_step_path(
    cell: str, score: str, layers: int, dropout: float
) -> None:
    dec = decoder(cell, score, layers, dropout)
    assert dec.fused
    gen = torch.Generator().manual_seed(4)
    tgt = torch.randint(1, V, (B, T), generator=gen)
    key_dim = dec.attention.key_dim
    keys = torch.randn(B, S, key_dim, generator=gen, dtype=torch.float64, requires_grad=True)
    hidden = torch.randn(layers, B, D, generator=gen, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(layers, B, D, generator=gen, dtype=torch.float64, requires_grad=True)
    cell_state = c0 if cell == "lstm" else None
    fused = unroll(dec, True, tgt, keys, hidden, cell_state)
    steps = unroll(dec, False, tgt, keys, hidden, cell_state)
    names = [n for n, _ in dec.named_parameters() if not n.startswith("out.")]
    assert len(fused) == len(steps) == 2 + len(names) + 2 + (cell == "lstm")
    for got, want in zip(fused, steps, strict=True):
        assert want is not None and got is not None
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    # The embedding gets a gradient through the gates (nothing is silently left out).
    assert fused[2 + names.index("embedding.weight")].abs().sum() > 0


def test_dropout_changes_the_result_so_the_masks_are_really_drawn() -> None:
    dec = decoder("gru", "dot", 2, 0.5)
    gen = torch.Generator().manual_seed(5)
    tgt = torch.randint(1, V, (B, T), generator=gen)
    keys = torch.randn(B, S, D, generator=gen, dtype=torch.float64, requires_grad=True)
    hidden = torch.randn(2, B, D, generator=gen, dtype=torch.float64, requires_grad=True)
    training = unroll(dec, True, tgt, keys, hidden, None)[0]
    dec.eval()
    evaluation = unroll(dec, True, tgt, keys, hidden, None)[0]
    assert not torch.allclose(training, evaluation)


@pytest.mark.parametrize(
    ("attention", "input_feed", "fused"),
    [
        (LuongAttention(D, "dot"), True, True),
        (LuongAttention(D, "scaled_dot"), True, True),
        (LuongAttention(D, "general"), True, True),
        (LuongAttention(D, "general"), False, False),  # the fast path instead
        (LuongAttention(D, "concat"), True, False),
        (LuongAttention(D, "location", max_len=S), True, True),
        (LocalAttention(D, "dot", mode="monotonic", window=2), True, False),
        (BahdanauAttention(D), True, False),
    ],
)
def test_which_decoders_train_through_the_fused_recurrence(
    attention: LuongAttention | BahdanauAttention, input_feed: bool, fused: bool
) -> None:
    dec = Decoder(V, E, D, 1, "gru", attention, input_feed, 0.0, 0)
    assert dec.fused is fused


def test_recur_rejects_bad_arguments() -> None:
    args = inputs(False, 1)
    with pytest.raises(TypeError, match="spec: expected a Recurrence, got tuple"):
        recur((False, 1), *args[:9], args[9:])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"cell: expected a cell state \[L, B, d\], got NoneType"):
        recur(Recurrence(True, 1), *args[:9], args[9:])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cell: expected None .* got Tensor"):
        recur(Recurrence(False, 1), args[0], args[1], args[1], *args[3:9], args[9:])  # type: ignore[arg-type]
    two_layers = args[1].repeat(2, 1, 1)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="layer_weights: expected 6 tensors for 2 layer"):
        recur(Recurrence(False, 2), args[0], two_layers, *args[2:9], args[9:])  # type: ignore
    no_steps = r"gates: expected \[T, B, G d\] with T >= 1, got \(0, 4, 24\)"
    with pytest.raises(ValueError, match=no_steps):
        recur(Recurrence(False, 1), args[0][:0], *args[1:9], args[9:])  # type: ignore[arg-type, index]
    with pytest.raises(
        ValueError, match=r"hidden: expected \[L, B, d\] with L = 2, got \(1, 4, 8\)"
    ):
        recur(Recurrence(False, 2), *args[:9], args[9:] * 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"keys: expected \[B, S, K\] with B = 4, got \(3, 6, 8\)"):
        recur(Recurrence(False, 1), *args[:4], args[4][:3], *args[5:9], args[9:])  # type: ignore
    with pytest.raises(ValueError, match=r"proj: expected shape \(4, 6, 8\), got \(4, 5, 8\)"):
        recur(Recurrence(False, 1), *args[:5], args[5][:, :5], *args[6:9], args[9:])  # type: ignore
    with pytest.raises(
        ValueError, match=r"combine_weight: expected shape \(8, 16\), got \(8, 15\)"
    ):
        recur(Recurrence(False, 1), *args[:8], args[8][:, :15], args[9:])  # type: ignore
    with pytest.raises(ValueError, match="mask: expected dtype torch.bool, got torch.int64"):
        recur(Recurrence(False, 1), *args[:6], args[6].long(), *args[7:9], args[9:])  # type: ignore
    with pytest.raises(ValueError, match="layers: expected an int >= 1, got 0"):
        Recurrence(False, 0)
    with pytest.raises(ValueError, match=r"dropout: expected a number in \[0, 1\), got 1.0"):
        Recurrence(False, 2, dropout=1.0)
