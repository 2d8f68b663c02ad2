"""Where and in what precision a model computes: a device name resolved on this machine, and
the autocast context of a precision.

    resolve_device("auto")     # CUDA when present, else the CPU
    resolve_device("cuda:1")   # on a machine with one GPU: ValueError, "device cuda:1: only
                               # 1 CUDA device here (cuda:0)"
    with autocast("bf16", device):
        ...                    # matrix products in bfloat16 (torch.autocast)

Every command that loads a model resolves its ``--device`` here first, so a device the
machine lacks is one line before anything is read (``luong translate --device cuda``:
``--device cuda: no CUDA device here (torch.cuda.is_available() is False)``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

from luong.config.choices import PRECISIONS, device_form
from luong.errors import LuongError, LuongTypeError

__all__ = ["AUTOCAST_DTYPES", "autocast", "check_precision", "resolve_device"]

# The dtype autocast computes in for each precision but fp32 (which runs without autocast).
AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(device: str, name: str = "device") -> torch.device:
    """The torch device a device name means on this machine, checked: ``"auto"`` is the
    current CUDA device when there is one, else the CPU; ``"cuda"`` the current CUDA device,
    ``"cuda:N"`` the one of index N; ``"mps"`` Apple's GPU.

    Args:
        device: one of the forms of ``luong.config.choices.DEVICES``.
        name: what the messages call it (the command line says ``"--device"``).

    Raises:
        TypeError: ``device`` is not a string.
        ValueError: a name of no form (the message lists them), or a device this machine
            lacks: ``device cuda: no CUDA device here (torch.cuda.is_available() is False)``,
            ``device cuda:3: only 1 CUDA device here (cuda:0)``.
    """
    if not isinstance(device, str):
        raise LuongTypeError(f"{name}: expected a device name (a str), got {type(device).__name__}")
    kind, index = device_form(device, name)
    if kind == "cpu" or (kind == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if kind == "mps":
        if not torch.backends.mps.is_available():
            raise LuongError(
                f"{name} mps: no MPS device here (torch.backends.mps.is_available() is False)"
            )
        return torch.device("mps")
    if not torch.cuda.is_available():
        raise LuongError(
            f"{name} {device}: no CUDA device here (torch.cuda.is_available() is False)"
        )
    count = torch.cuda.device_count()
    if index is None:
        return torch.device("cuda", torch.cuda.current_device())
    if index >= count:
        present = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
        raise LuongError(
            f"{name} {device}: only {count} CUDA device{'s' * (count != 1)} here ({present})"
        )
    return torch.device("cuda", index)


def check_precision(precision: str, device: torch.device, name: str = "precision") -> None:
    """Raise ValueError unless ``precision`` is one of ``PRECISIONS`` and runs on ``device``:
    fp16 is for CUDA alone (its gradient scaler and float16 kernels are CUDA's; on the CPU,
    bf16 has float32's range and needs no scaler)."""
    if precision not in PRECISIONS:
        raise LuongError(f"{name}: expected one of {', '.join(PRECISIONS)}, got {precision!r}")
    if not isinstance(device, torch.device):
        raise LuongTypeError(f"device: expected a torch.device, got {type(device).__name__}")
    if precision == "fp16" and device.type != "cuda":
        raise LuongError(
            f"{name} fp16: needs a CUDA device, and this runs on {device.type}; "
            "use bf16 (or fp32) here"
        )


def autocast(precision: str, device: torch.device) -> AbstractContextManager[Any]:
    """The context a forward pass in ``precision`` runs in on ``device``: ``torch.autocast``
    to bfloat16 (bf16) or float16 (fp16), nothing for fp32. Autocast state is per thread:
    enter it in the thread that runs the model.

    Raises:
        ValueError: ``check_precision``'s.
    """
    check_precision(precision, device)
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(device.type, AUTOCAST_DTYPES[precision])
