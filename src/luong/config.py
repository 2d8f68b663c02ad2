"""What a run is made of: the model's architecture and how it trains, as typed dataclasses.

Both are plain data: checked once on construction (each error names the field, the valid
choices and the value), saved as JSON beside the weights and in every run folder, rebuilt
from it on load. Tasks give their defaults as these dataclasses (``luong.presets``).

Each field has its help text in its metadata (``setting``), the one source of ``luong train
--help``'s texts (``luong.cli.common.add_config_flags``). This module is plain data and
imports no torch: the command line builds its flags from it, and from the names of the
choices here (the attention's scores, the cells, ...) and the faces' settings (translate's
output formats, the figures' bounds, the server's limits), before any command needs torch.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from luong.errors import LuongError, LuongTypeError
from luong.files import MAX_LINE_BYTES, MAX_TEXT_BYTES, read_bounded
from luong.search_options import OptionError, SearchOptions, option
from luong.vocab import Vocab

__all__ = [
    "ATTENTIONS",
    "BRIDGES",
    "CELLS",
    "DEVICES",
    "FORMATS",
    "PLACEHOLDER_MODES",
    "GLOBAL_SCORES",
    "INT8_PARTS",
    "LOCALS",
    "LOCAL_MODES",
    "LOCAL_SCORES",
    "MAX_DPI",
    "MAX_LAYERS",
    "MAX_PARAMETERS",
    "MAX_POSITIONS",
    "MAX_SRC_LEN",
    "MAX_WIDTH",
    "NORMALIZATIONS",
    "OPTIMIZERS",
    "PRECISIONS",
    "SAME_WIDTH_SCORES",
    "SCHEDULES",
    "SCORES",
    "SELECTS",
    "SUBWORD_KINDS",
    "RunConfig",
    "ServeLimits",
    "Seq2SeqConfig",
    "TrainConfig",
    "VocabConfig",
    "config_from_dict",
    "device_form",
    "read_toml_tables",
    "run_toml",
    "setting",
]

# The attention's scores (luong.attention implements them; Luong et al. 2015, eq. 8).
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
# when present, else the CPU. ``device_form`` reads one; ``luong.devices`` resolves it.
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda", "cuda:N", "mps")
# What an int8 model (luong quantize, Seq2Seq.to_int8) can hold in int8: the output layer W_o
# (eq. 6), the decoder's cells (every layer's input and recurrent matrices) and W_c (eq. 5).
INT8_PARTS: tuple[str, ...] = ("output", "cells", "attention")

# Bounds on the architecture, generous ones: sizes no real model needs, which could not be
# allocated (--emb-dim 100000000000 ended in a torch allocator traceback) or would build for
# minutes (--enc-layers 100000). Checked on construction, before anything is allocated.
MAX_WIDTH = 16_384
"""The widest embedding or hidden layer: 16 times Luong et al.'s 1000-wide LSTMs."""
MAX_LAYERS = 64
"""The most layers of the encoder or the decoder: 8 times GNMT's stacks (Wu et al. 2016, 8
LSTM layers each)."""
MAX_SRC_LEN = MAX_LINE_BYTES
"""The longest source and the widest local window, in symbols: no line luong reads holds more
bytes (``luong.files.MAX_LINE_BYTES``, 1,048,576)."""
MAX_PARAMETERS = 4_000_000_000
"""The most parameters a model may have: 16 GB of float32 weights, 64 GB to train with Adam
(weights, gradients and two moments), about what one large accelerator holds."""

# The faces' settings: plain data here, so that the command line shows them without importing
# the modules that use them (which import torch).
FORMATS: tuple[str, ...] = ("text", "jsonl")
"""What ``luong translate`` (``luong.translator.output_lines``) writes: the outputs (n-best
tab-separated), or a JSON object a line."""

PLACEHOLDER_MODES: dict[str, str] = {
    "off": "decode the source as it is",
    "mask": "mask each placeholder before decoding and put it back after, at the output word "
    "the attention aligns to it: each appears exactly as often as in the source",
    "constrain": "beam search, then, where an output misses a placeholder, constrained beam "
    "search holding each exactly as often as the source (masking where that fails too)",
}
"""How ``luong translate --placeholders`` treats a source's placeholders
(``luong.placeholders``): name -> help text. A new mechanism is one more entry here and one
more branch in ``luong.translator.output_lines``."""

