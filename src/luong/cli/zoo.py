"""``luong zoo``: every attention of Luong et al. (2015) trained with one budget."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from luong.cli.common import say
from luong.zoo import ZOO_TASKS, ZooSettings, run_zoo, write_report

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    zoo = commands.add_parser(
        "zoo",
        help="train every attention of Luong et al. (2015) with one budget: a table, a figure",
        description="Train global attention (location, dot, scaled_dot, general, concat), "
        "local-m and local-p (dot, general) and Bahdanau's, each with and without input "
        "feeding, with the same steps, data and seeds; write OUT/TASK.md (the table, the "
        "command) and OUT/TASK.png. The runs are kept in OUT/TASK.json: the same command "
        "continues a zoo that was stopped.",
    )
    zoo.add_argument("--task", choices=ZOO_TASKS, default="dates", help="the task (default dates)")
    zoo.add_argument("--out", type=Path, required=True, help="the folder to write")
    zoo.add_argument("--seeds", type=int, default=3, help="seeds per variant (default 3)")
    zoo.add_argument("--steps", type=int, default=200, help="optimizer steps per run (default 200)")
    zoo.add_argument("--window", type=int, default=4, help="local attention's D (default 4)")
    zoo.add_argument("--n-test", type=int, default=2000, help="test pairs (default 2000)")
    zoo.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    settings = ZooSettings(
        task=args.task,
        steps=args.steps,
        seeds=args.seeds,
        window=args.window,
        n_test=args.n_test,
    )
    command = (
        f"luong zoo --task {args.task} --seeds {args.seeds} --steps {args.steps} "
        f"--window {args.window} --n-test {args.n_test} --out {args.out}"
    )
    runs = run_zoo(settings, results=args.out / f"{args.task}.json", log=say)
    md, png = write_report(runs, settings, args.out, command=command)
    print(f"{len(runs)} runs; table written to {md}, figure to {png}")
    return 0
