"""Run folders read back: what each run was (its ``config.toml``), what it gave
(``metrics.json``) and how it went (``log.jsonl``), and a table that compares them
(``luong runs``, ``luong curves``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from luong.config.run import read_toml_tables
from luong.errors import LuongError
from luong.files import read_json
from luong.folder_files import METRICS, MODEL_CONFIG, RECORDS, RUN, RUN_CONFIG
from luong.model import language_pair
from luong.tasks import OWN_DATA

__all__ = ["RunFolder", "compare", "find_runs", "format_table", "read_records", "read_run"]

# The dev figure each selection means (TrainConfig.select, resolved in metrics.json).
DEV_KEYS = {"exact": "dev_exact_match", "bleu": "dev_bleu", "chrf": "dev_chrf", "loss": "dev_loss"}
TEST_KEYS = ("test_exact_match", "test_char_accuracy", "test_wer", "test_per", "test_bleu")


@dataclass
class RunFolder:
    """One run folder, read back."""

    path: Path
    task: str  # the task, or for your own data its training file
    settings: dict[str, Any]  # "model.cell", "train.lr", "data.seed", ...: every field
    metrics: dict[str, Any] | None  # metrics.json; None while the run has not finished
    records: list[dict[str, Any]]  # log.jsonl (none for a run from before it)
    # The language pair its model records (config.json: luong train --src-lang/--tgt-lang,
    # or luong pair), "en-de"; None when it records none or has no model yet.
    pair: str | None = None

    @property
    def select(self) -> str:
        """The dev figure the run selected on: its metrics', else exact match."""
        return str((self.metrics or {}).get("select", "exact"))

    @property
    def dev_key(self) -> str:
        return DEV_KEYS.get(self.select, "dev_exact_match")


def read_run(path: str | Path) -> RunFolder:
    """The run folder ``path``: its settings (``config.toml``, or ``run.json`` for a run from
    before it), ``metrics.json`` if the run finished, and ``log.jsonl``.

    Raises:
        ValueError: ``path`` is not a run folder (no ``run.json``), or a file of it is
            damaged (the message names the file).
    """
    path = Path(path)
    if not (path / RUN).is_file():
        what = "no such folder" if not path.exists() else f"not a luong run folder (no {RUN})"
        raise LuongError(f"{path}: {what}")
    run = read_json(path / RUN)
    if not isinstance(run, dict):
        raise LuongError(f"{path / RUN}: expected a JSON object, got {type(run).__name__}")
    if (path / RUN_CONFIG).is_file():
        tables = read_toml_tables(path / RUN_CONFIG)
    else:
        tables = {
            "task": run.get("task"),
            "data": run.get("task_options", {}),
            **{name: run.get(f"{name}_config", {}) for name in ("model", "train", "vocab")},
        }
    task = str(tables.get("task", "?"))
    data = tables.get("data") or {}
    if task == OWN_DATA:
        train = data.get("train")
        task = str(train[0] if isinstance(train, list) else train)
    settings = {
        f"{table}.{key}": value
        for table in ("data", "model", "train", "vocab")
        for key, value in (tables.get(table) or {}).items()
    }
    metrics = read_json(path / METRICS) if (path / METRICS).is_file() else None
    pair = None
    if (path / MODEL_CONFIG).is_file():
        src_lang, tgt_lang = language_pair(read_json(path / MODEL_CONFIG), path / MODEL_CONFIG)
        if src_lang or tgt_lang:
            pair = f"{src_lang or '?'}-{tgt_lang or '?'}"
    return RunFolder(path, task, settings, metrics, read_records(path / RECORDS), pair)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a ``log.jsonl`` (none when there is no such file); a line cut short
    by a kill is left out."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("step"), int):
            rows.append(row)
    return rows


def find_runs(root: str | Path) -> list[Path]:
    """The run folders at or under ``root``, sorted by path.

    Raises:
        ValueError: ``root`` is not a folder, or holds no run folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise LuongError(f"{root}: no such folder")
    found = sorted(path.parent for path in root.rglob(RUN))
    if not found:
        raise LuongError(f"{root}: no luong run folders in it (none holds {RUN})")
    return found


def compare(runs: Sequence[RunFolder], root: Path | None = None) -> list[dict[str, Any]]:
    """One row per run: its name (the path under ``root``), task or data, the settings that
    differ between the runs, its language pair (``"en-de"``; None: unknown), the best dev
    figure, the test figures, training time, steps."""
    keys = sorted({key for run in runs for key in run.settings})
    differing = [
        key for key in keys if len({json.dumps(run.settings.get(key)) for run in runs}) > 1
    ]
    rows = []
    for run in runs:
        name = run.path.relative_to(root) if root is not None else run.path
        m = run.metrics or {}
        row: dict[str, Any] = {"run": str(name) if str(name) != "." else run.path.name}
        row["task"] = run.task
        row.update({key: run.settings.get(key) for key in differing})
        row["pair"] = run.pair
        row["dev"] = m.get(run.dev_key)
        row["select"] = run.select
        row.update({key: m[key] for key in TEST_KEYS if m.get(key) is not None})
        row["train_seconds"] = m.get("train_seconds")
        row["steps"] = m.get("steps", run.records[-1]["step"] if run.records else 0)
        row["finished"] = run.metrics is not None
        rows.append(row)
    return rows


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """``rows`` as an aligned text table (a column per key of any row; "-" where none)."""
    columns = list(dict.fromkeys(key for row in rows for key in row))

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    table = [columns, *([cell(row.get(key)) for key in columns] for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    )
