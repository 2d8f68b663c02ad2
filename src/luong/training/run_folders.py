"""Run folders read back: what each run was (its ``config.toml``), what it gave
(``metrics.json``) and how it went (``log.jsonl``), and a table that compares them
(``luong runs``, ``luong curves``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from luong.common.errors import LuongError
from luong.common.files import read_json
from luong.common.folder_files import CHECKPOINTS, METRICS, MODEL_CONFIG, RECORDS, RUN, RUN_CONFIG
from luong.config.run import read_toml_tables
from luong.model.folder import language_pair
from luong.tasks import OWN_DATA

__all__ = [
    "TABLE_WIDTH",
    "RunFolder",
    "compare",
    "dev_header",
    "find_runs",
    "folders_not_runs",
    "format_table",
    "read_records",
    "read_run",
    "read_runs",
]

TABLE_WIDTH = 120
"""The columns ``luong runs``' table fits in unless told ``--wide``."""
# The longest cell of the fitted table; a longer one keeps its start and end around "...".
CELL_WIDTH = 30
# The text table's shorter names of the rows' longest keys (the JSON keeps the keys).
HEADERS = {
    "test_exact_match": "test_em",
    "test_char_accuracy": "test_chars",
    "train_seconds": "seconds",
}
# The selections' names in a header: "dev_bleu" (the JSON keeps "dev" and "select").
SELECT_NAMES = {"exact": "em", "bleu": "bleu", "chrf": "chrf", "loss": "loss"}

# The dev figure each selection means (TrainConfig.select, resolved in metrics.json).
DEV_KEYS = {"exact": "dev_exact_match", "bleu": "dev_bleu", "chrf": "dev_chrf", "loss": "dev_loss"}
LANG_KEYS = ("src_lang", "tgt_lang")
TEST_KEYS = (
    "test_exact_match",
    "test_char_accuracy",
    "test_wer",
    "test_per",
    "test_bleu",
    "test_chrf",
)


@dataclass
class RunFolder:
    """One run folder, read back."""

    path: Path
    task: str  # the task, or for your own data its training file
    settings: dict[str, Any]  # "model.cell", "train.lr", "data.seed", ...: every field
    metrics: dict[str, Any] | None  # metrics.json; None while the run has not finished
    records: list[dict[str, Any]]  # log.jsonl (none for a run from before it)
    # The language pair its model records (config.json: luong train --src-lang/--tgt-lang,
    # or luong pair), else its config.toml's (a run not finished), "en-de", "?-fr"; None
    # when neither records one.
    pair: str | None = None

    @property
    def select(self) -> str:
        """The dev figure the run selects on: its metrics' (resolved when it finished), else
        its config's ``train.select``, ``auto`` resolved as the trainer does (BLEU where its
        dev evaluations score BLEU or its vocabulary is a subword model, else exact match)."""
        if self.metrics and "select" in self.metrics:
            return str(self.metrics["select"])
        select = str(self.settings.get("train.select", "exact"))
        if select != "auto":
            return select
        scored = any("dev_bleu" in row for row in self.records if row.get("kind") == "eval")
        subword = self.settings.get("vocab.subword", "none") != "none"
        return "bleu" if scored or subword else "exact"

    @property
    def dev_key(self) -> str:
        return DEV_KEYS.get(self.select, "dev_exact_match")

    @property
    def best_dev(self) -> float | None:
        """The best dev figure its ``log.jsonl`` holds (the lowest loss, else the highest):
        a run not finished has no ``metrics.json`` to say it."""
        values = [
            row[self.dev_key]
            for row in self.records
            if row.get("kind") == "eval" and isinstance(row.get(self.dev_key), (int, float))
        ]
        if not values:
            return None
        return min(values) if self.select == "loss" else max(values)


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
    recorded = run.get("task_options")
    if isinstance(recorded, dict) and run.get("task") == task:
        # the data options as the run was given them (config.toml keeps your own data's
        # files relative to the run folder, through any links: ../../../ chains)
        data = {**data, **recorded}
        tables = {**tables, "data": data}
    if task == OWN_DATA:
        train = data.get("train")
        task = str(train[0] if isinstance(train, list) else train)
    settings = {
        f"{table}.{key}": value
        for table in ("data", "model", "train", "vocab")
        for key, value in (tables.get(table) or {}).items()
    }
    metrics = read_json(path / METRICS) if (path / METRICS).is_file() else None
    if (path / MODEL_CONFIG).is_file():
        src_lang, tgt_lang = language_pair(read_json(path / MODEL_CONFIG), path / MODEL_CONFIG)
    else:  # no model yet: the pair its config gives the model it will write
        src_lang, tgt_lang = (str(settings.get(f"vocab.{key}") or "") for key in LANG_KEYS)
    pair = f"{src_lang or '?'}-{tgt_lang or '?'}" if src_lang or tgt_lang else None
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
        what = "a file, not a folder of runs" if root.exists() else "no such folder"
        raise LuongError(f"{root}: {what}")
    found = sorted(path.parent for path in root.rglob(RUN))
    if not found:
        raise LuongError(f"{root}: no luong run folders in it (none holds {RUN})")
    return found


