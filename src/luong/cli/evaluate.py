"""``luong eval``: score a model folder on a task's test split or on a file of pairs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from luong.cli.common import (
    UsageError,
    device_options,
    log_to_stderr,
    model_defaults,
    model_folders,
    say,
    search_options,
)
from luong.common.errors import LuongError
from luong.common.folder_files import RUN_CONFIG
from luong.common.progress import WorkProgress
from luong.config.presets import TASKS
from luong.config.run import read_toml_tables
from luong.config.search import SearchOptions
from luong.data.subword import SubwordVocab
from luong.evaluation.evaluate import evaluate, evaluate_sources
from luong.tasks import load_task
from luong.tasks.tsv import read_split
from luong.translation.admission import refusals
from luong.translation.translator import Translator, load

__all__ = ["main"]

Pair = tuple[str, str]


def _recorded_task(folder: Path) -> str:
    """The built-in task a run folder was trained on (its ``config.toml``), for ``luong eval
    DIR`` without --task or --data."""
    path = folder / RUN_CONFIG
    if not path.is_file():
        raise UsageError(
            f"expected --task TASK, --data FILE.tsv or --data-src/--data-tgt, got neither "
            f"(and {folder} has no {RUN_CONFIG} to read its task from)"
        )
    task = read_toml_tables(path).get("task")
    if task not in TASKS:
        raise UsageError(
            f"{folder} was trained on your own files (task {task!r} in {path}): pass --data "
            "FILE.tsv or --data-src/--data-tgt"
        )
    return str(task)


def _check(args: argparse.Namespace) -> SearchOptions:
    if (args.data_src is None) != (args.data_tgt is None):
        raise UsageError("--data-src and --data-tgt: expected both, got one")
    if args.data is not None and args.data_src is not None:
        raise UsageError("--data: either a TSV file or --data-src and --data-tgt")
    if args.data_src is not None:
        args.data = [args.data_src, args.data_tgt]
    if args.task is not None and args.data is not None:
        raise UsageError("expected --task TASK, --data FILE.tsv or --data-src/--data-tgt, got both")
    if args.task is None and args.data is None:
        args.task = _recorded_task(args.model[0])
    if args.task != "dates" and (args.n is not None or args.locales):
        raise UsageError("--n, --locales: only with --task dates")
    if args.skip_bad_lines and args.data is None:
        raise UsageError("--skip-bad-lines: only with --data")
    if args.n is not None and args.n < 1:
        raise UsageError(f"--n: expected >= 1, got {args.n}")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    return search_options(args, defaults=model_defaults(args.model))


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


def _admit(translator: Translator, pairs: list[Pair], what: dict[str, Any]) -> None:
    """Every pair's source as the model takes it (``Translator.admit``, the rule of every
    face), before anything is decoded: a refused one names the first pair and how many."""
    verdicts = translator.admit([source for source, _ in pairs])
    refused = refusals(verdicts)
    if refused:
        first, verdict = refused[0]
        where = what.get("data", what.get("task"))
        raise LuongError(
            f"{where}: pair {first + 1}: its source is {verdict.detail} ({len(refused)} such "
            f"pair{'s' * (len(refused) != 1)}); a score over them would not be the model's"
        )


def main(args: argparse.Namespace) -> int:
    options = _check(args)
    pairs, references, what = _pairs(args)
    log_to_stderr()  # the loader's warnings, the progress
    translator = load(model_folders(args.model), **device_options(args))
    _admit(translator, pairs, what)
    sources = evaluate_sources(pairs, references=references)
    with WorkProgress(sources, "decoded", "sources") as progress:
        scores = evaluate(
            translator,
            pairs,
            options,
            references=references,
            bleu=isinstance(translator.tgt_vocab, SubwordVocab),
            batch_size=args.batch_size,
            progress=progress,
        )
    if args.json:
        print(json.dumps({**what, **scores}, ensure_ascii=False))
        return 0
    if "bleu" in scores:
        print(
            f"BLEU {scores['bleu']:.2f}  chrF {scores['chrf']:.2f}  ({scores['sources']} sources; "
            f"BLEU {scores['bleu_signature']}; chrF {scores['chrf_signature']})"
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
