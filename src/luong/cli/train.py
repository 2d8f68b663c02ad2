"""``luong train``: a built-in task or your own files -> a run folder (``luong.run``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from luong.cli.common import UsageError, add_config_flags, overrides, say
from luong.config import Seq2SeqConfig, TrainConfig
from luong.run import configure, run
from luong.tasks import OWN_DATA, TASKS
from luong.vocab import TOKENS

__all__ = ["add_parser", "main"]

OWN_DATA_FLAGS = (
    ("dev_file", "--dev"),
    ("test_file", "--test"),
    ("src_tokens", "--src-tokens"),
    ("tgt_tokens", "--tgt-tokens"),
    ("skip_bad_lines", "--skip-bad-lines"),
    ("preset", "--preset"),
)
DATES_FLAGS = (
    ("locales", "--locales"),
    ("n_train", "--n-train"),
    ("n_dev", "--n-dev"),
    ("n_test", "--n-test"),
)


def add_parser(commands: Any) -> None:
    train = commands.add_parser("train", help="train a model and write its run folder")
    train.add_argument(
        "task", nargs="?", choices=TASKS, help="a built-in task (or your own data: --train, --dev)"
    )
    train.add_argument("--out", required=True, type=Path, help="the run folder to write")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its latest checkpoint (a run folder that holds "
        "a checkpoint is resumed anyway; this flag makes a missing one an error)",
    )
    own = train.add_argument_group("your own data, one source<TAB>target pair a line")
    own.add_argument("--train", dest="train_file", type=Path, metavar="FILE.tsv")
    own.add_argument("--dev", dest="dev_file", type=Path, metavar="FILE.tsv")
    own.add_argument("--test", dest="test_file", type=Path, metavar="FILE.tsv")
    own.add_argument("--src-tokens", choices=TOKENS, help="source tokens (default: char)")
    own.add_argument("--tgt-tokens", choices=TOKENS, help="target tokens (default: char)")
    own.add_argument(
        "--skip-bad-lines", action="store_true", help="skip bad lines (counted on stderr)"
    )
    own.add_argument(
        "--preset", choices=TASKS, help="start from a built-in task's model and training defaults"
    )
    train.add_argument("--config", type=Path, help="a TOML file with [model] and [train] tables")
    train.add_argument(
        "--locales", nargs="+", metavar="LOCALE", help="dates: babel locales (default: en_US)"
    )
    train.add_argument("--data-seed", type=int, default=0, help="seed of the task's data")
    for split, size in (("train", 20_000), ("dev", 1_000), ("test", 10_000)):
        train.add_argument(
            f"--n-{split}", type=int, metavar="N", help=f"dates: {split} pairs (default {size})"
        )
    add_config_flags(train, Seq2SeqConfig, "model (overrides --config)")
    add_config_flags(train, TrainConfig, "training (overrides --config)")
    train.set_defaults(handler=main)


def _given(args: argparse.Namespace, flags: tuple[tuple[str, str], ...]) -> list[str]:
    return [flag for dest, flag in flags if getattr(args, dest) not in (None, False)]


def _task_and_options(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The task and its data options, from the flags (which flags go with which task)."""
    if (args.task is None) == (args.train_file is None):
        got = "both" if args.task is not None else "neither"
        raise UsageError(
            "expected a task (dates, g2p) or your own data (--train FILE.tsv --dev FILE.tsv), "
            f"got {got}"
        )
    if args.task != "dates" and _given(args, DATES_FLAGS):
        raise UsageError(f"{', '.join(_given(args, DATES_FLAGS))}: only for the dates task")
    if args.task is not None:
        if _given(args, OWN_DATA_FLAGS):
            raise UsageError(f"{', '.join(_given(args, OWN_DATA_FLAGS))}: only with --train")
        options: dict[str, Any] = {"seed": args.data_seed}
        if args.locales:
            options["locales"] = tuple(args.locales)
        for split in ("train", "dev", "test"):
            if getattr(args, f"n_{split}") is not None:
                options[f"n_{split}"] = getattr(args, f"n_{split}")
        return args.task, options
    if args.dev_file is None:
        raise UsageError("--train needs --dev FILE.tsv: the pairs that pick the best weights")
    options = {
        "train": str(args.train_file),
        "dev": str(args.dev_file),
        "src_tokens": args.src_tokens or "char",
        "tgt_tokens": args.tgt_tokens or "char",
        "skip_bad_lines": args.skip_bad_lines,
    }
    if args.test_file is not None:
        options["test"] = str(args.test_file)
    return OWN_DATA, options


def main(args: argparse.Namespace) -> int:
    task, options = _task_and_options(args)
    config = configure(
        task,
        options,
        preset=args.preset,
        config_file=args.config,
        model=overrides(args, Seq2SeqConfig),
        train=overrides(args, TrainConfig),
    )
    result = run(config, args.out, log=say, resume=args.resume)
    if not result.main:
        return 0  # under torchrun, rank 0 alone reports
    m = result.metrics
    if "test_wer" in m:
        print(
            f"test WER {m['test_wer']:.2%}  PER {m['test_per']:.2%}  "
            f"(exact match {m['test_exact_match']:.4f} against any reference; "
            f"{m['test_sources']} sources, {m['test_pairs']} pairs)"
        )
        if m["test_unknown_tokens"]:
            print(
                f"test: {m['test_unknown_tokens']} unknown source symbols mapped to unk "
                f"in {m['test_sources_with_unknown']} sources"
            )
    elif m["test_exact_match"] is not None:
        print(
            f"test exact match {m['test_exact_match']:.4f}  char accuracy "
            f"{m['test_char_accuracy']:.4f}  ({m['test_pairs']} pairs)"
        )
    reached = m["seconds_to_dev_0.99"]
    print(
        f"dev exact match {m['dev_exact_match']:.4f}; trained {m['steps']} steps in "
        f"{m['train_seconds']:.1f} s"
        + (f"; dev >= 0.99 after {reached:.1f} s" if reached is not None else "")
    )
    print(f"model and metrics.json written to {args.out}")
    return 0
