"""int8 weights and their products, for decoding on the CPU (``luong quantize``).

Shapes: ``M`` outputs, ``K`` inputs, ``N`` rows.

A weight matrix W ``[M, K]`` is kept as int8 values Q and one float32 scale per row (per
output channel, symmetric): ``scale_m = max_k |W[m, k]| / 127``, ``Q = round(W / scale)``, so
``W ~= scale[:, None] * Q``. The input of a product is quantized with one fixed scale,
``1 / LEVELS``: in the decoder's step every input of the products quantized here is a tanh
output, a hidden state of an LSTM or GRU cell (|h| < 1) or an attention-weighted average of
such vectors (the context), so |x| <= 1 by construction. A fixed scale costs nothing per call
and keeps the rows of a batch independent: a scale measured on the batch (the dynamic
quantization of ``torch.ao.quantization.quantize_dynamic``) would make a sentence's output
depend on the sentences decoded beside it, in a beam or in the server's batches.

The product is oneDNN's u8 x s8 -> s32 kernel (``torch.ops.onednn.qlinear_pointwise``, which
inductor's x86 int8 path calls): the input as uint8 around a zero point of ``LEVELS + 1``,
the weights prepacked once. ``torch.ao.quantization`` is deprecated (its DeprecationWarning
says it will be removed; the migration: pytorch/ao#2259), and with it the quantized dtypes
it builds on (``torch.qint8``, ``torch.quantize_per_channel``); here the weights are plain int8
tensors, saved in safetensors as they are. Where oneDNN's kernel is not available (a torch
built without it, a CPU that is not x86-64), ``reference_linear`` computes the same numbers in
float32 from the dequantized weights, more slowly.
"""

from __future__ import annotations

import copy
import platform
from collections.abc import Iterable, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from luong.common.errors import LuongError, LuongTypeError

__all__ = [
    "Int8Cells",
    "Int8Linear",
    "Int8Matrix",
    "Weight",
    "activation_levels",
    "columns",
    "float_weight",
    "is_int8",
    "linear",
    "quantize_weight",
    "reference_linear",
    "rows",
]


def activation_levels() -> int:
    """The input's quantization levels on each side of 0: 127 (8 bits), or 63 (7 bits) on an
    x86 CPU without VNNI, whose u8 x s8 instructions add pairs of products in 16 bits and
    would saturate at 2 x 255 x 127 (oneDNN's documented limit, the reason for torch's
    ``reduce_range``). Where torch cannot tell (no ``torch.cpu.get_capabilities``), an x86
    CPU counts as one without VNNI: 7 bits never saturate."""
    capabilities = _capabilities()
    if capabilities.get("architecture") != "x86_64":
        return 127
    vnni = ("avx512_vnni", "avx_vnni", "amx_int8")
    return 127 if any(capabilities.get(name, False) for name in vnni) else 63


def _capabilities() -> Mapping[str, object]:
    """``torch.cpu.get_capabilities()`` (the CPU's instruction sets, by name), or where this
    torch lacks it (it is newer than the oldest torch luong supports) the architecture alone."""
    get = getattr(torch.cpu, "get_capabilities", None)
    if get is not None:
        capabilities: Mapping[str, object] = get()
        return capabilities
    machine = platform.machine().lower()
    return {"architecture": "x86_64" if machine in ("x86_64", "amd64") else machine}


def _onednn() -> bool:
    """Whether oneDNN's int8 kernels run here (an x86-64 CPU and a torch built with them)."""
    return (
        torch.backends.mkldnn.is_available()
        and _capabilities().get("architecture") == "x86_64"
        and hasattr(torch.ops.onednn, "qlinear_pointwise")
    )


def quantize_weight(weight: Tensor) -> tuple[Tensor, Tensor]:
    """W ``[M, K]`` (float) -> Q ``[M, K]`` int8 in [-127, 127] and scale ``[M]`` float32
    (``max |W[m]| / 127``; 0 for a row of zeros, whose values are 0).

    Raises:
        TypeError: ``weight`` is not a floating-point tensor.
        ValueError: not 2-D, or a value is not finite.
    """
    if not isinstance(weight, Tensor) or not weight.is_floating_point():
        got = weight.dtype if isinstance(weight, Tensor) else type(weight).__name__
        raise LuongTypeError(f"weight: expected a floating-point tensor [M, K], got {got}")
    if weight.dim() != 2:
        raise LuongError(f"weight: expected a 2-D tensor [M, K], got shape {tuple(weight.shape)}")
    weight = weight.detach().float()
    if not bool(torch.isfinite(weight).all()):
        raise LuongError("weight: expected finite values, got inf or nan")
    scale = weight.abs().amax(dim=1) / 127  # [M]
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))  # a zero row stays zeros
    values = torch.round(weight / safe[:, None]).clamp_(-127, 127).to(torch.int8)
    return values, scale


