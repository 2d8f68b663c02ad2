"""``luong runs`` (a table of run folders) and ``luong curves`` (their training curves)."""

from __future__ import annotations

import argparse
import json

from luong.plot import CurveRun, plot_curves
from luong.run_folders import compare, find_runs, format_table, read_run

__all__ = ["main_curves", "main_runs"]


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
