"""The input-fed decoder's recurrence over a whole target sequence, with its backward written
out: one ``torch.autograd.Function`` in place of the T steps that autograd would record.

It computes what ``Decoder`` computes step by step for a global Luong attention whose score
is h . proj_s (dot, scaled_dot and general, where ``proj`` holds the keys' share of the score
for each sentence, ``[B, S, d]``, and location, where proj_s is row s of W_a for every
sentence, ``[S, d]``) and input feeding, for stacked GRU or LSTM cells with ``nn.GRU`` /
``nn.LSTM`` weights:

    g_t     = G_t + W_f h~_{t-1}                 layer 0's input gates; G_t, the embedding's
                                                 share with its bias, comes in for all t
    h^l_t   = cell(g^l_t, h^l_{t-1})             g^l_t = W_ih^l drop(h^{l-1}_t) + b_ih^l, l > 0
    a_t     = softmax over the mask of h^L_t . proj_s      (eq. 7)
    c_t     = sum_s a_t(s) k_s
    h~_t    = tanh(W_c [c_t ; h^L_t])            (eq. 5), fed to step t + 1

Why: a training step of a small model is made of many small operations, and autograd pays for
each of them twice, with every weight's gradient accumulated at every step (``mm`` then
``add_``). Here the forward runs without recording; the backward walks the steps in reverse
with only the products that carry the gradient from one step to the previous one, then forms
each weight's gradient in one product over all steps (``X^T G`` with the T x B rows stacked),
and the keys' and projections' gradients in one (batched) product each.

Dropout between the layers draws its masks exactly as ``F.dropout`` on each step's layer
input in the same order would, so a run is the same with either path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from luong.errors import LuongError, LuongTypeError

__all__ = ["Recurrence", "recur"]


@dataclass(frozen=True)
class Recurrence:
    """What the recurrence needs to know besides its tensors: the cell (LSTM or GRU), the
    number of stacked layers, and the dropout rate between layers while training (0: none)."""

    lstm: bool
    layers: int
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.layers, int) or isinstance(self.layers, bool) or self.layers < 1:
            raise LuongError(f"layers: expected an int >= 1, got {self.layers!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise LuongError(f"dropout: expected a number in [0, 1), got {self.dropout!r}")


def recur(
    spec: Recurrence,
    gates: Tensor,
    hidden: Tensor,
    cell: Tensor | None,
    feed: Tensor,
    keys: Tensor,
    proj: Tensor,
    mask: Tensor,
    feed_weight: Tensor,
    combine_weight: Tensor,
    layer_weights: Sequence[Tensor],
) -> tuple[Tensor, Tensor]:
    """The recurrence above over T steps.

    Args:
        spec: the cell, the layers and the dropout between them.
        gates: G, the embedding's share of layer 0's input gates with b_ih^0, time first:
            ``[T, B, G d]`` (any strides).
        hidden: h_0 ``[L, B, d]``; cell: c_0 ``[L, B, d]`` for an LSTM, None for a GRU.
        feed: h~_0 ``[B, d]``.
        keys: ``[B, S, K]``; proj: the keys' share of the score ``[B, S, d]``, or ``[S, d]``
            the same for every sentence (location); mask ``[B, S]``.
        feed_weight: W_f ``[G d, d]``, the feed's columns of layer 0's input weight.
        combine_weight: W_c ``[d, K + d]``.
        layer_weights: W_hh^0, b_hh^0, then W_ih^l, b_ih^l, W_hh^l, b_hh^l for each l > 0.

    Returns:
        the attentional states h~_1 .. h~_T ``[B, T, d]`` and the attention weights
        ``[B, T, S]``.
    """
    if not isinstance(spec, Recurrence):
        raise LuongTypeError(f"spec: expected a Recurrence, got {type(spec).__name__}")
    if (cell is not None) != spec.lstm:
        want = "a cell state [L, B, d]" if spec.lstm else "None (a GRU has no cell state)"
        raise LuongError(f"cell: expected {want}, got {type(cell).__name__}")
    if gates.dim() != 3 or gates.shape[0] < 1:
        raise LuongError(f"gates: expected [T, B, G d] with T >= 1, got {tuple(gates.shape)}")
    _check_shapes(spec, gates, hidden, cell, feed, keys, proj, mask, feed_weight, combine_weight)
    expected = 2 + 4 * (spec.layers - 1)
    if len(layer_weights) != expected:
        raise LuongError(
            f"layer_weights: expected {expected} tensors for {spec.layers} layer(s), "
            f"got {len(layer_weights)}"
        )
    tensors = (
        gates, hidden, cell, feed, keys, proj, mask, feed_weight, combine_weight, *layer_weights,
    )  # fmt: skip
    if not _autocast_on(gates.device.type):
        attentional, weights = _Recur.apply(spec, *tensors)
        return attentional, weights
    # Under autocast (--precision bf16 or fp16) the gates, keys and states come in bfloat16
    # or float16 while the weights stay float32, and the forward writes every step into
    # buffers of one dtype with out=. So the recurrence computes in its weights' dtype
    # (float32): its inputs cast to it and autocast off inside, in the backward too
    # (``_without_autocast``). torch.amp.custom_fwd(cast_inputs=torch.float32) and
    # custom_bwd do the same, but each is bound to one device type when the class is
    # defined, and this runs on the CPU, CUDA and MPS alike. Autograd records the casts:
    # each input's gradient comes back in its own dtype. Why float32 inside: bfloat16 keeps
    # 8 bits, and T steps of saturating cells would compound its rounding, while a chain of
    # small per-step products gains little from half precision (docs/performance.md,
    # "Mixed precision").
    dtype = combine_weight.dtype
    cast = [t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors]
    with torch.autocast(gates.device.type, enabled=False):
        attentional, weights = _Recur.apply(spec, *cast)
    return attentional, weights


def _autocast_on(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` in this thread."""
    return torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type)


