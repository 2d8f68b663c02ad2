"""What a run is made of: the model's architecture and how it trains, as typed dataclasses.

Both are plain data: checked once on construction (each error names the field, the valid
choices and the value), saved as JSON beside the weights and in every run folder, rebuilt
from it on load. Tasks give their defaults as these dataclasses (``luong.tasks``).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from luong.attention import GLOBAL_SCORES, LOCAL_MODES, LOCAL_SCORES, SAME_WIDTH_SCORES
from luong.distributed import DEVICES
from luong.files import MAX_TEXT_BYTES, read_bounded

__all__ = [
    "ATTENTIONS",
    "BRIDGES",
    "CELLS",
    "LOCALS",
    "PRECISIONS",
    "SCHEDULES",
    "Seq2SeqConfig",
    "TrainConfig",
    "config_from_dict",
    "read_toml_tables",
]

ATTENTIONS: tuple[str, ...] = (*GLOBAL_SCORES, "bahdanau")
LOCALS: tuple[str, ...] = ("none", *LOCAL_MODES)
CELLS: tuple[str, ...] = ("lstm", "gru")
BRIDGES: tuple[str, ...] = ("bridge", "last", "zero")
SCHEDULES: tuple[str, ...] = ("constant", "linear", "cosine")
PRECISIONS: tuple[str, ...] = ("fp32", "bf16")


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The architecture. The defaults are the dates model of ``make demo``."""

    cell: str = "gru"  # recurrent cell of encoder and decoder: "lstm" or "gru"
    emb_dim: int = 64  # E: width of the source and target embeddings
    enc_hidden: int = 64  # encoder hidden size per direction
    enc_layers: int = 2  # encoder layers
    bidirectional: bool = True  # bidirectional encoder: keys are K = 2 * enc_hidden wide
    dec_hidden: int = 128  # d: decoder hidden size, the attention's query width
    dec_layers: int = 1  # decoder layers
    # The score (Luong eq. 8): "dot", "general", "concat", "location", "scaled_dot"
    # (dot / sqrt(d)), or "bahdanau" (additive, attends before the step).
    attention: str = "dot"
    # Luong section 3.2: "none" (global attention), "monotonic" (local-m, p_t = t) or
    # "predictive" (local-p, eq. 9-10); local takes dot, general, concat or scaled_dot.
    local: str = "none"
    window: int = 10  # D: local attention reads the source window [p_t - D, p_t + D]
    # The longest source the model takes, in symbols (its EOS not counted): longer training
    # sources stop the run, luong translate rejects (or --truncate cuts) longer lines, and
    # the location score's W_a has a row per position (max_src_len + 1, the EOS included).
    max_src_len: int = 64
    input_feed: bool = True  # feed h~_{t-1} into step t (Luong section 3.3)
    bridge: str = "bridge"  # initial decoder state: "bridge" (linear + tanh), "last", "zero"
    dropout: float = 0.0  # on embeddings, between layers and before the output layer

    def __post_init__(self) -> None:
        _choice("cell", self.cell, CELLS)
        _choice("attention", self.attention, ATTENTIONS)
        _choice("local", self.local, LOCALS)
        _choice("bridge", self.bridge, BRIDGES)
        sizes = ("emb_dim", "enc_hidden", "enc_layers", "dec_hidden", "dec_layers")
        for name in (*sizes, "window", "max_src_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        for name in ("bidirectional", "input_feed"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        if not isinstance(self.dropout, int | float) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a number in [0, 1), got {self.dropout!r}")
        if self.local != "none" and self.attention not in LOCAL_SCORES:
            raise ValueError(
                f"local {self.local!r}: expected attention one of {', '.join(LOCAL_SCORES)} "
                f"inside the window, got {self.attention!r} (use local 'none' for it)"
            )
        if self.attention in SAME_WIDTH_SCORES and self.key_dim != self.dec_hidden:
            raise ValueError(
                f"attention {self.attention!r} needs keys as wide as the decoder: key width "
                f"{self.key_dim} (enc_hidden x directions) != dec_hidden {self.dec_hidden}; "
                "use general, concat or bahdanau, or change the sizes"
            )
        if self.bridge == "last" and self.key_dim != self.dec_hidden:
            raise ValueError(
                f"bridge 'last' copies the encoder state: key width {self.key_dim} != "
                f"dec_hidden {self.dec_hidden}; use bridge 'bridge' or 'zero'"
            )

    @property
    def key_dim(self) -> int:
        """K, the width of the encoder outputs."""
        return self.enc_hidden * (2 if self.bidirectional else 1)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Seq2SeqConfig:
        """Rebuild from ``to_json``'s dict; unknown or missing fields raise ``ValueError``."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown fields {unknown}; expected {sorted(names)}")
        missing = sorted(names - set(data))
        if missing:
            raise ValueError(f"missing fields {missing}; expected {sorted(names)}")
        return cls(**data)


def _choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")


@dataclass(frozen=True)
class TrainConfig:
    """How to train. The defaults train the dates model of ``make demo``."""

    epochs: int = 3  # passes over the training data (the most; early stopping may end sooner)
    batch_size: int = 128  # pairs per batch
    lr: float = 3e-3  # Adam's peak learning rate
    schedule: str = "linear"  # "constant", "linear" or "cosine" decay to 0 after warm-up
    warmup_steps: int = 100  # linear warm-up from 0 to lr
    clip_norm: float = 1.0  # gradient norm clipping (0 turns it off)
    label_smoothing: float = 0.0  # cross-entropy label smoothing
    eval_every: int = 100  # steps between dev evaluations (and at the end of each epoch)
    patience: int = 0  # stop after this many evaluations without a better dev score; 0: never
    seed: int = 0  # model initialisation, dropout and data order
    max_decode_len: int = 0  # longest output at evaluation; 0: twice the source plus 10
    eval_batch_size: int = 1000  # sentences per batch at evaluation
    checkpoint_every: int = 0  # steps between checkpoints (one at every epoch's end anyway)
    keep_checkpoints: int = 2  # checkpoints to keep in the run folder (at least 1 is kept)
    max_bad_steps: int = 5  # stop after this many non-finite steps in a row
    device: str = "auto"  # "auto" (CUDA when present), "cpu" or "cuda"
    precision: str = "fp32"  # "fp32", or "bf16" autocast (for GPUs; slow on most CPUs)
    progress: bool = True  # a tqdm progress bar on stderr

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "eval_every", "eval_batch_size", "max_bad_steps"):
            _positive_int(name, getattr(self, name))
        for name in (
            "warmup_steps",
            "patience",
            "max_decode_len",
            "checkpoint_every",
            "keep_checkpoints",
            "seed",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
        if not isinstance(self.lr, int | float) or not self.lr > 0:
            raise ValueError(f"lr: expected a number > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(
                f"schedule: expected one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
            )
        if self.device not in DEVICES:
            raise ValueError(f"device: expected one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision: expected one of {', '.join(PRECISIONS)}, got {self.precision!r}"
            )
        if not isinstance(self.clip_norm, int | float) or self.clip_norm < 0:
            raise ValueError(f"clip_norm: expected a number >= 0, got {self.clip_norm!r}")
        if not isinstance(self.label_smoothing, int | float) or not 0 <= self.label_smoothing < 1:
            raise ValueError(
                f"label_smoothing: expected a number in [0, 1), got {self.label_smoothing!r}"
            )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value!r}")


def config_from_dict(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build dataclass ``cls`` from ``data``, naming unknown keys and the valid ones."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where}: unknown options {unknown}; valid options: {sorted(names)}")
    return cls(**data)


TABLES = ("model", "train")


def read_toml_tables(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The ``[model]`` and ``[train]`` tables of a TOML file (``luong train --config``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: larger than ``luong.files.MAX_TEXT_BYTES``, not UTF-8 TOML, or a table
            other than those two (the message names the file).
    """
    path = Path(path)
    try:
        data = tomllib.loads(read_bounded(path, MAX_TEXT_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        raise ValueError(f"{path}: unknown tables {unknown}; expected [model] and [train]")
    return data
