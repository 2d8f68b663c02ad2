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

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError

__all__ = ["Recurrence", "recur"]


@dataclass(frozen=True)
class Recurrence:
    """What the recurrence needs to know besides its tensors: the cell (LSTM or GRU), the
    number of stacked layers, and the dropout rate between layers while training (0: none)."""

    lstm: bool
    layers: int
    dropout: float = 0.0

    def __post_init__(self) -> None:
        check_positive_int("layers", self.layers)
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
    device_type = gates.device.type
    if not _autocast_on(device_type):
        attentional, weights = _Recur.apply(spec, None, *tensors)
        return attentional, weights
    # Under autocast (--precision bf16, or fp16 on CUDA) the gates, keys and states come in
    # bfloat16 or float16 while the weights stay float32. The recurrence keeps its states,
    # cells and every elementwise step in float32 (T steps of saturating cells would compound
    # bfloat16's 8-bit rounding), and runs its matrix products in autocast's dtype: the
    # weights cast once per call (once per training step), each step's operands cast as they
    # are made, each weight's gradient one low-precision product over all steps with float32
    # accumulation inside the kernel. So its inputs are cast to the weights' dtype and
    # autocast is off inside, in the backward too (``_without_autocast``); autograd records
    # the casts, and each input's gradient comes back in its own dtype.
    # torch.amp.custom_fwd and custom_bwd would do the same, but each is bound to one device
    # type when the class is defined, and this runs on the CPU, CUDA and MPS alike.
    dtype = combine_weight.dtype
    low = torch.get_autocast_dtype(device_type)
    cast = [t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors]
    with torch.autocast(device_type, enabled=False):
        attentional, weights = _Recur.apply(spec, low, *cast)
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


