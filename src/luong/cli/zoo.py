"""``luong zoo``: every attention of Luong et al. (2015) trained with one budget."""

from __future__ import annotations

import argparse

from luong.cli.common import say
from luong.training.zoo import FILES, ZooSettings, run_zoo, write_report

__all__ = ["main"]


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