class Int8Matrix:
    """A weight matrix W ``[M, K]`` as int8 values and a float32 scale per row, with its
    product for inputs in [-1, 1] (see the module's docstring).

    Column blocks (``columns``) share the rows' scales; each block is prepacked once, on its
    first use, and kept. The values are the tensor given (a module's buffer), not a copy.

    Args:
        values: Q ``[M, K]``, int8.
        scale: ``[M]``, float32, finite.

    Raises:
        TypeError: a tensor of another dtype.
        ValueError: shapes that do not fit, or a scale that is not finite.
    """

    def __init__(self, values: Tensor, scale: Tensor) -> None:
        if not isinstance(values, Tensor) or values.dtype != torch.int8 or values.dim() != 2:
            got = _describe(values)
            raise LuongTypeError(f"values: expected an int8 tensor [M, K], got {got}")
        if not isinstance(scale, Tensor) or scale.dtype != torch.float32:
            raise LuongTypeError(f"scale: expected a float32 tensor [M], got {_describe(scale)}")
        if tuple(scale.shape) != (values.shape[0],):
            raise LuongError(
                f"scale: expected shape ({values.shape[0]},) (a scale per row of values), got "
                f"{tuple(scale.shape)}"
            )
        if not bool(torch.isfinite(scale).all()):
            raise LuongError("scale: expected finite values, got inf or nan")
        self.values = values
        self.scale = scale
        self.levels = activation_levels()
        self._zero_points = torch.zeros(values.shape[0], dtype=torch.int32)
        # oneDNN's own layout of the values, made once (None: reference_linear computes).
        self._packed = (
            torch.ops.onednn.qlinear_prepack(values.contiguous(), None) if _onednn() else None
        )
        self._blocks: dict[tuple[int, int], Int8Matrix] = {}
        self._float: Tensor | None = None

    def __deepcopy__(self, memo: dict[int, object]) -> Int8Matrix:
        """A copy made from copies of the values and scales (oneDNN's packed layout cannot be
        copied; it is made again). Within ``copy.deepcopy`` of a module the copies are the
        copied module's buffers (``memo``), as here they are the module's."""
        return Int8Matrix(copy.deepcopy(self.values, memo), copy.deepcopy(self.scale, memo))

    @classmethod
    def quantize(cls, weight: Tensor) -> Int8Matrix:
        """The int8 form of a float matrix ``[M, K]`` (``quantize_weight``)."""
        return cls(*quantize_weight(weight))

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape[0], self.values.shape[1]

    def dequantize(self) -> Tensor:
        """``scale[:, None] * Q``: the float32 matrix ``[M, K]`` these values stand for (made
        once, then kept)."""
        if self._float is None:
            self._float = self.values.float() * self.scale[:, None]
        return self._float

    def columns(self, start: int, stop: int) -> Int8Matrix:
        """Columns ``[start, stop)``, the rows' scales unchanged (made once, then kept)."""
        k = self.values.shape[1]
        if not 0 <= start < stop <= k:
            raise LuongError(f"columns: expected 0 <= start < stop <= {k}, got {start}, {stop}")
        if (start, stop) == (0, k):
            return self
        if (start, stop) not in self._blocks:
            block = Int8Matrix(self.values[:, start:stop].contiguous(), self.scale)
            self._blocks[start, stop] = block
        return self._blocks[start, stop]

    def linear(self, x: Tensor, bias: Tensor | None = None) -> Tensor:
        """x W^T + bias for x ``[..., K]`` in [-1, 1] -> ``[..., M]`` (float32)."""
        if self._packed is None:
            return reference_linear(x, self, bias)
        k = self.values.shape[1]
        q = quantize_input(x.reshape(-1, k), self.levels)
        y = torch.ops.onednn.qlinear_pointwise(
            q, 1.0 / self.levels, self.levels + 1, self._packed, self.scale, self._zero_points,
            bias, 1.0, 0, torch.float32, "none", [], "",
        )  # fmt: skip
        return y.view(*x.shape[:-1], self.values.shape[0])


