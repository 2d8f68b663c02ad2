"""``luong average``: the mean of a run's last checkpoints (or of given ones) as a model."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from luong.averaging import average_checkpoints, run_checkpoints
from luong.cli.common import UsageError

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "average",
        help="average the weights of a run's last checkpoints into a model folder",
        description="Average checkpoints of one run into a model folder that luong eval, "
        "luong translate and luong.load read. Give a run folder with --last N (its N newest "
        "checkpoints; train with --keep-checkpoints N to keep them), or the checkpoint "
        "folders themselves.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="a run folder (with --last), or checkpoint / model folders",
    )
    parser.add_argument(
        "--last", type=int, metavar="N", help="the run's N newest checkpoints (default: all)"
    )
    parser.add_argument("--out", type=Path, required=True, help="the model folder to write")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last: expected >= 1, got {args.last}")
    runs = [p for p in args.paths if (p / "checkpoints").is_dir()]
    if runs and len(args.paths) > 1:
        raise UsageError("expected one run folder, or checkpoint folders, got a mix")
    if args.last is not None and not runs:
        raise UsageError(f"--last: {args.paths[0]} is not a run folder (no checkpoints/)")
    folders = run_checkpoints(runs[0], args.last) if runs else list(args.paths)
    out = average_checkpoints(folders, args.out)
    names = ", ".join(f.name for f in folders)
    print(f"averaged {len(folders)} checkpoint{'s' * (len(folders) != 1)} ({names}) into {out}")
    return 0
