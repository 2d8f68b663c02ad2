"""``luong translate``: one source a line in, one output a line out (or JSON lines)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
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
from luong.ensemble import Decodable, load_models
from luong.files import text_lines
from luong.search import MAX_TEMPERATURE
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
    parser.add_argument(
        "--prefix",
        default="",
        metavar="TEXT",
        help="every output starts with TEXT (target symbols, teacher-forced), and the "
        "search continues from there",
    )
    parser.add_argument(
        "--sample",
        action="store_true",
        help="draw outputs instead of searching (--nbest draws per input; --beam 1)",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        metavar="T",
        help=f"with --sample: softmax(log p / T), 0 < T <= {MAX_TEMPERATURE:g} (default 1)",
    )
    parser.add_argument(
        "--top-k",
        type=int,
        default=None,
        metavar="K",
        help="with --sample: draw from the K most probable tokens only (default: all)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="with --sample: the seed of the draws, for the same outputs again (with "
        "--stream, line i uses N + i)",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="translate each line as soon as it is read and write its output at once "
        "(flushed): for interactive use and pipes (without it, the input is read first)",
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
    if args.sample:
        if args.beam != 1:
            raise UsageError(
                f"--beam: --sample draws one token a step, expected 1, got {args.beam}"
            )
        if args.nbest < 1:
            raise UsageError(f"--nbest: expected >= 1, got {args.nbest}")
        if not 0 < args.temperature <= MAX_TEMPERATURE:
            raise UsageError(
                f"--temperature: expected above 0 and at most {MAX_TEMPERATURE:g}, "
                f"got {args.temperature:g}"
            )
        if args.top_k is not None and args.top_k < 1:
            raise UsageError(f"--top-k: expected >= 1, got {args.top_k}")
        if args.seed is not None and args.seed < 0:
            raise UsageError(f"--seed: expected >= 0, got {args.seed}")
    else:
        for flag, value in (("--top-k", args.top_k), ("--seed", args.seed)):
            if value is not None:
                raise UsageError(f"{flag}: only with --sample")
        if args.temperature != 1.0:
            raise UsageError("--temperature: only with --sample")
        if not 1 <= args.nbest <= args.beam:
            raise UsageError(
                f"--nbest: expected between 1 and --beam ({args.beam}), got {args.nbest}"
            )


def main(args: argparse.Namespace) -> int:
    _check(args)
    model = load_models(args.model, combine=args.combine)
    if args.stream:
        return _stream(args, model)
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
        prefix=args.prefix,
        sample=args.sample,
        temperature=args.temperature,
        top_k=args.top_k,
        seed=args.seed,
    )
    # Each window of lines is written as soon as it is done: memory does not grow with the
    # input (every line was checked above, so nothing stops half-way).
    for line in lines:
        sys.stdout.write(line + "\n")
    return 0


def _stream(args: argparse.Namespace, model: Decodable) -> int:
    """One line at a time: read it, translate it, write its output and flush, before the
    next line is read (so a pipe or a person typing sees each output at once)."""
    name = str(args.input) if args.input is not None else "<stdin>"
    with ExitStack() as stack:
        stream = (
            sys.stdin.buffer if args.input is None else stack.enter_context(open(args.input, "rb"))
        )
        for number, line in enumerate(text_lines(stream, name)):
            try:
                fitted = fit_sources(
                    model, [line], max_src_len=args.max_src_len, truncate=args.truncate, name=name
                )
            except ValueError as error:  # it names line 1 of the one-line list: the real one
                message = str(error).removeprefix(f"{name}:1: ")
                raise ValueError(f"{name}:{number + 1}: {message}") from None
            if fitted.truncated:
                say(f"warning: line {number + 1} cut to {fitted.limit} symbols")
            seed = None if args.seed is None else args.seed + number
            for output in output_lines(
                model,
                fitted.sources,
                format=args.format,
                replace_unk=args.replace_unk,
                beam_size=args.beam,
                n_best=args.nbest,
                alpha=args.alpha,
                beta=args.beta,
                max_len=args.max_len,
                prefix=args.prefix,
                sample=args.sample,
                temperature=args.temperature,
                top_k=args.top_k,
                seed=seed,
            ):
                sys.stdout.write(output + "\n")
            sys.stdout.flush()
    return 0
