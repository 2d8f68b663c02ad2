"""Tasks: seeded sources of (source, target) string pairs, with the settings that suit them.

``luong.tasks.dates``: human-written dates -> ISO ``YYYY-MM-DD`` (the toy task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from luong.model import Seq2SeqConfig
from luong.trainer import TrainConfig
from luong.vocab import Tokens

__all__ = ["TASKS", "TaskData", "load_task"]

TASKS: tuple[str, ...] = ("dates",)

Pair = tuple[str, str]


@dataclass(frozen=True)
class TaskData:
    """A task's splits and how to tokenise and train on it."""

    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    src_tokens: Tokens = "char"  # "char" or "space"
    tgt_tokens: Tokens = "char"
    lowercase: bool = False  # lowercase the source inside the vocabulary
    model_config: Seq2SeqConfig = field(default_factory=Seq2SeqConfig)
    train_config: TrainConfig = field(default_factory=TrainConfig)


def load_task(name: str, seed: int = 0, **options: Any) -> TaskData:
    """The data of task ``name``; ``options`` go to the task (dates: ``locales``,
    ``n_train``, ``n_dev``, ``n_test``).

    Raises:
        ValueError: unknown task (the message lists the known ones) or option.
    """
    if name == "dates":
        from luong.tasks import dates

        allowed = {"locales", "n_train", "n_dev", "n_test"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ValueError(f"dates: unknown options {unknown}; valid: {sorted(allowed)}")
        splits = dates.splits(seed=seed, **options)
        return TaskData(
            splits.train,
            splits.dev,
            splits.test,
            lowercase=True,
        )
    raise ValueError(f"task: expected one of {', '.join(TASKS)}, got {name!r}")