def quantize_input(x: Tensor, levels: int) -> Tensor:
    """x in [-1, 1] -> uint8 ``round(levels x) + levels + 1``, in [1, 2 levels + 1]: an input
    past 1 (or -1) counts as 1 (or -1)."""
    q = (x * levels).add_(levels + 1).round_()
    return q.clamp_(1, 2 * levels + 1).to(torch.uint8)


def reference_linear(x: Tensor, matrix: Int8Matrix, bias: Tensor | None = None) -> Tensor:
    """``Int8Matrix.linear`` in float32: the input quantized as there, times the dequantized
    weights. Equal to oneDNN's integer product up to float32 rounding."""
    levels = matrix.levels
    q = quantize_input(x, levels).float().sub_(levels + 1).div_(levels)
    return F.linear(q, matrix.dequantize(), bias)


def _describe(value: object) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype} of shape {tuple(value.shape)}"
    return type(value).__name__


# A weight a decoder step multiplies by: a float tensor, or its int8 form.
Weight = Tensor | Int8Matrix


def linear(x: Tensor, weight: Weight, bias: Tensor | None = None) -> Tensor:
    """``F.linear(x, weight, bias)``, or for an ``Int8Matrix`` its int8 product (x must then be
    in [-1, 1])."""
    if isinstance(weight, Int8Matrix):
        return weight.linear(x, bias)
    return F.linear(x, weight, bias)


def columns(weight: Weight, start: int, stop: int) -> Weight:
    """Columns ``[start, stop)`` of a weight matrix (a view of a float one)."""
    if isinstance(weight, Int8Matrix):
        return weight.columns(start, stop)
    return weight[:, start:stop]


def rows(weight: Weight, ids: Tensor) -> Weight:
    """Rows ``ids`` ``[M']`` of a weight matrix, a new matrix ``[M', K]`` (an int8 one
    prepacked once, its rows' own scales kept): a shortlist's output layer."""
    if isinstance(weight, Int8Matrix):
        return Int8Matrix(weight.values.index_select(0, ids), weight.scale.index_select(0, ids))
    return weight.index_select(0, ids)


def float_weight(weight: Weight) -> Tensor:
    """A float weight as it is; an ``Int8Matrix`` dequantized (for a product whose input is
    not in [-1, 1], such as an embedding's)."""
    return weight.dequantize() if isinstance(weight, Int8Matrix) else weight


