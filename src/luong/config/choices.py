"""The names of the configs' choices: the attention's scores, the cells, the bridges, the
schedules, the precisions, ..., the parts an int8 model holds in int8, and the forms of a
device name (``device_form`` reads one).

Plain data: the command line shows them as its flags' choices before any command needs
torch, and the modules that implement them (``luong.model.attention``, ``luong.common.devices``,
``luong.model.quantize``) read their names here.
"""

from __future__ import annotations

from luong.common.errors import LuongError

__all__ = [
    "ATTENTIONS",
    "BRIDGES",
    "CELLS",
    "DEVICES",
    "GLOBAL_SCORES",
    "INT8_PARTS",
    "LOCALS",
    "LOCAL_MODES",
    "LOCAL_SCORES",
    "NORMALIZATIONS",
    "OPTIMIZERS",
    "PRECISIONS",
    "SAME_WIDTH_SCORES",
    "SCHEDULES",
    "SCORES",
    "SELECTS",
    "SUBWORD_KINDS",
    "device_form",
]

# The attention's scores (luong.model.attention implements them; Luong et al. 2015, eq. 8).
SCORES: tuple[str, ...] = ("dot", "general", "concat")  # the content scores of eq. 8
GLOBAL_SCORES: tuple[str, ...] = (*SCORES, "location", "scaled_dot")  # LuongAttention's
LOCAL_SCORES: tuple[str, ...] = (*SCORES, "scaled_dot")  # scores inside a local window
LOCAL_MODES: tuple[str, ...] = ("monotonic", "predictive")
SAME_WIDTH_SCORES: tuple[str, ...] = ("dot", "scaled_dot")  # scores that need K == d

ATTENTIONS: tuple[str, ...] = (*GLOBAL_SCORES, "bahdanau")
LOCALS: tuple[str, ...] = ("none", *LOCAL_MODES)
CELLS: tuple[str, ...] = ("lstm", "gru")
BRIDGES: tuple[str, ...] = ("bridge", "last", "zero")
SCHEDULES: tuple[str, ...] = ("constant", "linear", "cosine", "halving")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")
# What a batch's summed cross-entropy is divided by before its gradient is taken.
NORMALIZATIONS: tuple[str, ...] = ("tokens", "sentences")
# fp32; bf16 autocast (CPU, CUDA, MPS); fp16 autocast with a gradient scaler (CUDA only).
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16")
SELECTS: tuple[str, ...] = ("auto", "exact", "bleu", "chrf", "loss")
SUBWORD_KINDS: tuple[str, ...] = ("none", "unigram", "bpe")
# The forms of a device name ("cuda:N": the CUDA device of index N, "cuda:1"); "auto": CUDA
# when present, else the CPU. ``device_form`` reads one; ``luong.common.devices`` resolves it.
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda", "cuda:N", "mps")
# What an int8 model (luong quantize, Seq2Seq.to_int8) can hold in int8: the output layer W_o
# (eq. 6), the decoder's cells (every layer's input and recurrent matrices) and W_c (eq. 5).
INT8_PARTS: tuple[str, ...] = ("output", "cells", "attention")


def device_form(device: object, name: str = "device") -> tuple[str, int | None]:
    """The kind and index of a device name in one of the ``DEVICES`` forms: ``"cuda:1"`` ->
    ``("cuda", 1)``, ``"cpu"`` -> ``("cpu", None)``. The name alone is read: whether this
    machine has the device is ``luong.common.devices.resolve_device``'s question.

    Raises:
        ValueError: a name of none of the forms (``name`` is what the message calls it).
    """
    if isinstance(device, str):
        kind, colon, index = device.partition(":")
        if not colon and device in DEVICES:
            return device, None
        if kind == "cuda" and index.isascii() and index.isdigit() and len(index) <= 6:
            return "cuda", int(index)
    forms = ", ".join(DEVICES[:-1]) + f" (N a device index, from 0) or {DEVICES[-1]}"
    raise LuongError(f"{name}: expected {forms}, got {device!r}")
