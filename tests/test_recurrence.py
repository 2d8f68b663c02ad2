"""Tests of ``luong.model.recurrence``: the input-fed decoder's steps as one autograd node.

Oracles: ``torch.autograd.gradcheck`` (the written-out backward against finite differences of
the forward, float64), and the decoder's step-by-step path, which autograd differentiates:
``Decoder.step`` T times (what search runs), whose outputs and every gradient the fused
``Decoder.forward`` must reproduce, in float64 to 1e-12 and in float32 to a stated tolerance
(``FLOAT32``); with dropout, the ``forward`` of a decoder that is not ``fused``, whose masks
(on the embeddings, between layers, before the output layer) the fused path draws alike.
Only public names of luong are used.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from torch import Tensor

from luong.model.attention import BahdanauAttention, LuongAttention
from luong.model.decoder import Decoder, DecoderState
from luong.model.local_attention import LocalAttention
from luong.model.recurrence import Recurrence, recur

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


class StepByStep(Decoder):
    """A decoder that is never ``fused``: its ``forward`` trains step by step."""

    @property
    def fused(self) -> bool:
        return False


def decoder(
    cell: str,
    score: str,
    layers: int,
    dropout: float,
    dtype: torch.dtype = torch.float64,
    kind: type[Decoder] = Decoder,
) -> Decoder:
    """A decoder in training mode, the same weights for the same arguments (``kind`` aside)."""
    key_dim = 6 if score in ("general", "location") else D
    attention = LuongAttention(
        D, score, rng=0, key_dim=key_dim, max_len=S if score == "location" else None
    )
    torch.manual_seed(0)
    return kind(V, E, D, layers, cell, attention, True, dropout, 0).to(dtype).train()


@pytest.fixture
def recur_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the decoder calls ``recur`` (the fused path), one entry per call."""
    calls: list[int] = []

    def counted(*args: Any) -> tuple[Tensor, Tensor]:
        calls.append(1)
        return recur(*args)

    monkeypatch.setattr("luong.model.decoder.recur", counted)
    return calls


def teacher_forced(
    dec: Decoder, stepped: bool, tgt: Tensor, keys: Tensor, hidden: Tensor, cell: Tensor | None
) -> list[Tensor]:
    """Logits, attention weights and the gradient of every parameter and of the keys and
    initial state, from one teacher-forced pass with fixed random draws: ``Decoder.forward``
    over the whole target (which takes the fused recurrence where ``fused`` allows it), or
    (``stepped``) a loop of ``Decoder.step``, the step-by-step path search runs."""
    for tensor in (keys, hidden, cell):
        if tensor is not None:
            tensor.grad = None
    dec.zero_grad()
    torch.manual_seed(1)
    memory = dec.memory(keys, make_mask())
    state = DecoderState(hidden, cell, hidden.new_zeros(B, D))
    if stepped:
        steps = []
        for tokens in tgt.unbind(1):
            step_logits, state, step_weights = dec.step(tokens, state, memory)
            steps.append((step_logits, step_weights))
        logits = torch.stack([step[0] for step in steps], dim=1)
        weights = torch.stack([step[1] for step in steps], dim=1)
    else:
        logits, weights = dec(tgt, state, memory)
    gen = torch.Generator().manual_seed(2)  # drawn in float64: the same numbers for float32
    upstream = torch.randn(logits.shape, generator=gen, dtype=torch.float64).to(logits.dtype)
    upstream_weights = torch.randn(weights.shape, generator=gen, dtype=torch.float64)
    upstream_weights = upstream_weights.to(weights.dtype)
    ((logits * upstream).sum() + (weights * upstream_weights).sum()).backward()
    grads = [p.grad for _, p in dec.named_parameters()]
    grads += [keys.grad, hidden.grad]
    grads += [cell.grad] if cell is not None else []
    assert all(grad is not None for grad in grads)  # nothing is silently left out
    return [logits.detach(), weights.detach(), *grads]  # type: ignore[list-item]


