"""The cross-entropy of a batch of logits with label smoothing, as one autograd node that
computes in float32 (float64 for float64 logits) whatever the logits' dtype, in a few passes
over ``[N, V]``.

With smoothing eps over V classes, the target distribution puts 1 - eps on the reference
token y and eps / V on every class (Szegedy et al. 2016, section 7), so each row's loss is

    loss = -(1 - eps) log p_y - (eps / V) sum_j log p_j
         = lse - (1 - eps) x_y - (eps / V) sum_j x_j          lse = log sum_j exp x_j

and its gradient with respect to the logits is

    d loss / d x_j = p_j - (1 - eps) [j = y] - eps / V

What ``F.cross_entropy(..., label_smoothing=eps)`` computes, rows whose target is
``ignore_index`` contributing nothing. Why a node of its own: PyTorch's builds the smoothed
loss from ``log_softmax`` and a sum over the classes, whose backward adds several ``[N, V]``
tensors; on the translation preset's 2,048-token batches with 4,000 pieces that was about a
third of a float32 training step on one thread (docs/performance.md, "Mixed precision"). Here
the forward keeps exp(x - max) (float32 ``[N, V]``, the only large buffer) and the backward
turns it into the gradient in place: the gradient is written in the logits' dtype, so bf16
logits get a bf16 gradient for the output layer's bf16 product, while the sums, the
log-sum-exp and the loss stay in float32.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from luong.common.errors import LuongError, LuongTypeError

__all__ = ["REDUCTIONS", "cross_entropy"]

REDUCTIONS: tuple[str, ...] = ("mean", "sum")
"""How the rows' losses are reduced: their mean over the counted rows, or their sum."""


def cross_entropy(
    logits: Tensor,
    targets: Tensor,
    ignore_index: int,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
) -> Tensor:
    """The (label-smoothed) cross-entropy of ``logits`` ``[N, V]`` (float32, bfloat16 or
    float16) against ``targets`` ``[N]``, over the rows whose target is not
    ``ignore_index``: their mean (``"mean"``; NaN without such rows, as PyTorch's) or their
    sum (``"sum"``), a float32 scalar (float64 for float64 logits).

    Raises:
        TypeError: ``logits`` not a floating tensor, ``targets`` not an integer tensor.
        ValueError: shapes that disagree, ``label_smoothing`` outside [0, 1), a reduction
            other than ``REDUCTIONS``.
    """
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        raise LuongTypeError(f"logits: expected a floating tensor, got {_kind(logits)}")
    if not isinstance(targets, Tensor) or targets.is_floating_point() or targets.is_complex():
        raise LuongTypeError(f"targets: expected an integer tensor, got {_kind(targets)}")
    if logits.dim() != 2 or targets.shape != logits.shape[:1]:
        raise LuongError(
            f"logits, targets: expected [N, V] and [N], got {tuple(logits.shape)} and "
            f"{tuple(targets.shape)}"
        )
    if not 0.0 <= label_smoothing < 1.0:
        raise LuongError(f"label_smoothing: expected a number in [0, 1), got {label_smoothing!r}")
    if reduction not in REDUCTIONS:
        raise LuongError(f"reduction: expected one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    loss: Tensor = _CrossEntropy.apply(
        logits, targets, ignore_index, float(label_smoothing), reduction == "mean"
    )
    return loss


def _kind(value: object) -> str:
    return f"a {value.dtype} tensor" if isinstance(value, Tensor) else type(value).__name__


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, logits: Tensor, targets: Tensor, ignore: int, smoothing: float, mean: bool
    ) -> Tensor:
        counted = targets != ignore  # [N]
        safe = torch.where(counted, targets, 0).unsqueeze(1)  # a valid index in every row
        # One copy of bf16 / fp16 logits in float32; float32 (or float64) logits themselves.
        x = logits.to(torch.promote_types(logits.dtype, torch.float32))
        rows = -(1.0 - smoothing) * x.gather(1, safe).squeeze(1)
        if smoothing:
            rows = rows - (smoothing / x.shape[1]) * x.sum(1)
        top = x.amax(1, keepdim=True)  # [N, 1]
        # exp(x - max), kept for the backward: into the copy, or a new buffer for float32.
        exps = (x.sub_(top) if x is not logits else x - top).exp_()
        total = exps.sum(1)  # [N]
        rows = rows + top.squeeze(1) + total.log()  # + lse
        rows = torch.where(counted, rows, 0.0)
        count = counted.sum()
        loss = rows.sum() / count if mean else rows.sum()
        ctx.save_for_backward(exps, total, safe, counted, count)
        ctx.smoothing, ctx.mean, ctx.dtype = smoothing, mean, logits.dtype
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        exps, total, safe, counted, count = ctx.saved_tensors
        smoothing = ctx.smoothing
        scale = grad / count if ctx.mean else grad  # d loss / d row, for every counted row
        per_row = torch.where(counted, scale, 0.0)  # [N]
        # p_j - eps / V - (1 - eps) [j = y], each row times its d loss / d row, in place.
        grad_x = exps.mul_((per_row / total).unsqueeze(1))
        if smoothing:
            grad_x.sub_((per_row * (smoothing / exps.shape[1])).unsqueeze(1))
        grad_x.scatter_add_(1, safe, (-(1.0 - smoothing) * per_row).unsqueeze(1))
        return grad_x.to(ctx.dtype), None, None, None, None