class Int8Linear(nn.Module):
    """``nn.Linear`` with int8 weights, for inputs in [-1, 1]: y = x W^T + b.

    Buffers: ``weight`` int8 ``[M, K]``, ``scale`` float32 ``[M]`` and, when given, ``bias``
    float32 ``[M]``. Loading a state dict into the module prepacks the new weights.

    Raises:
        TypeError, ValueError: as ``Int8Matrix``, or a bias that is not float32 ``[M]``.
    """

    weight: Tensor
    scale: Tensor
    bias: Tensor | None

    def __init__(self, weight: Tensor, scale: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.matrix = Int8Matrix(weight, scale)
        if bias is not None and (
            not isinstance(bias, Tensor)
            or bias.dtype != torch.float32
            or tuple(bias.shape) != (weight.shape[0],)
        ):
            raise LuongTypeError(
                f"bias: expected float32 [{weight.shape[0]}], got {_describe(bias)}"
            )
        self.register_buffer("weight", weight)
        self.register_buffer("scale", scale)
        self.register_buffer("bias", bias)
        self.register_load_state_dict_post_hook(_rebuild)

    @classmethod
    def quantize(cls, linear: nn.Linear) -> Int8Linear:
        """The int8 form of ``linear`` (its weight quantized per row, its bias kept)."""
        if not isinstance(linear, nn.Linear):
            raise LuongTypeError(f"linear: expected an nn.Linear, got {type(linear).__name__}")
        values, scale = quantize_weight(linear.weight)
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        return cls(values, scale, bias)

    def rebuild(self) -> None:
        """Prepack the buffers' current values (after they were loaded)."""
        self.matrix = Int8Matrix(self.weight, self.scale)

    def extra_repr(self) -> str:
        m, k = self.matrix.shape
        return f"in_features={k}, out_features={m}, bias={self.bias is not None}, int8"

    def forward(self, x: Tensor) -> Tensor:
        """x ``[..., K]`` in [-1, 1] -> ``[..., M]``."""
        return self.matrix.linear(x, self.bias)


class Int8Cells(nn.Module):
    """The weights of a one-direction stacked ``nn.LSTM`` or ``nn.GRU`` in int8, for the
    decoder's step (``luong.model.decoder``), which reads them as ``all_weights``: per layer
    ``(weight_ih, weight_hh, bias_ih, bias_hh)``, each matrix an ``Int8Matrix``.

    Buffers, under ``nn.RNNBase``'s names: ``weight_ih_l{k}`` and ``weight_hh_l{k}`` int8,
    their scales ``weight_ih_l{k}_scale`` and ``weight_hh_l{k}_scale``, ``bias_ih_l{k}`` and
    ``bias_hh_l{k}`` float32. It runs no sequence itself.

    Args:
        tensors: those buffers, by name, for layers 0 .. ``layers`` - 1.
        layers: L.

    Raises:
        ValueError: a buffer missing, or (``Int8Matrix``) shapes that do not fit.
    """

    def __init__(self, tensors: dict[str, Tensor], layers: int) -> None:
        super().__init__()
        self.layers = layers
        for name in _cell_names(layers):
            if name not in tensors:
                raise LuongError(f"tensors: missing {name!r}")
            self.register_buffer(name, tensors[name])
        self.all_weights: list[tuple[Int8Matrix, Int8Matrix, Tensor, Tensor]] = self._weights()
        self.register_load_state_dict_post_hook(_rebuild)

    @classmethod
    def quantize(cls, rnn: nn.RNNBase) -> Int8Cells:
        """The int8 form of a one-direction ``nn.LSTM`` or ``nn.GRU`` with biases."""
        if not isinstance(rnn, nn.LSTM | nn.GRU) or rnn.bidirectional or not rnn.bias:
            raise LuongError("rnn: expected a one-direction nn.LSTM or nn.GRU with biases")
        if getattr(rnn, "proj_size", 0):
            raise LuongError("rnn: an LSTM with proj_size is not supported")
        tensors: dict[str, Tensor] = {}
        for layer in range(rnn.num_layers):
            for kind in ("ih", "hh"):
                weight = getattr(rnn, f"weight_{kind}_l{layer}")
                values, scale = quantize_weight(weight)
                tensors[f"weight_{kind}_l{layer}"] = values
                tensors[f"weight_{kind}_l{layer}_scale"] = scale
                bias = getattr(rnn, f"bias_{kind}_l{layer}")
                tensors[f"bias_{kind}_l{layer}"] = bias.detach().float().clone()
        return cls(tensors, rnn.num_layers)

    def _weights(self) -> list[tuple[Int8Matrix, Int8Matrix, Tensor, Tensor]]:
        buffer = dict(self.named_buffers())
        return [
            (
                Int8Matrix(buffer[f"weight_ih_l{layer}"], buffer[f"weight_ih_l{layer}_scale"]),
                Int8Matrix(buffer[f"weight_hh_l{layer}"], buffer[f"weight_hh_l{layer}_scale"]),
                buffer[f"bias_ih_l{layer}"],
                buffer[f"bias_hh_l{layer}"],
            )
            for layer in range(self.layers)
        ]

    def rebuild(self) -> None:
        """Prepack the buffers' current values (after they were loaded)."""
        self.all_weights = self._weights()

    def extra_repr(self) -> str:
        return f"layers={self.layers}, int8"


def _cell_names(layers: int) -> Iterable[str]:
    for layer in range(layers):
        for kind in ("ih", "hh"):
            yield f"weight_{kind}_l{layer}"
            yield f"weight_{kind}_l{layer}_scale"
            yield f"bias_{kind}_l{layer}"


def _rebuild(module: nn.Module, incompatible_keys: object) -> None:
    """``load_state_dict``'s post-hook: the loaded values replace the buffers' contents in
    place, so the packed copies are made again."""
    assert isinstance(module, Int8Linear | Int8Cells)
    module.rebuild()


def is_int8(module: nn.Module) -> bool:
    """Whether ``module`` holds int8 weights (an ``Int8Linear`` or ``Int8Cells`` within)."""
    return any(isinstance(m, Int8Linear | Int8Cells) for m in module.modules())
