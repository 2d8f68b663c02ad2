"""``luong translate``: one source a line in, one output a line out (or JSON lines)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from luong.cli.common import (
    UsageError,
    add_model_arguments,
    add_search_flags,
    check_search_flags,
    read_lines,
    say,
)
from luong.ensemble import load_models
from luong.translator import FORMATS, fit_sources, output_lines

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("translate", help="one source per line in, one output out")
    add_model_arguments(parser)
    parser.add_argument("--input", type=Path, help="read sources from FILE (default: stdin)")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--max-len", type=int, default=None, help="longest output")
    parser.add_argument(
        "--max-src-len",
        type=int,
        metavar="N",
        help="the longest source line, in symbols (default: the model's max_src_len); a "
        "longer line is an error, unless --truncate",
    )
    parser.add_argument(
        "--truncate",
        action="store_true",
        help="cut lines longer than the maximum source length, with a warning on stderr",
    )
    add_search_flags(parser)
    parser.add_argument(
        "--nbest",
        type=int,
        default=1,
        metavar="N",
        help="outputs per input, at most --beam: "
        "tab-separated in text, a list in jsonl (default 1)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: the outputs, one "
        'line per input; jsonl: one object per input, {"source", "hypotheses": [{"text", '
        '"score", "tokens", "attention"}]}, tokens as output symbols (EOS included), '
        "attention [T][S] over the source symbols and its EOS; numbers rounded to 6 decimals, "
        "null where not finite (default text)",
    )
    parser.add_argument(
        "--replace-unk",
        action="store_true",
        help="replace each <unk> in an output by the "
        "source token it attended to most (Luong et al. 2015, the rare word problem)",
    )
    parser.set_defaults(handler=main)


def _check(args: argparse.Namespace) -> None:
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    if args.max_len is not None and args.max_len < 1:
        raise UsageError(f"--max-len: expected >= 1, got {args.max_len}")
    if args.max_src_len is not None and args.max_src_len < 1:
        raise UsageError(f"--max-src-len: expected >= 1, got {args.max_src_len}")
    check_search_flags(args)
    if not 1 <= args.nbest <= args.beam:
        raise UsageError(f"--nbest: expected between 1 and --beam ({args.beam}), got {args.nbest}")


def main(args: argparse.Namespace) -> int:
    _check(args)
    model = load_models(args.model, combine=args.combine)
    fitted = fit_sources(
        model,
        read_lines(args.input),
        max_src_len=args.max_src_len,
        truncate=args.truncate,
        name=str(args.input) if args.input is not None else "<stdin>",
    )
    if fitted.truncated:
        say(
            f"warning: {len(fitted.truncated)} lines cut to {fitted.limit} symbols (first: "
            f"line {fitted.truncated[0] + 1})"
        )
    if fitted.unknown_symbols:
        say(
            f"{fitted.unknown_symbols} unknown source symbols in {fitted.lines_with_unknown} "
            f"lines were read as {model.src_vocab.UNK}"
        )
    lines = output_lines(
        model,
        fitted.sources,
        format=args.format,
        replace_unk=args.replace_unk,
        beam_size=args.beam,
        n_best=args.nbest,
        alpha=args.alpha,
        beta=args.beta,
        batch_size=args.batch_size,
        max_len=args.max_len,
    )
    # Each window of lines is written as soon as it is done: memory does not grow with the
    # input (every line was checked above, so nothing stops half-way).
    for line in lines:
        sys.stdout.write(line + "\n")
    return 0