class _Products:
    """How the recurrence multiplies: in its tensors' own dtype (``low`` None: float32, the
    code path of a float32 run, bit for bit), or with each product's operands in ``low``
    (bfloat16 or float16) while everything elementwise stays in float32. A product whose
    result joins a float32 value returns float32 (the low-precision kernels accumulate in
    float32 inside; their result is rounded to ``low`` once)."""

    def __init__(self, low: torch.dtype | None) -> None:
        self.low = low

    def cast(self, tensor: Tensor) -> Tensor:
        """``tensor`` as a product's operand."""
        return tensor if self.low is None else tensor.to(self.low)

    def shadow(self, buffer: Tensor) -> Tensor:
        """A buffer of ``buffer``'s shape for the products' copies of its values (the buffer
        itself in float32)."""
        return buffer if self.low is None else torch.empty_like(buffer, dtype=self.low)

    def mirror(self, shadow: Tensor, value: Tensor) -> None:
        """Copy ``value`` into its ``shadow`` (nothing when they are one tensor)."""
        if shadow is not value:
            shadow.copy_(value)

    def addmm(self, bias: Tensor, a: Tensor, b: Tensor, out: Tensor | None = None) -> Tensor:
        """bias + a b in ``bias``'s dtype (into ``out`` when given), a and b operands
        (``cast``)."""
        if self.low is None:
            return torch.addmm(bias, a, b, out=out)
        return torch.add(bias, torch.mm(a, b), out=out)

    def mm(self, a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
        """a b in ``dtype``."""
        return torch.mm(a, b).to(dtype)

    def over_steps(self, a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
        """a^T b over the T x B rows of all steps (a weight's gradient), in ``dtype``."""
        return self.cast(a).t().mm(self.cast(b)).to(dtype)


class _Recur(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        spec: Recurrence,
        low: torch.dtype | None,
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
        ops = _Products(low)
        new = hidden.new_empty
        # Every per-step value the backward reads goes into a [T (+ 1), B, ...] buffer, so the
        # weights' gradients are one product over the rows of all steps. In low precision,
        # the values that products read have a low-precision copy (``shadow``), written once
        # as the step makes them, read by the next steps' products and by the backward's.
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
        states_low = [ops.shadow(x) for x in states]
        feeds_low, contexts_low = ops.shadow(feeds), ops.shadow(contexts)
        for layer in range(layers):
            states[layer][0] = hidden[layer]
            ops.mirror(states_low[layer][0], states[layer][0])
            if cell is not None:
                cells[layer][0] = cell[layer]
        feeds[0] = feed
        ops.mirror(feeds_low[0], feeds[0])
        # The weights as the products read them: cast once for the whole call.
        low_weights = [ops.cast(w) for w in layer_weights]
        # The attention's reads, each sentence's keys by its own query ([B, 1, d] x [B, d, S]
        # and [B, 1, S] x [B, S, K]), stay float32: batched products this small ran 1.5 to 3
        # times slower in bfloat16 than in float32 here (docs/performance.md).
        feed_t, combine = ops.cast(feed_weight).t(), ops.cast(combine_weight)
        proj_t, combine_context, combine_query = (
            proj.transpose(-2, -1), combine[:, :key_dim].t(), combine[:, key_dim:].t()
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
            gates_in = ops.addmm(gates[t], feeds_low[t], feed_t)
            for layer in range(layers):
                w_hh, b_hh = low_weights[4 * layer].t(), layer_weights[4 * layer + 1]
                h = states[layer][t]
                if layer > 0:
                    w_ih, b_ih = low_weights[4 * layer - 2].t(), layer_weights[4 * layer - 1]
                    x = states[layer - 1][t + 1]
                    if spec.dropout:
                        # The mask F.dropout would draw for x (same shape, same generator).
                        drop = F.dropout(torch.ones_like(x), spec.dropout, True)
                        masks[layer - 1][t] = drop
                        x = torch.mul(x, drop, out=below[layer - 1][t])
                    gates_in = ops.addmm(b_ih, ops.cast(x), w_ih)
                if spec.lstm:
                    summed = ops.addmm(gates_in + b_hh, states_low[layer][t], w_hh)
                    _lstm_forward(
                        summed, cells[layer][t], acts[layer][t], cells[layer][t + 1],
                        states[layer][t + 1],
                    )  # fmt: skip
                else:
                    gates_h = ops.addmm(b_hh, states_low[layer][t], w_hh, out=recurrent[layer][t])
                    step_acts = acts[layer][t]
                    _gru_forward(
                        gates_in, gates_h, h, step_acts[:, : 2 * d], step_acts[:, 2 * d :],
                        states[layer][t + 1],
                    )  # fmt: skip
                ops.mirror(states_low[layer][t + 1], states[layer][t + 1])
            top = states[-1][t + 1]
            if shared:
                scores = torch.addmm(bias, top, proj_t)  # [B, S]
            else:
                scores = torch.baddbmm(bias.unsqueeze(1), top.unsqueeze(1), proj_t).squeeze(1)
            weights[t] = scores.softmax(1) if not empty else scores.softmax(1) * mask
            torch.bmm(weights[t].unsqueeze(1), keys, out=contexts[t].unsqueeze(1))
            ops.mirror(contexts_low[t], contexts[t])
            combined = torch.addmm(
                contexts_low[t].mm(combine_context), states_low[-1][t + 1], combine_query
            )
            torch.tanh(combined.to(feeds.dtype), out=feeds[t + 1])  # tanh in float32
            ops.mirror(feeds_low[t + 1], feeds[t + 1])
        ctx.set_materialize_grads(False)
        ctx.spec, ctx.ops = spec, ops
        ctx.buffers = (
            states, cells, acts, recurrent, below, masks, feeds, weights, states_low, feeds_low,
            contexts_low,
        )  # fmt: skip
        ctx.save_for_backward(keys, proj, ops.cast(feed_weight), combine, *low_weights)
        return feeds[1:].transpose(0, 1).contiguous(), weights.transpose(0, 1).contiguous()

    @staticmethod
    @_without_autocast
    @once_differentiable
    def backward(
        ctx: Any, grad_out: Tensor | None, grad_weights: Tensor | None
    ) -> tuple[Tensor | None, ...]:
        spec: Recurrence = ctx.spec
        ops: _Products = ctx.ops
        # The weights and keys as the products read them (in low precision, the forward's
        # casts).
        keys, proj, feed_weight, combine_weight, *layer_weights = ctx.saved_tensors
        (
            states, cells, acts, recurrent, below, masks, feeds, weights, states_low, feeds_low,
            contexts_low,
        ) = ctx.buffers  # fmt: skip
        layers = spec.layers
        steps, batch, d = feeds.shape[0] - 1, feeds.shape[1], feeds.shape[2]
        full = feeds.dtype  # float32: the dtype of every gradient returned
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
            pre_low = ops.cast(pre)
            if ops.low is None:
                g_context = torch.mm(pre, combine_context, out=grad_context[t])
            else:
                g_context = grad_context[t]
                g_context.copy_(torch.mm(pre_low, combine_context))
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
            grad_h[-1] = ops.addmm(g_query + grad_h[-1], pre_low, combine_query)
            g_gates: Tensor | None = None  # layer 0's input-gate gradient as an operand
            for layer in reversed(range(layers)):
                w_hh = layer_weights[4 * layer]
                if spec.lstm:
                    grad_c[layer] = _lstm_step_backward(
                        grad_h[layer], grad_c[layer], t, factors[layer], grad_in[layer][t]
                    )
                    g_gates = ops.cast(grad_in[layer][t])
                    grad_h[layer] = ops.mm(g_gates, w_hh, full)
                else:
                    direct = _gru_step_backward(
                        grad_h[layer], t, factors[layer], grad_in[layer][t], grad_rec[layer][t]
                    )
                    grad_h[layer] = ops.addmm(direct, ops.cast(grad_rec[layer][t]), w_hh)
                    g_gates = ops.cast(grad_in[layer][t])
                if layer > 0:
                    g_below = ops.mm(g_gates, layer_weights[4 * layer - 2], full)
                    if spec.dropout:
                        g_below = g_below * masks[layer - 1][t]
                    grad_h[layer - 1] = g_below + grad_h[layer - 1]
            # h~_{t-1}: its own gradient and that through step t's input feed.
            before = grad_out[:, t - 1] if t else grad_out.new_zeros(batch, d)
            assert g_gates is not None  # layers >= 1
            grad_feed = ops.addmm(before, g_gates, feed_weight)
        # Each weight's gradient: one product over the T x B rows of all steps.
        g_pre = _rows(grad_pre)
        grad_combine = torch.cat(
            [
                ops.over_steps(g_pre, _rows(contexts_low), full),
                ops.over_steps(g_pre, _rows(states_low[-1][1:]), full),
            ],
            dim=1,
        )
        grad_feed_weight = ops.over_steps(_rows(grad_in[0]), _rows(feeds_low[:-1]), full)
        grad_layers: list[Tensor] = []
        for layer in range(layers):
            if layer > 0:
                g_in = _rows(grad_in[layer])
                grad_layers += [ops.over_steps(g_in, _rows(below[layer - 1]), full), g_in.sum(0)]
            g_rec = _rows(grad_rec[layer])
            grad_layers += [
                ops.over_steps(g_rec, _rows(states_low[layer][:-1]), full),
                g_rec.sum(0),
            ]
        # The keys' and projections' gradients over all steps, one batched product each (in
        # float32, as the attention's reads in the forward).
        grad_keys = torch.bmm(weights.permute(1, 2, 0), grad_context.transpose(0, 1))
        if proj.dim() == 2:
            grad_proj = _rows(grad_scores).t().mm(_rows(states[-1][1:]))
        else:
            grad_proj = torch.bmm(grad_scores.permute(1, 2, 0), states[-1][1:].transpose(0, 1))
        grad_hidden = torch.stack(grad_h)
        grad_cell = torch.stack(grad_c) if spec.lstm else None
        return (
            None, None, grad_in[0], grad_hidden, grad_cell, grad_feed, grad_keys, grad_proj,
            None, grad_feed_weight, grad_combine, *grad_layers,
        )  # fmt: skip
