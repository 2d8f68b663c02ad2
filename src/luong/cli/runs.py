"""``luong runs`` (a table of run folders) and ``luong curves`` (their training curves)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from luong.plot import CurveRun, plot_curves
from luong.run_folders import compare, find_runs, format_table, read_run

__all__ = ["add_parsers", "main_curves", "main_runs"]


def add_parsers(commands: Any) -> None:
    runs = commands.add_parser(
        "runs",
        help="a table of the run folders under DIR",
        description="One row per run folder under DIR: task or data, the settings that "
        "differ between the runs, the best dev figure, the test figures, training time, "
        "steps.",
    )
    runs.add_argument("root", type=Path, metavar="DIR", help="a folder of run folders")
    runs.add_argument("--format", choices=("text", "json"), default="text")
    runs.set_defaults(handler=main_runs)

    curves = commands.add_parser(
        "curves",
        help="training loss and dev figure against steps and seconds",
        description="The curves of log.jsonl: training loss and the dev figure against "
        "steps and against seconds, several runs overlaid and labelled (PNG).",
    )
    curves.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders")
    curves.add_argument("--out", type=Path, required=True, help="the PNG to write")
    curves.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")
    curves.set_defaults(handler=main_curves)


def main_runs(args: argparse.Namespace) -> int:
    rows = compare([read_run(path) for path in find_runs(args.root)], root=args.root)
    if args.format == "json":
        print(json.dumps(rows, indent=1))
    else:
        print(format_table(rows))
    return 0


def main_curves(args: argparse.Namespace) -> int:
    folders = [read_run(path) for path in args.runs]
    runs = [CurveRun(str(folder.path), folder.records, folder.dev_key) for folder in folders]
    path = plot_curves(runs, args.out, dpi=args.dpi)
    print(f"curves of {len(runs)} run{'s' * (len(runs) != 1)} written to {path}")
    return 0
