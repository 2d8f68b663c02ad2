"""``luong eval``: score a model folder on a task's test split or on a file of pairs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from luong.cli.common import (
    UsageError,
    add_model_arguments,
    add_search_flags,
    check_search_flags,
    say,
)
from luong.ensemble import load_models
from luong.evaluation import evaluate
from luong.subword import SubwordVocab
from luong.tasks import TASKS, load_task
from luong.tasks.tsv import read_split

__all__ = ["add_parser", "main"]

Pair = tuple[str, str]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("eval", help="score a model on a task's test set or a file")
    add_model_arguments(parser)
    parser.add_argument("--task", choices=TASKS, help="a built-in task's test set")
    parser.add_argument("--data", type=Path, metavar="FILE.tsv", help="source<TAB>target pairs")
    parser.add_argument("--data-src", type=Path, metavar="FILE", help="sources, a line each")
    parser.add_argument(
        "--data-tgt", type=Path, metavar="FILE", help="their references, line-aligned"
    )
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip bad lines of --data")
    parser.add_argument("--n", type=int, help="dates: test pairs (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the task's data")
    parser.add_argument("--locales", nargs="+", metavar="LOCALE")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_search_flags(parser)
    parser.set_defaults(handler=main)


def _check(args: argparse.Namespace) -> None:
    if (args.data_src is None) != (args.data_tgt is None):
        raise UsageError("--data-src and --data-tgt: expected both, got one")
    if args.data is not None and args.data_src is not None:
        raise UsageError("--data: either a TSV file or --data-src and --data-tgt")
    if args.data_src is not None:
        args.data = [args.data_src, args.data_tgt]
    if (args.task is None) == (args.data is None):
        got = "both" if args.task is not None else "neither"
        raise UsageError(
            f"expected --task TASK, --data FILE.tsv or --data-src/--data-tgt, got {got}"
        )
    if args.task != "dates" and (args.n is not None or args.locales):
        raise UsageError("--n, --locales: only with --task dates")
    if args.skip_bad_lines and args.data is None:
        raise UsageError("--skip-bad-lines: only with --data")
    if args.n is not None and args.n < 1:
        raise UsageError(f"--n: expected >= 1, got {args.n}")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    check_search_flags(args)


def _pairs(args: argparse.Namespace) -> tuple[list[Pair], bool, dict[str, Any]]:
    """The pairs to score, whether a source may have several references, and what they are
    (for the JSON output)."""
    if args.data is not None:
        read = read_split(args.data, skip_bad_lines=args.skip_bad_lines)
        if read.skipped:
            count = len(read.skipped)
            say(f"skipped {count} bad line{'s' * (count != 1)} in {read.name}")
        return read.pairs, True, {"data": read.name, "skipped_lines": len(read.skipped)}
    options: dict[str, Any] = {"seed": args.seed}
    if args.task == "dates":
        options.update(n_train=0, n_dev=0, n_test=args.n if args.n is not None else 10_000)
        if args.locales:
            options["locales"] = tuple(args.locales)
    data = load_task(args.task, **options)
    return data.test, data.references, {"task": args.task}


def main(args: argparse.Namespace) -> int:
    _check(args)
    pairs, references, what = _pairs(args)
    model = load_models(args.model, combine=args.combine)
    scores = evaluate(
        model,
        pairs,
        references=references,
        bleu=isinstance(model.tgt_vocab, SubwordVocab),
        batch_size=args.batch_size,
        beam_size=args.beam,
        alpha=args.alpha,
        beta=args.beta,
    )
    if args.json:
        print(json.dumps({**what, **scores}, ensure_ascii=False))
        return 0
    if "bleu" in scores:
        print(
            f"BLEU {scores['bleu']:.2f}  chrF {scores['chrf']:.2f}  ({scores['sources']} sources; "
            f"{scores['bleu_signature']}; {scores['chrf_signature']})"
        )
    elif not references:
        print(
            f"exact match {scores['exact_match']:.4f}  "
            f"char accuracy {scores['char_accuracy']:.4f}  ({scores['pairs']} pairs)"
        )
    else:
        unknown = scores["unknown_tokens"]
        print(
            f"WER {scores['wer']:.2%}  PER {scores['per']:.2%}  exact match "
            f"{scores['exact_match']:.4f} against any reference  "
            f"({scores['sources']} sources, {scores['pairs']} pairs"
            + (
                f"; {unknown} unknown source symbols mapped to unk in "
                f"{scores['sources_with_unknown']} sources)"
                if unknown
                else ")"
            )
        )
    return 0
