"""Tests of ``luong.training.loss``: the label-smoothed cross-entropy as one autograd node, against
PyTorch's own in float64 (the oracle), with padding rows left out, for float32, bfloat16
and float64 logits."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from luong.training.loss import cross_entropy

PAD = 0


def case(n: int, v: int, seed: int, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, ...]:
    """Logits ``[n, v]`` several units wide (so the max matters) and targets with every
    third one padding."""
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(n, v, generator=gen, dtype=torch.float64) * 4).to(dtype)
    targets = torch.randint(1, v, (n,), generator=gen)
    targets[::3] = PAD
    return logits, targets


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize(("n", "v"), [(2, 3), (7, 5), (64, 300)])
def test_the_loss_and_its_gradient_are_pytorchs(
    smoothing: float, reduction: str, n: int, v: int
) -> None:
    """float64 logits: equal to ``F.cross_entropy`` to float64's rounding; float32 logits:
    to float32's (against the float64 oracle)."""
    logits, targets = case(n, v, seed=n + v)
    oracle = logits.clone().requires_grad_()
    want = F.cross_entropy(
        oracle, targets, ignore_index=PAD, label_smoothing=smoothing, reduction=reduction
    )
    want.backward()
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 2e-6)):
        x = logits.detach().to(dtype).requires_grad_()
        got = cross_entropy(x, targets, PAD, smoothing, reduction)
        assert got.dtype == dtype
        got.backward()
        assert x.grad is not None and x.grad.dtype == dtype
        assert abs(float(got.detach()) - float(want.detach())) <= tol * abs(float(want.detach()))
        scale = float(oracle.grad.abs().max())
        assert float((x.grad.double() - oracle.grad).abs().max()) <= tol * scale


def test_bf16_logits_get_a_float32_loss_and_a_bf16_gradient() -> None:
    """bfloat16 logits (bf16 autocast's output layer): the loss in float32 from their exact
    values, the gradient rounded once to bfloat16 (relative 2^-8 of its largest)."""
    logits, targets = case(32, 50, seed=1, dtype=torch.bfloat16)
    x = logits.clone().requires_grad_()
    got = cross_entropy(x, targets, PAD, 0.1)
    got.backward()
    wide = logits.double().requires_grad_()
    want = F.cross_entropy(wide, targets, ignore_index=PAD, label_smoothing=0.1)
    want.backward()
    assert got.dtype == torch.float32
    assert abs(float(got.detach()) - float(want.detach())) <= 1e-6 * float(want.detach())
    assert x.grad is not None and x.grad.dtype == torch.bfloat16
    scale = float(wide.grad.abs().max())
    assert float((x.grad.double() - wide.grad).abs().max()) <= 2**-8 * scale


def test_padding_rows_count_for_nothing() -> None:
    """Rows whose target is the padding id add nothing to the loss, get a zero gradient, and
    do not count in the mean, whatever their logits (huge ones included)."""
    logits, targets = case(9, 6, seed=2)
    bigger = torch.cat([logits, torch.full((3, 6), 1e30, dtype=torch.float64)])
    padded = torch.cat([targets, torch.full((3,), PAD)])
    x = bigger.requires_grad_()
    loss = cross_entropy(x, padded, PAD, 0.1)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(
        float(cross_entropy(logits, targets, PAD, 0.1)), rel=1e-12
    )
    assert x.grad is not None and torch.equal(x.grad[9:], torch.zeros(3, 6, dtype=torch.float64))
    assert targets.eq(PAD).any()  # the case has padding of its own too


def test_no_counted_row_gives_nan_mean_and_zero_sum() -> None:
    """As PyTorch's: the mean over no rows is NaN, the sum 0."""
    logits = torch.randn(3, 4)
    targets = torch.full((3,), PAD)
    assert torch.isnan(cross_entropy(logits, targets, PAD))
    assert float(cross_entropy(logits, targets, PAD, reduction="sum")) == 0.0


def test_bad_arguments_name_what_was_expected() -> None:
    logits, targets = torch.randn(3, 4), torch.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="logits: expected a floating tensor, got a torch.int64"):
        cross_entropy(targets.view(3, 1), targets, PAD)
    with pytest.raises(TypeError, match="targets: expected an integer tensor, got a torch.float32"):
        cross_entropy(logits, targets.float(), PAD)
    with pytest.raises(ValueError, match=r"expected \[N, V\] and \[N\], got \(3, 4\) and \(2,\)"):
        cross_entropy(logits, targets[:2], PAD)
    with pytest.raises(ValueError, match=r"label_smoothing: expected a number in \[0, 1\), got 1"):
        cross_entropy(logits, targets, PAD, 1)
    with pytest.raises(ValueError, match="reduction: expected one of mean, sum, got 'none'"):
        cross_entropy(logits, targets, PAD, reduction="none")
