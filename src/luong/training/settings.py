"""A run's settings resolved (``configure``): the task's defaults (or a preset's), then a
TOML file's tables, then the command line's flags, into a ``RunConfig``; and the file names
that go with them: a config file's relative paths read from its folder, and two names of the
same files told apart from two files (``relative``, ``same_files``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from luong.common.errors import LuongError
from luong.common.folder_files import RUN, RUN_CONFIG
from luong.config.fields import config_from_dict
from luong.config.model import Seq2SeqConfig
from luong.config.presets import FINE_TUNING, Preset
from luong.config.run import DATA_FILES, RunConfig, read_toml_tables
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.tasks import OWN_DATA, task_configs
from luong.training.fine_tuning import TOKEN_OPTIONS, check_given, find_init_model

__all__ = ["configure", "relative", "same_files"]

LOGGER = logging.getLogger("luong")


def configure(
    task: str | None = None,
    data: Mapping[str, Any] | None = None,
    *,
    preset: str | None = None,
    config_file: str | Path | None = None,
    model: Mapping[str, Any] | None = None,
    train: Mapping[str, Any] | None = None,
    vocab: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Resolve a run's settings, later ones winning: the defaults of the task (or of
    ``preset``, settings your own data borrows: a built-in task's, or translation's), the
    tables of ``config_file`` (TOML: ``task``, ``[data]``, ``[model]``, ``[train]``,
    ``[vocab]``; a run folder's ``config.toml`` is one), then ``task``, ``data``, ``model``,
    ``train`` and ``vocab`` (the command line's flags).

    The task is ``task``, else the file's, else dates. The data options are the file's
    ``[data]`` (when the file names the same task) updated with ``data``; a built-in task's
    data seed is 0 unless one of them sets it.

    Files. A relative path in the file's ``[data]`` (your own data's ``train``, ``dev``,
    ``test``) is read from the file's folder, whatever the working directory; the options
    returned name it from the working directory, as ``data``'s paths are. A run folder's
    ``config.toml`` from before this rule (its paths relative to where that run was started)
    is still read: a path missing from its folder but present in the working directory is
    taken from there, with a warning.

    Raises:
        FileNotFoundError: ``config_file`` does not exist, or a file its ``[data]`` names
            (the message names the key and ``config_file``).
        ValueError: an unknown task, preset, table or field (named, with the valid ones), or
            a value a config refuses.
    """
    tables = read_toml_tables(config_file) if config_file is not None else {}
    file_task = tables.get("task")
    task = task or file_task or "dates"
    train = dict(train or {})
    init_from = train.get("init_from")
    if init_from is None and config_file is not None:  # the file's: read from its folder
        init_from = _file_of_init_from(Path(config_file), tables.get("train", {}))
        if init_from:
            train["init_from"] = init_from
    if preset in FINE_TUNING and not init_from:
        raise LuongError(
            f"--preset {preset}: fine-tunes a trained model; name it with --init-from MODEL"
        )
    defaults = task_configs(preset or task)
    init = find_init_model(init_from, "--init-from") if init_from else None
    if init is not None:  # the model's architecture and vocabularies, not the preset's
        defaults = Preset(init.model, defaults.train, init.vocab_config())
        for name, given in (("model", model), ("vocab", vocab)):
            check_given(init, name, tables.get(name, {}), config_file)
            check_given(init, name, given or {}, None)

    def resolve(cls: type, name: str, default: Any, given: Mapping[str, Any] | None) -> Any:
        fields = {**default.to_json(), **tables.get(name, {}), **(given or {})}
        return config_from_dict(cls, fields, f"[{name}]")

    file_data = dict(tables.get("data", {})) if file_task in (None, task) else {}
    if task == OWN_DATA and config_file is not None:
        for key in DATA_FILES:
            if key in file_data and key not in (data or {}):  # a flag's file is the flag's
                file_data[key] = _file_of_config(Path(config_file), key, file_data[key])
    options = {
        **({"seed": 0} if task != OWN_DATA else {}),
        **file_data,
        **(data or {}),
    }
    if init is not None:
        if "prepared" in options:
            raise LuongError(
                "--data: a prepared corpus brings its own vocabularies, --init-from the "
                "model's; give the training pairs as --train FILE.tsv"
            )
        flags = {k: v for k, v in (data or {}).items() if v is not None}
        check_given(init, "data", flags, None)
        check_given(
            init, "data", {k: v for k, v in file_data.items() if k not in (data or {})}, config_file
        )
    for key in TOKEN_OPTIONS:  # not given: the model's, else characters
        if key in options and options[key] is None:
            options[key] = (init.tokens.get(key) if init is not None else None) or "char"
    return RunConfig(
        task,
        options,
        resolve(Seq2SeqConfig, "model", defaults.model, model),
        resolve(TrainConfig, "train", defaults.train, train),
        resolve(VocabConfig, "vocab", defaults.vocab, vocab),
    )


def _file_of_config(config_file: Path, key: str, value: Any) -> Any:
    """``[data] key = value`` of ``config_file`` (a path, or a [source, target] pair of
    them) named from the working directory: a relative path is read from the file's folder.
    A value of another type is left for ``load_task`` to refuse.

    Raises:
        FileNotFoundError: no such file (the message names the key and the config file).
    """
    if isinstance(value, list):
        return [_file_of_config(config_file, key, one) for one in value]
    if not isinstance(value, str):
        return value
    joined = config_file.parent / value  # an absolute value stays itself
    if joined.exists():
        return _from_here(joined)
    # A run folder's config.toml written before paths were kept relative to the folder held
    # them as given, relative to where that run was started.
    old_run = config_file.name == RUN_CONFIG and (config_file.parent / RUN).is_file()
    if old_run and not Path(value).is_absolute() and Path(value).exists():
        LOGGER.warning(
            f"warning: {config_file}: [data] {key} = {value!r} is not in {config_file.parent}; "
            "read from the working directory, as run folders written before paths were kept "
            "relative to them meant"
        )
        return value
    raise FileNotFoundError(
        f"{_from_here(joined)}: no such file ({key} = {value!r} in [data] of {config_file}, "
        "whose relative paths are read from its folder)"
    )


def _file_of_init_from(config_file: Path, table: object) -> str | None:
    """``[train] init_from`` of ``config_file`` named from the working directory (a relative
    path is read from the file's folder, as its ``[data]`` files are); None when it names
    none (a value of another type is left for ``TrainConfig`` to refuse)."""
    value = table.get("init_from") if isinstance(table, dict) else None
    if not isinstance(value, str) or not value:
        return None
    return _from_here(config_file.parent / value)


def _physical(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute with the links and ``..`` of its folder resolved (its own
    name kept: a linked file keeps the name it was given)."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(os.path.realpath(folder or os.curdir), name)


def relative(path: str | os.PathLike[str], start: str | os.PathLike[str]) -> str:
    """``path`` relative to the folder ``start`` (both as the file system resolves them),
    or absolute where no relative path leads there (another drive)."""
    try:
        return os.path.relpath(_physical(path), os.path.realpath(start))
    except ValueError:
        return _physical(path)


def _from_here(path: str | os.PathLike[str]) -> str:
    return relative(path, os.curdir)


def same_files(old: Any, new: Any) -> bool:
    """Whether two data options (a path or a [source, target] pair of them, as ``run.json``
    keeps them) name the same files from the working directory."""
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(map(same_files, old, new))
    if isinstance(old, str) and isinstance(new, str):
        return _physical(old) == _physical(new)
    return bool(old == new)