def _without_autocast(backward: Callable[..., Any]) -> Callable[..., Any]:
    """``backward`` with autocast off for the device of its saved tensors: a backward called
    within autocast would run its products in half precision into float32 buffers."""

    @functools.wraps(backward)
    def run(ctx: Any, *grads: Tensor | None) -> Any:
        device_type = ctx.saved_tensors[0].device.type
        if not _autocast_on(device_type):
            return backward(ctx, *grads)
        with torch.autocast(device_type, enabled=False):
            return backward(ctx, *grads)

    return run


def _check_shapes(
    spec: Recurrence,
    gates: Tensor,
    hidden: Tensor,
    cell: Tensor | None,
    feed: Tensor,
    keys: Tensor,
    proj: Tensor,
    mask: Tensor,
    feed_weight: Tensor,
    combine_weight: Tensor,
) -> None:
    """Raise ValueError unless the tensors' shapes agree with each other and with ``spec``."""
    if hidden.dim() != 3 or hidden.shape[0] != spec.layers:
        raise LuongError(
            f"hidden: expected [L, B, d] with L = {spec.layers}, got {tuple(hidden.shape)}"
        )
    batch, d = hidden.shape[1], hidden.shape[2]
    if keys.dim() != 3 or keys.shape[0] != batch:
        raise LuongError(f"keys: expected [B, S, K] with B = {batch}, got {tuple(keys.shape)}")
    source, key_dim = keys.shape[1], keys.shape[2]
    width = (4 if spec.lstm else 3) * d
    expected = {
        "gates": (gates, (gates.shape[0], batch, width)),
        "cell": (cell, tuple(hidden.shape)),
        "feed": (feed, (batch, d)),
        "proj": (proj, (batch, source, d) if proj.dim() == 3 else (source, d)),
        "mask": (mask, (batch, source)),
        "feed_weight": (feed_weight, (width, d)),
        "combine_weight": (combine_weight, (d, key_dim + d)),
    }
    for name, (tensor, shape) in expected.items():
        if tensor is not None and tuple(tensor.shape) != shape:
            raise LuongError(f"{name}: expected shape {shape}, got {tuple(tensor.shape)}")
    if mask.dtype != torch.bool:
        raise LuongError(f"mask: expected dtype torch.bool, got {mask.dtype}")


