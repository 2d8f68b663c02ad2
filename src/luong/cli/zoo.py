"""``luong zoo``: every attention of Luong et al. (2015) trained with one budget."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from luong.cli.common import say
from luong.zoo import FILES, ZOO_TASKS, ZooSettings, run_zoo, write_report

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    zoo = commands.add_parser(
        "zoo",
        help="train every attention of Luong et al. (2015) with one budget: a table, a figure",
        description="Train global attention (location, dot, scaled_dot, general, concat), "
        "local-m and local-p (dot, general) and Bahdanau's, each with and without input "
        "feeding, with the same steps, data and seeds; write OUT/TASK.md (the table, the "
        "command) and OUT/TASK.png. The runs are kept in OUT/TASK.json: the same command "
        "continues a zoo that was stopped. --task translation trains the translation preset "
        "on your own --train, --dev and --test files and ranks by test BLEU.",
    )
    zoo.add_argument("--task", choices=ZOO_TASKS, default="dates", help="the task (default dates)")
    zoo.add_argument("--out", type=Path, required=True, help="the folder to write")
    zoo.add_argument("--seeds", type=int, default=3, help="seeds per variant (default 3)")
    zoo.add_argument("--steps", type=int, default=200, help="optimizer steps per run (default 200)")
    zoo.add_argument("--window", type=int, default=4, help="local attention's D (default 4)")
    zoo.add_argument("--n-dev", type=int, default=1000, help="dev pairs (default 1000)")
    zoo.add_argument("--n-test", type=int, default=2000, help="test pairs (default 2000)")
    own = zoo.add_argument_group("translation: your own source<TAB>target files")
    for split in FILES:
        own.add_argument(f"--{split}", default="", metavar="FILE.tsv")
    own.add_argument(
        "--vocab-size", type=int, default=0, help="subword pieces (default: the preset's)"
    )
    zoo.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    settings = ZooSettings(
        task=args.task,
        steps=args.steps,
        seeds=args.seeds,
        window=args.window,
        n_dev=args.n_dev,
        n_test=args.n_test,
        train=args.train,
        dev=args.dev,
        test=args.test,
        vocab_size=args.vocab_size,
    )
    files = "".join(f" --{split} {getattr(args, split)}" for split in FILES if getattr(args, split))
    vocab = f" --vocab-size {args.vocab_size}" if args.vocab_size else ""
    command = (
        f"luong zoo --task {args.task} --seeds {args.seeds} --steps {args.steps} "
        f"--window {args.window} --n-dev {args.n_dev} --n-test {args.n_test}{files}{vocab} "
        f"--out {args.out}"
    )
    runs = run_zoo(settings, results=args.out / f"{args.task}.json", log=say)
    md, png = write_report(runs, settings, args.out, command=command)
    print(f"{len(runs)} runs; table written to {md}, figure to {png}")
    return 0
