"""``luong runs`` (a table of run folders) and ``luong curves`` (their training curves)."""

from __future__ import annotations

import argparse
import json

from luong.cli.common import say
from luong.common.errors import LuongError
from luong.evaluation.plot import CurveRun, plot_curves
from luong.training.run_folders import (
    TABLE_WIDTH,
    compare,
    folders_not_runs,
    format_table,
    read_run,
    read_runs,
)

__all__ = ["main_curves", "main_runs"]


def main_runs(args: argparse.Namespace) -> int:
    runs, skipped = read_runs(args.root)
    for reason in skipped:
        say(f"skipped {reason}")
    others = folders_not_runs(args.root)
    if others:
        names = ", ".join(str(folder) for folder in others)
        say(
            f"skipped {len(others)} folder{'s' * (len(others) != 1)} that "
            f"{'are' if len(others) != 1 else 'is'} no run (no run.json): {names}"
        )
    if not runs:
        raise LuongError(f"{args.root}: none of its {len(skipped)} run folders could be read")
    rows = compare(runs, root=args.root)
    if args.format == "json":
        print(json.dumps(rows, indent=1))
        return 0
    table, left_out = format_table(rows, width=None if args.wide else TABLE_WIDTH)
    print(table)
    if left_out:
        say(
            f"{len(left_out)} more setting{'s' * (len(left_out) != 1)} differ between the runs "
            f"({', '.join(left_out)}): --wide or --format json shows "
            f"{'them' if len(left_out) != 1 else 'it'}"
        )
    return 0


def main_curves(args: argparse.Namespace) -> int:
    folders = [read_run(path) for path in args.runs]
    runs = [CurveRun(str(folder.path), folder.records, folder.dev_key) for folder in folders]
    path = plot_curves(runs, args.out, dpi=args.dpi)
    print(f"curves of {len(runs)} run{'s' * (len(runs) != 1)} written to {path}")
    return 0
