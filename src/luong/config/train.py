"""``TrainConfig``: how a model trains, a checked dataclass (the ``[train]`` table of a run's
TOML), saved in every run folder. How it decodes its dev and test splits is ``SearchOptions``
(``dev_search``, ``test_search``), whose checks its decoding fields pass.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.config.choices import (
    NORMALIZATIONS,
    OPTIMIZERS,
    PRECISIONS,
    SCHEDULES,
    SELECTS,
    device_form,
)
from luong.config.fields import check_choice, is_number, setting
from luong.config.search import OptionError, SearchOptions

__all__ = ["TrainConfig"]


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
    init_from: str = setting(
        "",
        "fine-tune a trained model: a model folder, or a run folder (its model); the run starts "
        "from its weights and vocabularies, takes its [model] settings (dropout may differ) and "
        "trains on this run's data with this run's training settings (empty: a new model)",
        metavar="MODEL",
    )
    label_smoothing: float = setting(0.0, "the cross-entropy's label smoothing, 0 to < 1 (0: none)")
    l2sp: float = setting(
        0.0,
        "fine-tuning: after each step, move every weight lr x this of the way back to the "
        "--init-from model's (L2-SP, Li et al. 2018, decoupled as AdamW's weight decay), so "
        "that the run forgets less of the model; lr x this at most 1 (0: none)",
    )
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
    progress: bool = setting(
        True,
        "progress on stderr: a bar on a terminal, elsewhere (a log file, a pipe) a line every "
        "30 s (step/total, tokens/s, ETA)",
    )
    tensorboard: bool = setting(
        False, "TensorBoard event files in RUN/tensorboard (needs luong[tensorboard])"
    )

    def __post_init__(self) -> None:
        positive = ("epochs", "batch_size", "eval_every", "log_every", "eval_batch_size")
        for name in (*positive, "max_bad_steps", "accumulate", "test_beam"):
            check_positive_int(name, getattr(self, name))
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
        if not is_number(self.lr) or not 0 < self.lr < math.inf:
            raise LuongError(f"lr: expected a finite number > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise LuongError(
                f"schedule: expected one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
            )
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
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
        if not is_number(self.clip_norm) or not 0 <= self.clip_norm < math.inf:
            raise LuongError(f"clip_norm: expected a finite number >= 0, got {self.clip_norm!r}")
        check_choice("normalize", self.normalize, NORMALIZATIONS)
        if not is_number(self.init_range) or not 0 <= self.init_range < math.inf:
            raise LuongError(f"init_range: expected a finite number >= 0, got {self.init_range!r}")
        if not is_number(self.label_smoothing) or not 0 <= self.label_smoothing < 1:
            raise LuongError(
                f"label_smoothing: expected a number in [0, 1), got {self.label_smoothing!r}"
            )
        check_choice("select", self.select, SELECTS)
        if not isinstance(self.init_from, str):
            raise LuongTypeError(
                "init_from: expected one model folder (a path as a str), got "
                f"{type(self.init_from).__name__} {self.init_from!r:.80}"
            )
        if not is_number(self.l2sp) or not 0 <= self.l2sp < math.inf:
            raise LuongError(f"l2sp: expected a finite number >= 0, got {self.l2sp!r}")
        if self.l2sp and not self.init_from:
            raise LuongError(
                f"l2sp: pulls the weights toward the model of init_from (--init-from), which "
                f"this run does not have; give one, or leave l2sp 0, got {self.l2sp!r}"
            )
        if is_number(self.lr) and self.lr * self.l2sp > 1:
            raise LuongError(
                f"l2sp: lr x l2sp is the share of the way back to the model's weights each step "
                f"moves, at most 1; got {self.lr:g} x {self.l2sp:g} = {self.lr * self.l2sp:g}"
            )
        if self.init_from and self.init_range:
            raise LuongError(
                f"init_range: draws every weight anew, which would undo init_from "
                f"{self.init_from!r}; leave it 0, got {self.init_range!r}"
            )
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
