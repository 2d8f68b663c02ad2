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

from luong.common.errors import LuongError
from luong.common.files import MAX_TEXT_BYTES, read_bounded
from luong.common.folder_files import CHECKPOINTS, RUN_CONFIG
from luong.config.model import Seq2SeqConfig
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig

__all__ = ["DATA_FILES", "RunConfig", "carried_run_toml", "read_toml_tables", "run_of", "run_toml"]


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
# Your own data's options that name files (``luong.tasks.load_task``): a TSV file, or a
# [source, target] pair of files; relative to the TOML file's folder in a TOML file.
DATA_FILES = ("train", "dev", "test", "prepared", "mix")
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
        ValueError: larger than ``luong.common.files.MAX_TEXT_BYTES``, not UTF-8 TOML, an unknown
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


def run_of(folder: str | os.PathLike[str]) -> Path | None:
    """The run folder a model folder belongs to: ``RUN`` for ``RUN/checkpoints/step-*`` and
    for a run folder ``RUN`` itself (it holds ``checkpoints/``); None for a folder outside
    any run."""
    folder = Path(folder)
    if folder.parent.name != CHECKPOINTS and folder.resolve().parent.name == CHECKPOINTS:
        folder = folder.resolve()  # "step-5" given inside RUN/checkpoints, or a link to it
    if folder.parent.name == CHECKPOINTS:
        return folder.parent.parent
    return folder if (folder / CHECKPOINTS).is_dir() else None


def carried_run_toml(
    model_folder: str | os.PathLike[str], out: str | os.PathLike[str]
) -> str | None:
    """The ``config.toml`` that a folder ``out`` derived from the model folder
    ``model_folder`` (its int8 form, an average of its run's checkpoints) carries, so that
    what reads a run's settings reads them there too (``luong eval OUT`` its task,
    ``luong train --config OUT/config.toml`` the run): ``model_folder``'s own
    ``config.toml``, else its run's (``run_of``); None when there is none.

    It is the file as written, byte for byte, unless its ``[data]`` names files by relative
    paths (your own data's, ``DATA_FILES``): those are read from the file's folder, so they
    are written again relative to ``out``, naming the same files; so is the model a
    fine-tuning run started from (``[train] init_from``). A file that is not UTF-8
    TOML is not carried (the run's own commands report it).
    """
    folder = Path(model_folder)
    path = folder / RUN_CONFIG
    if not path.is_file():
        run = run_of(folder)
        if run is None or not (run / RUN_CONFIG).is_file():
            return None
        path = run / RUN_CONFIG
    try:
        text = read_bounded(path, MAX_TEXT_BYTES).decode("utf-8")
        tables = tomllib.loads(text)
    except (ValueError, RecursionError):  # not UTF-8 TOML: the run's own commands say so
        return None
    moved = dict(tables)
    data, train = tables.get("data"), tables.get("train")
    if isinstance(data, dict):
        moved["data"] = {
            key: _moved(value, path.parent, Path(out)) if key in DATA_FILES else value
            for key, value in data.items()
        }
    if isinstance(train, dict) and train.get("init_from"):  # the model it was fine-tuned from
        moved["train"] = {**train, "init_from": _moved(train["init_from"], path.parent, Path(out))}
    return text if moved == tables else tomli_w.dumps(moved)


def _moved(value: Any, start: Path, out: Path) -> Any:
    """A relative path read from ``start`` (or a list of them), written relative to ``out``
    (both as the file system resolves them); other values as they are."""
    if isinstance(value, list):
        return [_moved(one, start, out) for one in value]
    if not isinstance(value, str) or os.path.isabs(value):
        return value
    folder, name = os.path.split(os.path.join(start, value))
    target = os.path.join(os.path.realpath(folder), name)
    return os.path.relpath(target, os.path.realpath(out))
