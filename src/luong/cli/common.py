"""What the commands share: usage errors, flags made from config fields, search flags, input
lines, messages on stderr."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
import typing
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from luong.config import (
    ATTENTIONS,
    BRIDGES,
    CELLS,
    DEVICES,
    LOCALS,
    PRECISIONS,
    SCHEDULES,
    SELECTS,
    SUBWORD_KINDS,
)
from luong.ensemble import COMBINE
from luong.files import read_text_lines, text_lines
from luong.search import MAX_ALPHA, MAX_BEAM, MAX_BETA

__all__ = [
    "UsageError",
    "add_config_flags",
    "add_model_arguments",
    "add_search_flags",
    "check_search_flags",
    "overrides",
    "log_to_stderr",
    "read_lines",
    "say",
]

# The fields whose flags take one of a fixed set of values.
CHOICES: dict[str, tuple[str, ...]] = {
    "attention": ATTENTIONS,
    "local": LOCALS,
    "cell": CELLS,
    "bridge": BRIDGES,
    "schedule": SCHEDULES,
    "device": DEVICES,
    "precision": PRECISIONS,
    "select": SELECTS,
    "subword": SUBWORD_KINDS,
}


class UsageError(Exception):
    """A command line that cannot run; reported like argparse's own usage errors."""


def say(message: str) -> None:
    """A message of the library's on stderr, as ``luong: message``, flushed."""
    print(f"luong: {message}", file=sys.stderr, flush=True)


class _StderrHandler(logging.Handler):
    """Records as ``luong: message`` lines on stderr, written around the progress bar
    (``tqdm.write``) so that the bar is not torn."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # a logging handler never raises (logging's own rule)
            self.handleError(record)


def log_to_stderr(quiet: bool = False, verbose: bool = False) -> None:
    """Show the "luong" logger on stderr: INFO and above, warnings only (``quiet``), or
    DEBUG too (``verbose``: the training records of every logging interval). A run's
    ``train.log`` gets INFO (DEBUG with ``verbose``) either way."""
    logger = logging.getLogger("luong")
    for handler in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(handler)  # main() run again in one process (tests)
    handler = _StderrHandler(logging.WARNING if quiet else logging.NOTSET)
    handler.setFormatter(logging.Formatter("luong: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False  # not twice, through a root handler as well


def add_config_flags(parser: argparse.ArgumentParser, cls: type, title: str) -> None:
    """One ``--flag`` per field of dataclass ``cls`` (default None: "not given")."""
    group = parser.add_argument_group(title)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        kind = hints[f.name]
        help_text = f"(default: {f.default})"
        if kind is bool:
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        else:
            group.add_argument(
                flag,
                type=kind,
                default=None,
                choices=CHOICES.get(f.name),
                metavar=None if f.name in CHOICES else f.name.upper(),
                help=help_text,
            )


def overrides(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of dataclass ``cls`` given as flags (``add_config_flags``)."""
    return {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, f.name) is not None
    }


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model folders (several: an ensemble, ``luong.ensemble``) and --combine."""
    parser.add_argument(
        "model",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="a model folder; several decode as an ensemble (the same target vocabulary)",
    )
    parser.add_argument(
        "--combine",
        choices=COMBINE,
        default=COMBINE[0],
        help="an ensemble's next-token distribution: the mean of the members' "
        "log-probabilities, renormalised (logprob), or of their probabilities (prob) "
        f"(default {COMBINE[0]})",
    )


def add_search_flags(parser: argparse.ArgumentParser) -> None:
    """--beam, --alpha, --beta (luong.search.beam_search)."""
    parser.add_argument(
        "--beam",
        type=int,
        default=1,
        metavar="K",
        help=f"beam size, at most {MAX_BEAM} (default 1: greedy search)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.0,
        help=f"length penalty weight, lp = ((5 + |Y|) / 6) ** alpha, 0 to {MAX_ALPHA:g} "
        "(default 0)",
    )
    parser.add_argument(
        "--beta",
        type=float,
        default=0.0,
        help=f"coverage penalty weight, beta * sum_s log(min(sum_t a_ts, 1)), 0 to "
        f"{MAX_BETA:g} (default 0)",
    )


def check_search_flags(args: argparse.Namespace) -> None:
    """A bad search flag is a usage error before any model is loaded."""
    if args.beam < 1:
        raise UsageError(f"--beam: expected >= 1, got {args.beam}")
    if args.beam > MAX_BEAM:
        raise UsageError(f"--beam: expected at most {MAX_BEAM}, got {args.beam}")
    for name, high in (("alpha", MAX_ALPHA), ("beta", MAX_BETA)):
        value = getattr(args, name)
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"--{name}: expected a finite number >= 0, got {value}")
        if value > high:
            raise UsageError(f"--{name}: expected at most {high:g}, got {value:g}")


def read_lines(path: Path | None) -> list[str]:
    """Lines of ``path`` (stdin when None), line endings removed (``luong.files``' rule);
    invalid UTF-8 names the file and line."""
    if path is None:
        return list(text_lines(sys.stdin.buffer, "<stdin>"))
    return read_text_lines(path)
