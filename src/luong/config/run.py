"""``RunConfig``: what a run is made of (a task and its data options, the architecture, the
training, the vocabularies), and its TOML form: the file ``luong train --config`` reads
(``read_toml_tables``) and a run folder's ``config.toml`` (``run_toml``).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import tomli_w

from luong.config.model import Seq2SeqConfig
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.errors import LuongError
from luong.files import MAX_TEXT_BYTES, read_bounded

__all__ = ["RunConfig", "read_toml_tables", "run_toml"]


@dataclass(frozen=True)
class RunConfig:
    """What a run is made of: a task and its data options, the vocabularies, the
    architecture and the training."""

    task: str = "dates"  # a built-in task (luong.tasks.TASKS) or own files ("tsv")
    data: dict[str, Any] = dataclasses.field(default_factory=dict)  # load_task's options
    model: Seq2SeqConfig = dataclasses.field(default_factory=Seq2SeqConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    vocab: VocabConfig = dataclasses.field(default_factory=VocabConfig)


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