def unroll_inputs(
    dec: Decoder, layers: int, lstm: bool, dtype: torch.dtype, seed: int = 4
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """Target inputs ``[B, T]``, keys ``[B, S, K]``, h_0 and c_0 ``[L, B, d]`` (c_0 None for
    a GRU), drawn in float64 (the same numbers, rounded, in float32), requiring gradients."""
    gen = torch.Generator().manual_seed(seed)
    tgt = torch.randint(1, V, (B, T), generator=gen)

    def rand(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype).requires_grad_()

    keys = rand(B, S, dec.attention.key_dim)
    hidden = rand(layers, B, D)
    cell = rand(layers, B, D)
    return tgt, keys, hidden, cell if lstm else None


CASES = list(
    itertools.product(["gru", "lstm"], ["dot", "scaled_dot", "general", "location"], [1, 2])
)

# The tolerances of the fused path against the step-by-step one (the test's docstring says why).
FLOAT32 = {"rtol": 1e-5, "atol": 1e-5}
FLOAT64 = {"rtol": 1e-12, "atol": 1e-12}


@pytest.mark.parametrize(("cell", "score", "layers"), CASES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_fused_path_equals_the_step_by_step_path(
    cell: str, score: str, layers: int, dtype: torch.dtype, recur_calls: list[int]
) -> None:
    """``Decoder.forward`` (the fused recurrence) against ``Decoder.step`` T times: logits,
    attention weights and every gradient, in float64 to 1e-12 and in float32 to 1e-5
    (absolute, plus 1e-5 relative); and the float32 fused path against the float64 result,
    to the same tolerance: it is as accurate as the step path.

    Why 1e-5 in float32: both paths compute the same function with the same float32
    operations, summed in another order (the fused backward forms each weight's gradient as
    one product over all T x B rows where the step path adds T products; a step looks up its
    tokens' gates where the fused path gathers them from a table of the vocabulary's). Each
    compared number is a sum of at most a few hundred products of terms below 10, carried
    through T = 5 steps of saturating cells, so the paths differ by rounding alone, a few
    units in the last place of the largest values (float32's unit roundoff is 2^-24 = 6e-8;
    a unit in the last place of numbers in [4, 8) is 4.8e-7). Measured: at most 9.5e-7
    between the paths, 8.7e-7 between either and float64, on values up to 7.3. The tolerance
    is ten times that, and below what a loss of precision alone makes: h~_t rounded to
    float16 at each step of the fused forward differs by 9e-5 and more (every float32 case
    fails); the faults tried in the written-out backward (a term of the softmax's or of
    h~_t's gradient left out) differ by 1e-2 and more. In float64 the same rounding is near
    1e-15: 1e-12 leaves the same margin."""
    dec = decoder(cell, score, layers, 0.0, dtype)
    assert dec.fused
    inputs = unroll_inputs(dec, layers, cell == "lstm", dtype)
    fused = teacher_forced(dec, False, *inputs)
    assert len(recur_calls) == 1  # forward took the fused path ...
    steps = teacher_forced(dec, True, *inputs)
    assert len(recur_calls) == 1  # ... and the steps did not
    names = [n for n, _ in dec.named_parameters()]
    labels = ["logits", "weights", *names, "keys", "hidden", *(["cell"] if cell == "lstm" else [])]
    assert len(fused) == len(steps) == len(labels)
    tolerance = FLOAT64 if dtype == torch.float64 else FLOAT32
    for label, got, want in zip(labels, fused, steps, strict=True):
        assert got.dtype == want.dtype == dtype, label
        torch.testing.assert_close(got, want, **tolerance, msg=lambda m, n=label: f"{n}: {m}")
        # Every parameter gets a gradient through the unroll (the embedding through the gates).
        assert got.abs().sum() > 0, label
    if dtype == torch.float32:
        exact = decoder(cell, score, layers, 0.0, torch.float64)
        truth = teacher_forced(
            exact, True, *unroll_inputs(exact, layers, cell == "lstm", torch.float64)
        )
        for label, got, want in zip(labels, fused, truth, strict=True):
            msg = lambda m, n=label: f"{n} against float64: {m}"  # noqa: E731
            torch.testing.assert_close(got.double(), want, **FLOAT32, msg=msg)


@pytest.mark.parametrize(("cell", "score", "layers"), CASES)
def test_fused_path_with_dropout_equals_the_step_by_step_path(
    cell: str, score: str, layers: int, recur_calls: list[int]
) -> None:
    """With dropout (embeddings, between layers, before the output layer), the fused
    ``Decoder.forward`` draws the masks the step-by-step ``forward`` draws, in the same
    order: the same outputs and gradients (float64). The step-by-step ``forward`` is that of a
    decoder whose ``fused`` is False, with the same weights."""
    dec = decoder(cell, score, layers, 0.3)
    stepwise = decoder(cell, score, layers, 0.3, kind=StepByStep)
    assert dec.fused and not stepwise.fused
    for (name, a), b in zip(dec.state_dict().items(), stepwise.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    inputs = unroll_inputs(dec, layers, cell == "lstm", torch.float64)
    fused = teacher_forced(dec, False, *inputs)
    assert len(recur_calls) == 1
    steps = teacher_forced(stepwise, False, *inputs)
    assert len(recur_calls) == 1
    for got, want in zip(fused, steps, strict=True):
        torch.testing.assert_close(got, want, **FLOAT64)


def test_dropout_changes_the_result_so_the_masks_are_really_drawn() -> None:
    dec = decoder("gru", "dot", 2, 0.5)
    inputs = unroll_inputs(dec, 2, False, torch.float64, seed=5)
    training = teacher_forced(dec, False, *inputs)[0]
    dec.eval()
    evaluation = teacher_forced(dec, False, *inputs)[0]
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
    attention: LuongAttention | BahdanauAttention,
    input_feed: bool,
    fused: bool,
    recur_calls: list[int],
) -> None:
    dec = Decoder(V, E, D, 1, "gru", attention, input_feed, 0.0, 0).double()
    assert dec.fused is fused
    tgt, keys, hidden, _ = unroll_inputs(dec, 1, False, torch.float64)
    logits, weights = dec(
        tgt, DecoderState(hidden, None, hidden.new_zeros(B, D)), dec.memory(keys, make_mask())
    )
    assert len(recur_calls) == fused  # forward goes through recur exactly when fused
    assert logits.shape == (B, T, V) and weights.shape == (B, T, S)


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