MAX_DPI = 1200
"""The highest resolution a figure takes, in pixels per inch (``luong.plot``)."""

MAX_POSITIONS = 1000
"""The most source positions a chart of ``luong.plot.plot_scores`` draws (padding included)."""


@dataclass(frozen=True)
class ServeLimits:
    """What one request to ``luong serve`` may ask for (``luong.server``)."""

    max_sources: int = 64  # sources per request (413 above)
    max_source_len: int = 200  # symbols per source, at most the model's own (413 above)
    max_beam: int = 16  # beam size (422 above)
    max_nbest: int = 16  # outputs per source (422 above)
    max_prefix_len: int = 200  # characters of a prefix (422 above)
    max_output_len: int = 512  # max_len and min_len of a request, in tokens (422 above)
    max_body_bytes: int = 1_000_000  # the request body (413 above)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LuongError(f"{f.name}: expected an int >= 1, got {value!r}")


def setting(
    default: Any, help: str, *, choices: tuple[str, ...] | None = None, metavar: str | None = None
) -> Any:
    """A config field with its help text: ``name: int = setting(3, "what it does (0: ...)")``.

    The text is what ``luong train --help`` shows for the field's flag (with the default of
    the task or preset); ``choices`` are the flag's valid values. The config checks its
    fields itself (``__post_init__``), so no bounds are given here.

    Raises:
        ValueError: ``help`` is not a text of one line.
    """
    if not isinstance(help, str) or not help.strip() or "\n" in help:
        raise LuongError(f"help: expected a text of one line, got {help!r:.60}")
    return field(default=default, metadata=option(help, choices=choices, metavar=metavar))


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The architecture. The defaults are the dates model of ``make demo``."""

    # The sizes are bounded (generously: widths up to MAX_WIDTH = 16,384, layers up to
    # MAX_LAYERS = 64, lengths up to MAX_SRC_LEN = 1,048,576, at most MAX_PARAMETERS = 4
    # billion parameters in all), so that a size no machine can allocate is refused at once.
    cell: str = setting("gru", "the recurrent cell of the encoder and the decoder", choices=CELLS)
    emb_dim: int = setting(64, "E: the width of the source and target embeddings, 1 to 16,384")
    enc_hidden: int = setting(64, "the encoder's hidden size per direction, 1 to 16,384")
    enc_layers: int = setting(2, "the encoder's layers, 1 to 64")
    bidirectional: bool = setting(
        True, "a bidirectional encoder (its keys are then K = 2 x enc-hidden wide)"
    )
    dec_hidden: int = setting(
        128, "d: the decoder's hidden size, the attention's query width, 1 to 16,384"
    )
    dec_layers: int = setting(1, "the decoder's layers, 1 to 64")
    attention: str = setting(
        "dot",
        "the score (Luong eq. 8; scaled_dot: dot / sqrt(d); bahdanau: additive, attending "
        "before the step)",
        choices=ATTENTIONS,
    )
    local: str = setting(
        "none",
        "none: global attention; monotonic (local-m, p_t = t) or predictive (local-p, eq. 9-10): "
        "local attention (Luong section 3.2), with dot, general, concat or scaled_dot",
        choices=LOCALS,
    )
    window: int = setting(
        10, "D: local attention reads the source positions p_t - D to p_t + D, 1 to 1,048,576"
    )
    # No line luong reads holds more than 1,048,576 bytes; the location score's W_a has a row
    # per position (max_src_len + 1, the EOS included).
    max_src_len: int = setting(
        64,
        "the longest source, in symbols (its EOS not counted), 1 to 1,048,576: longer "
        "training sources stop the run, luong translate refuses (or --truncate cuts) longer lines",
    )
    input_feed: bool = setting(
        True, "feed the attentional state h~_{t-1} into step t (Luong section 3.3)"
    )
    bridge: str = setting(
        "bridge",
        "the decoder's initial state: bridge (linear + tanh of the encoder's last state), last "
        "(that state itself: K = d) or zero",
        choices=BRIDGES,
    )
    dropout: float = setting(
        0.0,
        "dropout on the embeddings, between layers and before the output layer, 0 to < 1 (0: none)",
    )
    tie_embeddings: bool = setting(
        False, "one embedding matrix for the source and the target (a joint vocabulary only)"
    )

    def __post_init__(self) -> None:
        _choice("cell", self.cell, CELLS)
        _choice("attention", self.attention, ATTENTIONS)
        _choice("local", self.local, LOCALS)
        _choice("bridge", self.bridge, BRIDGES)
        for name, most in SIZE_BOUNDS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise LuongError(f"{name}: expected a positive int, got {value!r}")
            if value > most:
                raise LuongError(f"{name}: expected at most {most}, got {value}")
        for name in ("bidirectional", "input_feed", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise LuongTypeError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        if not _is_number(self.dropout) or not 0.0 <= self.dropout < 1.0:
            raise LuongError(f"dropout: expected a number in [0, 1), got {self.dropout!r}")
        if self.local != "none" and self.attention not in LOCAL_SCORES:
            raise LuongError(
                f"local {self.local!r}: expected attention one of {', '.join(LOCAL_SCORES)} "
                f"inside the window, got {self.attention!r} (use local 'none' for it)"
            )
        if self.attention in SAME_WIDTH_SCORES and self.key_dim != self.dec_hidden:
            raise LuongError(
                f"attention {self.attention!r} needs keys as wide as the decoder: key width "
                f"{self.key_dim} (enc_hidden x directions) != dec_hidden {self.dec_hidden}; "
                "use general, concat or bahdanau, or change the sizes"
            )
        if self.bridge == "last" and self.key_dim != self.dec_hidden:
            raise LuongError(
                f"bridge 'last' copies the encoder state: key width {self.key_dim} != "
                f"dec_hidden {self.dec_hidden}; use bridge 'bridge' or 'zero'"
            )
        # The vocabularies are not known yet: the smallest, the specials alone.
        specials = len(Vocab.SPECIALS)
        self._check_parameters(specials, specials, f"with vocabularies of the {specials} specials")

    @property
    def key_dim(self) -> int:
        """K, the width of the encoder outputs."""
        return self.enc_hidden * (2 if self.bidirectional else 1)

    def parameter_count(self, src_size: int, tgt_size: int) -> int:
        """The parameters of a ``Seq2Seq`` of this config with vocabularies of ``src_size``
        and ``tgt_size`` symbols (specials included), a tied embedding once: what
        ``sum(p.numel() for p in model.parameters())`` gives, computed without building it."""
        return sum(self._parameter_parts(src_size, tgt_size).values())

    def check_parameters(self, src_size: int, tgt_size: int) -> None:
        """Refuse a model of more than ``MAX_PARAMETERS`` parameters with vocabularies of
        ``src_size`` and ``tgt_size`` symbols, before anything is allocated.

        Raises:
            ValueError: the count and the limit, and the part that holds the most parameters
                with the sizes that make it.
        """
        vocabularies = f"with vocabularies of {src_size:,} and {tgt_size:,} symbols"
        self._check_parameters(src_size, tgt_size, vocabularies)

    def _check_parameters(self, src_size: int, tgt_size: int, vocabularies: str) -> None:
        parts = self._parameter_parts(src_size, tgt_size)
        total = sum(parts.values())
        if total <= MAX_PARAMETERS:
            return
        largest = max(parts, key=parts.__getitem__)
        d, k = self.dec_hidden, self.key_dim
        embedded = src_size if self.tie_embeddings else src_size + tgt_size
        what = {
            "embeddings": f"emb_dim {self.emb_dim} x {embedded:,} symbols",
            "encoder": f"enc_hidden {self.enc_hidden}, enc_layers {self.enc_layers}",
            "bridge": f"key width {k}, dec_hidden {d}",
            "attention": (
                f"max_src_len {self.max_src_len}, dec_hidden {d}"
                if self.attention == "location"
                else f"key width {k}, dec_hidden {d}"
            ),
            "decoder": f"dec_hidden {d}, dec_layers {self.dec_layers}",
            "output layer": f"dec_hidden {d} x {tgt_size:,} symbols",
        }[largest]
        raise LuongError(
            f"model: {total:,} parameters {vocabularies}, above the limit of "
            f"{MAX_PARAMETERS:,} (16 GB of float32 weights); {parts[largest]:,} of them in the "
            f"{largest} ({what})"
        )

    def _parameter_parts(self, src_size: int, tgt_size: int) -> dict[str, int]:
        """The parameters of each part of the model (``parameter_count``). Each recurrent
        layer and direction of ``nn.LSTM`` / ``nn.GRU`` has W_ih ``[G h, input]``, W_hh
        ``[G h, h]`` and two biases ``[G h]``, G = 4 gates (LSTM) or 3 (GRU)."""
        gates = 4 if self.cell == "lstm" else 3
        d, k, e = self.dec_hidden, self.key_dim, self.emb_dim

        def recurrent(first_input: int, hidden: int, layers: int, directions: int) -> int:
            above = hidden * directions  # the input of the layers above the first
            per_layer = [first_input] + [above] * (layers - 1)
            return sum(directions * gates * hidden * (n + hidden + 2) for n in per_layer)

        bahdanau = self.attention == "bahdanau"
        score = {
            "dot": 0,
            "scaled_dot": 0,
            "general": k * d,  # W_a [d, K]
            "concat": (d + k) * d + d,  # W_a [d, d + K], v [1, d]
            "location": (self.max_src_len + 1) * d,  # W_a [max_src_len + 1, d]
            "bahdanau": d * d + k * d + d,  # W_q [d, d], W_k [d, K], v [1, d]
        }[self.attention]
        position = d * d + d if self.local == "predictive" else 0  # W_p [d, d], v_p [1, d]
        # The first decoder layer reads the embedding, h~_{t-1} (input feeding) and, with
        # Bahdanau's score, the context.
        first = e + (d if self.input_feed else 0) + (k if bahdanau else 0)
        # W [d, K] and b [d] for h (and for c, LSTM) with bridge "bridge"; "last" and "zero"
        # have none.
        bridge = (k * d + d) * (2 if self.cell == "lstm" else 1) if self.bridge == "bridge" else 0
        return {
            "embeddings": (src_size if self.tie_embeddings else src_size + tgt_size) * e,
            "encoder": recurrent(
                e, self.enc_hidden, self.enc_layers, 2 if self.bidirectional else 1
            ),
            "bridge": bridge,
            "attention": score + position + (k + d) * d,  # and W_c [d, K + d]
            "decoder": recurrent(first, d, self.dec_layers, 1),
            "output layer": (d + 1) * tgt_size,
        }

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Seq2SeqConfig:
        """Rebuild from ``to_json``'s dict; unknown or missing fields raise ``ValueError``
        (fields added since the first release may be missing: they take their defaults)."""
        if not isinstance(data, dict):
            raise LuongError(f"expected a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise LuongError(f"unknown fields {unknown}; expected {sorted(names)}")
        missing = sorted(names - set(data) - ADDED_MODEL_FIELDS)
        if missing:
            raise LuongError(f"missing fields {missing}; expected {sorted(names)}")
        return cls(**data)


# The most each size field of Seq2SeqConfig may be.
SIZE_BOUNDS = {
    "emb_dim": MAX_WIDTH,
    "enc_hidden": MAX_WIDTH,
    "enc_layers": MAX_LAYERS,
    "dec_hidden": MAX_WIDTH,
    "dec_layers": MAX_LAYERS,
    "window": MAX_SRC_LEN,
    "max_src_len": MAX_SRC_LEN,
}

# Seq2SeqConfig fields added after 0.1.0: a config.json written before them has none.
ADDED_MODEL_FIELDS = frozenset({"tie_embeddings"})


def _is_number(value: object) -> bool:
    """An int or a float, not a bool (``True < 1`` holds, but ``dropout = true`` is no rate)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def device_form(device: object, name: str = "device") -> tuple[str, int | None]:
    """The kind and index of a device name in one of the ``DEVICES`` forms: ``"cuda:1"`` ->
    ``("cuda", 1)``, ``"cpu"`` -> ``("cpu", None)``. The name alone is read: whether this
    machine has the device is ``luong.devices.resolve_device``'s question.

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


def _choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise LuongError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")


@dataclass(frozen=True)
class TrainConfig:
    """How to train. The defaults train the dates model of ``make demo``."""

    epochs: int = setting(
        3, "passes over the training data, the most (early stopping may end sooner)"
    )
    batch_size: int = setting(128, "pairs per batch (unless batch-tokens)")
    batch_tokens: int = setting(
        0,
        "batches of at most this many tokens instead, padding counted: rows x (longest source "
        "+ longest target, EOS and BOS included) (0: batches of batch-size pairs)",
    )
    accumulate: int = setting(
        1, "batches whose gradients add up to one optimizer step (1: a step per batch)"
    )
    optimizer: str = setting(
        "adam",
        "adam, or plain SGD (no momentum; Luong et al. 2015 section 4.1)",
        choices=OPTIMIZERS,
    )
    lr: float = setting(3e-3, "the optimizer's peak learning rate, > 0")
    schedule: str = setting(
        "linear",
        "the learning rate after the warm-up: constant, a linear or cosine decay to 0, or "
        "halving (lr for halve-after epochs, then halved at every later epoch)",
        choices=SCHEDULES,
    )
    halve_after: int = setting(
        0,
        "schedule halving: the epochs at the full lr before it halves every epoch (Luong et "
        "al. 2015: 8 of 12) (0: another schedule)",
    )
    warmup_steps: int = setting(100, "steps of linear warm-up from 0 to lr (0: none)")
    clip_norm: float = setting(1.0, "clip the gradients' norm to this (0: no clipping)")
    normalize: str = setting(
        "tokens",
        "the gradient is that of the batch's summed loss divided by its target tokens (the "
        "mean per token) or by its sentences (Luong et al. 2015's lr and clip-norm assume it)",
        choices=NORMALIZATIONS,
    )
    init_range: float = setting(
        0.0,
        "draw every weight from U(-r, r) with this r, from the seed (Luong et al. 2015: 0.1) "
        "(0: each layer's own initialisation)",
    )
    label_smoothing: float = setting(0.0, "the cross-entropy's label smoothing, 0 to < 1 (0: none)")
    eval_every: int = setting(
        100, "steps between dev evaluations (there is one at each epoch's end too)"
    )
    log_every: int = setting(10, "steps between the training records of log.jsonl")
    patience: int = setting(
        0, "stop after this many dev evaluations without a better score (0: never stop early)"
    )
    # Loss: lower is better; the others: higher.
    select: str = setting(
        "auto",
        "the dev figure that picks the best weights and drives early stopping: exact (exact "
        "match), bleu, chrf, loss (teacher-forced cross-entropy), or auto (bleu for a subword "
        "target vocabulary, exact otherwise)",
        choices=SELECTS,
    )
    seed: int = setting(0, "the seed of the model's initialisation, dropout and data order")
    max_decode_len: int = setting(
        0,
        "the longest output when dev and test are decoded, at most 10,000 (0: twice the "
        "source's length plus 10)",
    )
    eval_batch_size: int = setting(1000, "sentences per batch when dev and test are decoded")
    test_beam: int = setting(1, "the test split's decoding: greedy (1) or beam search of this size")
    test_alpha: float = setting(
        0.0, "the test split's length penalty with test-beam > 1, 0 to 5 (0: none)"
    )
    subword_sampling: float = setting(
        0.0,
        "subword regularisation while training (a subword vocabulary only): unigram samples "
        "segmentations with this smoothing alpha, BPE drops merges with this probability "
        "(0: off)",
    )
    checkpoint_every: int = setting(
        0, "steps between checkpoints (0: only the one at each epoch's end)"
    )
    keep_checkpoints: int = setting(
        2, "checkpoints kept in the run folder, the newest (0 or 1: the latest only)"
    )
    max_bad_steps: int = setting(5, "stop after this many non-finite steps in a row")
    device: str = setting(
        "auto",
        "where to train: auto (CUDA when present, else the CPU), cpu, cuda, cuda:N (GPU N) or mps",
        metavar="DEVICE",
    )
    precision: str = setting(
        "fp32",
        "fp32; bf16 autocast (the fused recurrence in float32 inside); fp16 autocast with a "
        "gradient scaler (CUDA only)",
        choices=PRECISIONS,
    )
    progress: bool = setting(True, "a progress bar on stderr (when stderr is a terminal)")
    tensorboard: bool = setting(
        False, "TensorBoard event files in RUN/tensorboard (needs luong[tensorboard])"
    )

    def __post_init__(self) -> None:
        positive = ("epochs", "batch_size", "eval_every", "log_every", "eval_batch_size")
        for name in (*positive, "max_bad_steps", "accumulate", "test_beam"):
            _positive_int(name, getattr(self, name))
        for name in (
            "warmup_steps",
            "patience",
            "max_decode_len",
            "checkpoint_every",
            "keep_checkpoints",
            "seed",
            "batch_tokens",
            "halve_after",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise LuongError(f"{name}: expected an int >= 0, got {value!r}")
        if self.seed >= 2**64:  # torch.manual_seed takes 64 bits
            raise LuongError(f"seed: expected an int below 2**64, got {self.seed}")
        if not _is_number(self.lr) or not 0 < self.lr < math.inf:
            raise LuongError(f"lr: expected a finite number > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise LuongError(
                f"schedule: expected one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
            )
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.schedule == "halving" and self.halve_after < 1:
            raise LuongError(
                "halve_after: schedule halving needs the epochs at the full lr, an int >= 1, "
                f"got {self.halve_after!r}"
            )
        if self.schedule != "halving" and self.halve_after != 0:
            raise LuongError(
                f"halve_after: only with schedule halving, got {self.halve_after!r} with "
                f"schedule {self.schedule!r}"
            )
        device_form(self.device)
        if self.precision not in PRECISIONS:
            raise LuongError(
                f"precision: expected one of {', '.join(PRECISIONS)}, got {self.precision!r}"
            )
        if not _is_number(self.clip_norm) or not 0 <= self.clip_norm < math.inf:
            raise LuongError(f"clip_norm: expected a finite number >= 0, got {self.clip_norm!r}")
        _choice("normalize", self.normalize, NORMALIZATIONS)
        if not _is_number(self.init_range) or not 0 <= self.init_range < math.inf:
            raise LuongError(f"init_range: expected a finite number >= 0, got {self.init_range!r}")
        if not _is_number(self.label_smoothing) or not 0 <= self.label_smoothing < 1:
            raise LuongError(
                f"label_smoothing: expected a number in [0, 1), got {self.label_smoothing!r}"
            )
        _choice("select", self.select, SELECTS)
        for name in ("progress", "tensorboard"):  # a TOML `progress = "no"` is no bool
            if not isinstance(getattr(self, name), bool):
                raise LuongTypeError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        try:  # the decoding fields are checked as the SearchOptions they make
            _ = self.test_search
        except OptionError as error:
            raise LuongError(f"{SEARCH_FIELDS[error.name]}: {error.detail}") from None
        sampling = self.subword_sampling
        if not isinstance(sampling, int | float) or not 0 <= sampling < 1:
            raise LuongError(f"subword_sampling: expected a number in [0, 1), got {sampling!r}")

    @property
    def dev_search(self) -> SearchOptions:
        """How dev is decoded: greedy search, outputs up to ``max_decode_len``."""
        return SearchOptions(max_len=self.max_decode_len or None)

    @property
    def test_search(self) -> SearchOptions:
        """How the test split is decoded: ``test_beam``, ``test_alpha``, ``max_decode_len``."""
        return SearchOptions(
            beam=self.test_beam, alpha=self.test_alpha, max_len=self.max_decode_len or None
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# The TrainConfig field that gives each SearchOptions field of ``test_search``.
SEARCH_FIELDS = {"beam": "test_beam", "alpha": "test_alpha", "max_len": "max_decode_len"}


@dataclass(frozen=True)
class VocabConfig:
    """How the vocabularies are built from the training split."""

    subword: str = setting(
        "none",
        "none: the data's own symbols (characters or whitespace-separated tokens); unigram or "
        "bpe: a sentencepiece model learned from the training text (luong.subword)",
        choices=SUBWORD_KINDS,
    )
    vocab_size: int = setting(
        0,
        "the most symbols, the specials included (0: every symbol with subword none, 8000 "
        "pieces with a subword model)",
    )
    min_count: int = setting(
        1, "keep the symbols seen at least this often (1: all; subword none only)"
    )
    joint_vocab: bool = setting(
        False, "one vocabulary for the source and the target, learned from both"
    )
    # The language pair is not used in training: it is recorded in the model folder's
    # config.json (src_lang, tgt_lang) for luong serve's LibreTranslate API and luong po.
    src_lang: str = setting(
        "",
        "the source language, an ISO 639 code (en), recorded in the model folder "
        "(luong serve routes LibreTranslate requests by it; empty: unknown)",
        metavar="CODE",
    )
    tgt_lang: str = setting(
        "", "the target language, an ISO 639 code (de) (empty: unknown)", metavar="CODE"
    )

    def __post_init__(self) -> None:
        _choice("subword", self.subword, SUBWORD_KINDS)
        value = self.vocab_size
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LuongError(f"vocab_size: expected an int >= 0, got {value!r}")
        _positive_int("min_count", self.min_count)
        if not isinstance(self.joint_vocab, bool):
            raise LuongTypeError(f"joint_vocab: expected a bool, got {self.joint_vocab!r}")
        for name in ("src_lang", "tgt_lang"):  # the codes themselves: luong.languages (babel)
            if not isinstance(getattr(self, name), str):
                raise LuongTypeError(
                    f"{name}: expected a language code, got {getattr(self, name)!r}"
                )
        if self.subword != "none" and self.min_count != 1:
            raise LuongError(
                f"min_count: sentencepiece picks its pieces by vocab_size, got min_count "
                f"{self.min_count} with subword {self.subword!r}"
            )

    @property
    def size(self) -> int:
        """The vocabulary size to learn: ``vocab_size``, 8000 subwords when it is 0."""
        return self.vocab_size or (8000 if self.subword != "none" else 0)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RunConfig:
    """What a run is made of: a task and its data options, the vocabularies, the
    architecture and the training."""

    task: str = "dates"  # a built-in task (luong.tasks.TASKS) or own files ("tsv")
    data: dict[str, Any] = dataclasses.field(default_factory=dict)  # load_task's options
    model: Seq2SeqConfig = dataclasses.field(default_factory=Seq2SeqConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    vocab: VocabConfig = dataclasses.field(default_factory=VocabConfig)


def _positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise LuongError(f"{name}: expected an int >= 1, got {value!r}")


def config_from_dict(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build dataclass ``cls`` from ``data``, naming unknown keys and the valid ones."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise LuongError(f"{where}: unknown options {unknown}; valid options: {sorted(names)}")
    return cls(**data)


TABLES = ("model", "train", "vocab")
# A run's TOML (``--config``, a run folder's ``config.toml``): top-level ``task``, the task's
# data options in ``[data]``, then the configs' tables.
TOP_LEVEL = ("task", "data", *TABLES)


def read_toml_tables(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A run's TOML file (``--config``): ``task = "NAME"`` (optional), the ``[data]`` table
    (the task's data options) and the ``[model]``, ``[train]`` and ``[vocab]`` tables, whose
    keys are checked against the fields of ``Seq2SeqConfig``, ``TrainConfig`` and
    ``VocabConfig``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: larger than ``luong.files.MAX_TEXT_BYTES``, not UTF-8 TOML, an unknown
            key or table (the message names the file and the key).
    """
    path = Path(path)
    try:
        data = tomllib.loads(read_bounded(path, MAX_TEXT_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise LuongError(f"{path}: is a directory, expected a TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise LuongError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:
        raise LuongError(f"{path}: not valid TOML (nested too deep)") from None
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise LuongError(
            f'{path}: unknown key {unknown[0]!r}; expected task = "NAME" and the tables '
            "[data], [model], [train], [vocab]"
        )
    if "task" in data and not isinstance(data["task"], str):
        raise LuongError(f"{path}: task = {data['task']!r:.40} is not a string")
    classes = {"model": Seq2SeqConfig, "train": TrainConfig, "vocab": VocabConfig}
    for name, table in data.items():
        if name == "task":
            continue
        if not isinstance(table, dict):
            raise LuongError(
                f"{path}: {name} = {table!r:.40} is not a table; expected [{name}] with "
                "options under it"
            )
        if name in classes:
            valid = sorted(f.name for f in fields(classes[name]))
            bad = sorted(set(table) - set(valid))
            if bad:
                raise LuongError(
                    f"{path}: unknown key {bad[0]!r} in [{name}]; valid keys: {', '.join(valid)}"
                )
    return data


def run_toml(config: RunConfig) -> str:
    """``config`` as the TOML that ``read_toml_tables`` reads back (a run folder's
    ``config.toml``): the task, its data options and every field of the three configs."""
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in config.data.items()}
    return tomli_w.dumps(
        {
            "task": config.task,
            "data": data,
            "model": config.model.to_json(),
            "train": config.train.to_json(),
            "vocab": config.vocab.to_json(),
        }
    )