def _gru_forward(
    gates_in: Tensor, gates_h: Tensor, h: Tensor, rz: Tensor, n: Tensor, out: Tensor
) -> None:
    """``nn.GRU``'s cell (gate order r, z, n) into ``out``; the gates r, z ``[B, 2 d]`` and the
    candidate n ``[B, d]``, which the backward reads, into ``rz`` and ``n``."""
    d = h.shape[-1]
    torch.sigmoid(gates_in[:, : 2 * d] + gates_h[:, : 2 * d], out=rz)
    torch.tanh(torch.addcmul(gates_in[:, 2 * d :], rz[:, :d], gates_h[:, 2 * d :]), out=n)
    torch.addcmul(n, rz[:, d:], h - n, out=out)  # (1 - z) n + z h


def _gru_factors(acts: Tensor, gates_h: Tensor, states: Tensor) -> tuple[Tensor, ...]:
    """What the GRU's backward multiplies by, for all steps at once: from r, z, n ``acts``
    ``[T, B, 3 d]``, the recurrent gates ``gates_h`` and the states h_0 .. h_T, the gates r
    and z and the derivatives of h' = n + z (h - n) through n = tanh(a) (a = n_in + r n_h),
    of a through r's pre-activation, and of h' through z's."""
    d = states.shape[-1]
    r, z, n = acts.split(d, dim=2)
    through_n = (1 - z) * (1 - n * n)
    through_r = gates_h[..., 2 * d :] * (r - r * r)
    through_z = (states[:-1] - n) * (z - z * z)
    return r, z, through_n, through_r, through_z


def _gru_step_backward(
    grad: Tensor, t: int, factors: tuple[Tensor, ...], grad_in: Tensor, grad_h: Tensor
) -> Tensor:
    """Step t's gradients of the input and recurrent gate pre-activations ``[B, 3 d]`` (into
    ``grad_in`` and ``grad_h``) from that of its new state; returns the direct part of the
    previous state's gradient, z times the new state's."""
    r, z, through_n, through_r, through_z = factors
    d = grad.shape[-1]
    grad_a = torch.mul(grad, through_n[t], out=grad_in[:, 2 * d :])
    torch.mul(grad_a, through_r[t], out=grad_in[:, :d])
    torch.mul(grad, through_z[t], out=grad_in[:, d : 2 * d])
    grad_h[:, : 2 * d] = grad_in[:, : 2 * d]
    torch.mul(grad_a, r[t], out=grad_h[:, 2 * d :])
    return grad * z[t]


def _lstm_forward(gates: Tensor, c: Tensor, acts: Tensor, c_out: Tensor, out: Tensor) -> None:
    """``nn.LSTM``'s cell (gate order i, f, g, o) from its summed gates: the new state into
    ``out``, the new cell state into ``c_out``, and into ``acts`` ``[B, 5 d]`` what the backward
    reads: the gates i, f, g, o after their nonlinearities and tanh of the new cell state."""
    d = c.shape[-1]
    torch.sigmoid(gates[:, : 2 * d], out=acts[:, : 2 * d])
    torch.tanh(gates[:, 2 * d : 3 * d], out=acts[:, 2 * d : 3 * d])
    torch.sigmoid(gates[:, 3 * d :], out=acts[:, 3 * d : 4 * d])
    i, f, g, o = acts[:, : 4 * d].chunk(4, dim=1)
    torch.addcmul(f * c, i, g, out=c_out)
    tanh_c = torch.tanh(c_out, out=acts[:, 4 * d :])
    torch.mul(o, tanh_c, out=out)


