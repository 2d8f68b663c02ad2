"""``luong translate``: one source a line in, one output a line out (or JSON lines)."""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from dataclasses import replace

from luong.cli.common import (
    UsageError,
    check_memory_flags,
    device_options,
    flag_message,
    flush_stdout,
    log_to_stderr,
    model_defaults,
    model_folders,
    read_lines,
    request_options,
    say,
    search_options,
    stdin,
    write_line,
)
from luong.common.errors import LuongError
from luong.common.files import read_text_lines, text_lines
from luong.config.request import RequestOptions
from luong.config.search import MAX_SEED, OptionError, SearchOptions
from luong.config.translation_request import TranslationRequest
from luong.translation.admission import fit_sources
from luong.translation.records import output_lines
from luong.translation.translator import Translator, load

__all__ = ["main"]


def _check(args: argparse.Namespace) -> tuple[SearchOptions, RequestOptions]:
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    if args.max_src_len is not None and args.max_src_len < 1:
        raise UsageError(f"--max-src-len: expected >= 1, got {args.max_src_len}")
    if args.align and args.placeholders != "off":
        raise UsageError(f"--align: not with --placeholders {args.placeholders}; expected off")
    if args.constraints is not None and args.stream:
        raise UsageError("--constraints: not with --stream (the file is read with the input)")
    check_memory_flags(args)
    search = search_options(args, defaults=model_defaults(args.model))
    if args.glossary_file is not None and search.sample:
        raise UsageError(
            "--glossary: its terms are held by constrained beam search, not with --sample"
        )
    request = request_options(args)
    try:
        request.check_search(search)  # what fails together fails here, not half-way
    except OptionError as error:
        raise UsageError(flag_message(error)) from None
    return search, request


def main(args: argparse.Namespace) -> int:
    options, request = _check(args)
    log_to_stderr(quiet=True)  # the loader's warnings: a stopped run's checkpoint, bf16
    translator = load(model_folders(args.model), **device_options(args)).with_resources(
        args.tm or (), args.glossary_file, tm_threshold=args.tm_threshold
    )
    if translator.glossary is not None:
        request = replace(request, glossary=translator.glossary.pairs())
    if args.stream:
        return _stream(args, translator, options, request)
    fitted = fit_sources(
        translator.model,
        read_lines(args.input),
        max_src_len=args.max_src_len,
        truncate=args.truncate,
        name=str(args.input) if args.input is not None else "<stdin>",
        request=request,
    )
    if fitted.truncated:
        say(
            f"warning: {len(fitted.truncated)} lines cut to {fitted.limit} symbols (first: "
            f"line {fitted.truncated[0] + 1})"
        )
    if fitted.unknown_symbols:
        say(
            f"{fitted.unknown_symbols} unknown source symbols in {fitted.lines_with_unknown} "
            f"lines were read as {translator.src_vocab.UNK}"
        )
    constraints = None
    if args.constraints is not None:
        constraints = read_constraints(translator, args.constraints, len(fitted.sources), request)
    asked = TranslationRequest(
        options,
        request,
        constraints=constraints,
        batch_size=args.batch_size,
        max_src_len=args.max_src_len,
    )
    lines = output_lines(translator, fitted.sources, asked, format=args.format)
    # Each window of lines is written as soon as it is done: memory does not grow with the
    # input (every line was checked above, so nothing stops half-way).
    for line in lines:
        write_line(line)
    flush_stdout()
    return 0


def _stream(
    args: argparse.Namespace,
    translator: Translator,
    options: SearchOptions,
    request: RequestOptions,
) -> int:
    """One line at a time: read it, translate it, write its output and flush, before the
    next line is read (so a pipe or a person typing sees each output at once)."""
    name = str(args.input) if args.input is not None else "<stdin>"
    with ExitStack() as stack:
        stream = stdin() if args.input is None else stack.enter_context(open(args.input, "rb"))
        for number, line in enumerate(text_lines(stream, name, allow_nul=False)):
            try:
                fitted = fit_sources(
                    translator.model,
                    [line],
                    max_src_len=args.max_src_len,
                    truncate=args.truncate,
                    name=name,
                    request=request,
                )
            except ValueError as error:  # it names line 1 of the one-line list: the real one
                message = str(error).removeprefix(f"{name}:1: ")
                raise LuongError(f"{name}:{number + 1}: {message}") from None
            if fitted.truncated:
                say(f"warning: line {number + 1} cut to {fitted.limit} symbols")
            line_options = options
            if options.seed is not None:  # line i draws with seed N + i (below 2^64)
                line_options = replace(options, seed=(options.seed + number) % (MAX_SEED + 1))
            asked = TranslationRequest(
                line_options, request, batch_size=args.batch_size, max_src_len=args.max_src_len
            )
            outputs = output_lines(translator, fitted.sources, asked, format=args.format)
            for output in outputs:
                write_line(output)
            flush_stdout()
    return 0


def read_constraints(
    translator: Translator, path: str, count: int, request: RequestOptions | None = None
) -> list[list[str]]:
    """``--constraints FILE``: one JSON list of phrase strings a line (``[]`` or an empty
    line: none), as many lines as the input has (``count``); each phrase checked against
    the target vocabulary and the search's bounds here, and against ``request``'s
    placeholders (``Translator.check_constraints``), so that an error names its line.

    Raises:
        ValueError: another number of lines, a line that is not a JSON list of strings, an
            empty phrase or one the target vocabulary cannot produce, a phrase or a line
            above the bounds of ``luong.search.constrained``, a phrase that holds a
            placeholder with placeholders kept (``FILE:LINE: ...``).
    """
    lines = read_text_lines(path)
    if len(lines) != count:
        raise LuongError(f"--constraints {path}: {len(lines)} lines, the input has {count}")
    constraints = []
    for number, line in enumerate(lines, start=1):
        try:
            phrases = json.loads(line) if line.strip() else []
        except ValueError as error:
            raise LuongError(f"{path}:{number}: not JSON ({error})") from None
        if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
            raise LuongError(
                f"{path}:{number}: expected a JSON list of phrase strings, got {line!r:.60}"
            )
        try:
            translator.check_constraints([phrases], request)
        except LuongError as error:
            raise LuongError(
                f"{path}:{number}: {str(error).removeprefix('constraints[0]: ')}"
            ) from None
        constraints.append(phrases)
    return constraints