def folders_not_runs(root: str | Path) -> list[Path]:
    """The folders at or under ``root`` that hold a model's or a run's files (``config.json``,
    ``config.toml``, ``log.jsonl``, ``checkpoints/``) but no ``run.json``, outside every run
    folder: a model folder, an average, an int8 form, which ``luong runs`` leaves out and
    names. Sorted by path; none when ``root`` is not a folder."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = {path.parent for path in root.rglob(RUN)}
    marks = (MODEL_CONFIG, RUN_CONFIG, RECORDS, CHECKPOINTS)
    found = {path.parent for mark in marks for path in root.rglob(mark)}
    return sorted(
        folder
        for folder in found
        if not any(run == folder or run in folder.parents for run in runs)
    )


def read_runs(root: str | Path) -> tuple[list[RunFolder], list[str]]:
    """Every run folder at or under ``root`` that reads (``find_runs``, ``read_run``), and a
    line for each that does not: ``"PATH: why"`` (a damaged file, a setting no longer
    valid), so that one bad folder does not hide the others.

    Raises:
        ValueError: ``root`` is not a folder, or holds no run folder.
    """
    runs, skipped = [], []
    for path in find_runs(root):
        try:
            runs.append(read_run(path))
        except (LuongError, OSError) as error:
            reason = str(error)
            skipped.append(reason if reason.startswith(str(path)) else f"{path}: {reason}")
    return runs, skipped


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
        row["dev"] = m.get(run.dev_key) if run.metrics is not None else run.best_dev
        row["select"] = run.select
        row.update({key: m[key] for key in TEST_KEYS if m.get(key) is not None})
        row["train_seconds"] = m.get("train_seconds")
        row["steps"] = m.get("steps", run.records[-1]["step"] if run.records else 0)
        row["finished"] = run.metrics is not None
        rows.append(row)
    return rows


def format_table(
    rows: Sequence[dict[str, Any]], width: int | None = TABLE_WIDTH
) -> tuple[str, list[str]]:
    """``rows`` as an aligned text table (a column per key of any row; "-" where none), and
    the columns left out (the longest keys shown shorter: ``HEADERS``). With ``width``
    (None: no limit) the table fits in that many characters a line: a cell longer than 30
    characters keeps its start and end around "...", and the settings that differ between
    the runs (the keys with a dot, such as ``train.lr``) are kept from the first while they
    fit; the run, its task and its figures always stay. The dev column is headed by its
    metric (``dev_header``)."""
    columns = list(dict.fromkeys(key for row in rows for key in row))

    def cell(value: Any) -> str:
        if value is None:
            text = "-"
        elif isinstance(value, float):
            text = f"{value:.4g}"
        else:
            text = str(value)
        if width is not None and len(text) > CELL_WIDTH:
            half = (CELL_WIDTH - 3) // 2
            text = f"{text[:half]}...{text[-(CELL_WIDTH - 3 - half) :]}"
        return text

    headers = {**HEADERS, "dev": dev_header(rows)}
    cells = {key: [headers.get(key, key), *(cell(row.get(key)) for row in rows)] for key in columns}
    widths = {key: max(map(len, texts)) for key, texts in cells.items()}
    kept = [key for key in columns if "." not in key]
    left_out = []
    for key in (key for key in columns if "." in key):
        if width is None or sum(widths[k] + 2 for k in [*kept, key]) - 2 <= width:
            kept.append(key)
        else:
            left_out.append(key)
    kept.sort(key=columns.index)
    lines = (
        "  ".join(cells[key][i].ljust(widths[key]) for key in kept).rstrip()
        for i in range(len(rows) + 1)
    )
    return "\n".join(lines), left_out


def dev_header(rows: Sequence[dict[str, Any]]) -> str:
    """The header of the dev column: its metric (``dev_bleu``, ``dev_em``) where
    every run selects on the same one, else ``dev_select`` (each row's ``select`` says
    which)."""
    selects = {row.get("select") for row in rows}
    if len(selects) == 1 and (select := selects.pop()) in SELECT_NAMES:
        return f"dev_{SELECT_NAMES[select]}"
    return "dev_select"