def _lstm_factors(acts: Tensor, cells: Tensor) -> tuple[Tensor, ...]:
    """What the LSTM's backward multiplies by, for all steps at once: from i, f, g, o and
    tanh(c_t) ``acts`` ``[T, B, 5 d]`` and the cell states c_0 .. c_T, the gate f, the
    derivative of h_t = o tanh(c_t) through c_t, those of c_t = f c_{t-1} + i g through i's,
    f's and g's pre-activations ``[T, B, 3 d]``, and that of h_t through o's."""
    i, f, g, o, tanh_c = acts.chunk(5, dim=2)
    through_c = o * (1 - tanh_c * tanh_c)
    through_ifg = torch.cat([g * (i - i * i), cells[:-1] * (f - f * f), i * (1 - g * g)], dim=2)
    return f, through_c, through_ifg, tanh_c * (o - o * o)


def _lstm_step_backward(
    grad: Tensor, grad_c: Tensor, t: int, factors: tuple[Tensor, ...], grad_gates: Tensor
) -> Tensor:
    """Step t's gradient of the gate pre-activations ``[B, 4 d]`` (into ``grad_gates``) from
    those of its new hidden and cell states; returns the previous cell state's."""
    f, through_c, through_ifg, through_o = factors
    batch, d = grad.shape
    grad_c = torch.addcmul(grad_c, grad, through_c[t])
    ifg = grad_gates[:, : 3 * d].view(batch, 3, d)
    torch.mul(through_ifg[t].view(batch, 3, d), grad_c.unsqueeze(1), out=ifg)
    torch.mul(grad, through_o[t], out=grad_gates[:, 3 * d :])
    return grad_c * f[t]


def _rows(tensor: Tensor) -> Tensor:
    """``[T, B, X] -> [T * B, X]``: the rows of all steps, for one product over them."""
    return tensor.reshape(-1, tensor.shape[-1])


class _Recur(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        spec: Recurrence,
        gates: Tensor,
        hidden: Tensor,
        cell: Tensor | None,
        feed: Tensor,
        keys: Tensor,
        proj: Tensor,
        mask: Tensor,
        feed_weight: Tensor,
        combine_weight: Tensor,
        *layer_weights: Tensor,
    ) -> tuple[Tensor, Tensor]:
        steps, batch, width = gates.shape
        d, key_dim, layers = hidden.shape[-1], keys.shape[-1], spec.layers
        new = hidden.new_empty
        # Every per-step value the backward reads goes into a [T (+ 1), B, ...] buffer, so the
        # weights' gradients are one product over the rows of all steps.
        states = [new(steps + 1, batch, d) for _ in range(layers)]  # h^l_0 .. h^l_T
        cells = [new(steps + 1, batch, d) for _ in range(layers)] if spec.lstm else []
        # GRU: r, z, n; LSTM: i, f, g, o, tanh(c_t).
        acts = [new(steps, batch, (5 if spec.lstm else 3) * d) for _ in range(layers)]
        # GRU: W_hh h + b_hh, whose n part the backward reads.
        recurrent = [new(steps, batch, width) for _ in range(layers)] if not spec.lstm else []
        # Layer l's input, l > 0: the layer below's states, or with dropout their dropped copy.
        below = (
            [new(steps, batch, d) for _ in range(layers - 1)]
            if spec.dropout
            else [states[layer][1:] for layer in range(layers - 1)]
        )
        masks = [new(steps, batch, d) for _ in range(layers - 1)] if spec.dropout else []
        feeds = new(steps + 1, batch, d)  # h~_0 .. h~_T
        contexts = new(steps, batch, key_dim)
        weights = new(steps, batch, keys.shape[1])
        for layer in range(layers):
            states[layer][0] = hidden[layer]
            if cell is not None:
                cells[layer][0] = cell[layer]
        feeds[0] = feed
        proj_t, combine_context, combine_query = (
            proj.transpose(-2, -1), combine_weight[:, :key_dim].t(), combine_weight[:, key_dim:].t()
        )  # fmt: skip
        # The mask as a bias added to the scores: 0 at real positions, -inf at padding (what
        # masked_softmax fills in), and 0 throughout a row with no real position, whose
        # weights the mask then zeroes (one host read a call, not one a step).
        empty_rows = ~mask.any(1, keepdim=True)
        bias = torch.zeros_like(mask, dtype=proj.dtype).masked_fill_(~mask, float("-inf"))
        bias = bias.masked_fill_(empty_rows, 0.0)  # [B, S]
        shared = proj.dim() == 2  # one proj_s for every sentence (location)
        empty = bool(empty_rows.any())
        for t in range(steps):
            gates_in = torch.addmm(gates[t], feeds[t], feed_weight.t())
            for layer in range(layers):
                w_hh, b_hh = layer_weights[4 * layer], layer_weights[4 * layer + 1]
                h = states[layer][t]
                if layer > 0:
                    w_ih, b_ih = layer_weights[4 * layer - 2], layer_weights[4 * layer - 1]
                    x = states[layer - 1][t + 1]
                    if spec.dropout:
                        # The mask F.dropout would draw for x (same shape, same generator).
                        drop = F.dropout(torch.ones_like(x), spec.dropout, True)
                        masks[layer - 1][t] = drop
                        x = torch.mul(x, drop, out=below[layer - 1][t])
                    gates_in = torch.addmm(b_ih, x, w_ih.t())
                if spec.lstm:
                    summed = torch.addmm(gates_in + b_hh, h, w_hh.t())
                    _lstm_forward(
                        summed, cells[layer][t], acts[layer][t], cells[layer][t + 1],
                        states[layer][t + 1],
                    )  # fmt: skip
                else:
                    gates_h = torch.addmm(b_hh, h, w_hh.t(), out=recurrent[layer][t])
                    step_acts = acts[layer][t]
                    _gru_forward(
                        gates_in, gates_h, h, step_acts[:, : 2 * d], step_acts[:, 2 * d :],
                        states[layer][t + 1],
                    )  # fmt: skip
            top = states[-1][t + 1]
            if shared:
                scores = torch.addmm(bias, top, proj_t)  # [B, S]
            else:
                scores = torch.baddbmm(bias.unsqueeze(1), top.unsqueeze(1), proj_t).squeeze(1)
            weights[t] = scores.softmax(1) if not empty else scores.softmax(1) * mask
            torch.bmm(weights[t].unsqueeze(1), keys, out=contexts[t].unsqueeze(1))
            combined = torch.addmm(contexts[t].mm(combine_context), top, combine_query)
            torch.tanh(combined, out=feeds[t + 1])
        ctx.set_materialize_grads(False)
        ctx.spec = spec
        ctx.buffers = (states, cells, acts, recurrent, below, masks, feeds, contexts, weights)
        ctx.save_for_backward(keys, proj, feed_weight, combine_weight, *layer_weights)
        return feeds[1:].transpose(0, 1).contiguous(), weights.transpose(0, 1).contiguous()

    @staticmethod
    @_without_autocast
    @once_differentiable
    def backward(
        ctx: Any, grad_out: Tensor | None, grad_weights: Tensor | None
    ) -> tuple[Tensor | None, ...]:
        spec: Recurrence = ctx.spec
        keys, proj, feed_weight, combine_weight, *layer_weights = ctx.saved_tensors
        states, cells, acts, recurrent, below, masks, feeds, contexts, weights = ctx.buffers
        layers = spec.layers
        steps, batch, d = feeds.shape[0] - 1, feeds.shape[1], feeds.shape[2]
        if grad_out is None:  # only the attention weights were used
            grad_out = feeds.new_zeros(batch, steps, d)
        key_dim, width = keys.shape[-1], feed_weight.shape[0]
        new = feeds.new_empty
        grad_in = [new(steps, batch, width) for _ in range(layers)]  # input gates
        grad_rec = [new(steps, batch, width) for _ in range(layers)] if not spec.lstm else grad_in
        grad_pre = new(steps, batch, d)  # into tanh of eq. 5
        grad_context = new(steps, batch, key_dim)
        grad_scores = new(steps, batch, keys.shape[1])
        grad_h = [feeds.new_zeros(batch, d) for _ in range(layers)]
        grad_c = [feeds.new_zeros(batch, d) for _ in range(layers)] if spec.lstm else []
        grad_feed = grad_out[:, -1]  # the gradient of h~_T, then of each earlier h~_t
        keys_t = keys.transpose(1, 2)
        combine_context, combine_query = combine_weight[:, :key_dim], combine_weight[:, key_dim:]
        # The factors that do not depend on the gradient, for all steps in a few operations.
        through_tanh = 1 - feeds[1:] * feeds[1:]  # eq. 5's tanh
        factors = [
            _lstm_factors(acts[layer], cells[layer])
            if spec.lstm
            else _gru_factors(acts[layer], recurrent[layer], states[layer])
            for layer in range(layers)
        ]
        for t in reversed(range(steps)):
            pre = torch.mul(grad_feed, through_tanh[t], out=grad_pre[t])
            g_context = torch.mm(pre, combine_context, out=grad_context[t])
            g_weights = torch.bmm(g_context.unsqueeze(1), keys_t).squeeze(1)  # [B, S]
            if grad_weights is not None:
                g_weights = g_weights + grad_weights[:, t]
            w = weights[t]
            g_scores = torch.mul(
                w, g_weights - (w * g_weights).sum(1, keepdim=True), out=grad_scores[t]
            )  # softmax's backward; masked positions have w = 0
            if proj.dim() == 2:
                g_query = g_scores.mm(proj)
            else:
                g_query = torch.bmm(g_scores.unsqueeze(1), proj).squeeze(1)
            grad_h[-1] = torch.addmm(g_query + grad_h[-1], pre, combine_query)
            for layer in reversed(range(layers)):
                w_hh = layer_weights[4 * layer]
                if spec.lstm:
                    grad_c[layer] = _lstm_step_backward(
                        grad_h[layer], grad_c[layer], t, factors[layer], grad_in[layer][t]
                    )
                    grad_h[layer] = grad_in[layer][t].mm(w_hh)
                else:
                    direct = _gru_step_backward(
                        grad_h[layer], t, factors[layer], grad_in[layer][t], grad_rec[layer][t]
                    )
                    grad_h[layer] = torch.addmm(direct, grad_rec[layer][t], w_hh)
                if layer > 0:
                    g_below = grad_in[layer][t].mm(layer_weights[4 * layer - 2])
                    if spec.dropout:
                        g_below = g_below * masks[layer - 1][t]
                    grad_h[layer - 1] = g_below + grad_h[layer - 1]
            # h~_{t-1}: its own gradient and that through step t's input feed.
            before = grad_out[:, t - 1] if t else grad_out.new_zeros(())
            grad_feed = torch.addmm(before, grad_in[0][t], feed_weight)
        # Each weight's gradient: one product over the T x B rows of all steps.
        g_pre = _rows(grad_pre)
        grad_combine = torch.cat(
            [g_pre.t().mm(_rows(contexts)), g_pre.t().mm(_rows(states[-1][1:]))], dim=1
        )
        grad_feed_weight = _rows(grad_in[0]).t().mm(_rows(feeds[:-1]))
        grad_layers: list[Tensor] = []
        for layer in range(layers):
            if layer > 0:
                g_in = _rows(grad_in[layer])
                grad_layers += [g_in.t().mm(_rows(below[layer - 1])), g_in.sum(0)]
            g_rec = _rows(grad_rec[layer])
            grad_layers += [g_rec.t().mm(_rows(states[layer][:-1])), g_rec.sum(0)]
        # The keys' and projections' gradients over all steps, one batched product each.
        grad_keys = torch.bmm(weights.permute(1, 2, 0), grad_context.transpose(0, 1))
        if proj.dim() == 2:
            grad_proj = _rows(grad_scores).t().mm(_rows(states[-1][1:]))
        else:
            grad_proj = torch.bmm(grad_scores.permute(1, 2, 0), states[-1][1:].transpose(0, 1))
        grad_hidden = torch.stack(grad_h)
        grad_cell = torch.stack(grad_c) if spec.lstm else None
        return (
            None, grad_in[0], grad_hidden, grad_cell, grad_feed, grad_keys, grad_proj, None,
            grad_feed_weight, grad_combine, *grad_layers,
        )  # fmt: skip
