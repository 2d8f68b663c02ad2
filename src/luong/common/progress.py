"""The progress of work a person waits for (catalogs read, entries translated, sources
scored): tqdm's bar on a terminal, and anywhere else (a log, a pipe, a job scheduler) a line
through the "luong" logger every ``PROGRESS_EVERY`` seconds, and at the last item where a
line came before (work done within the interval logs nothing):

    translated 120/1,481 entries (8%), 4.1 entries/s, ETA 0:05:32

Training's steps (``luong.training.records.StepProgress``) and Debian's downloads
(``luong.catalogs.debian.FetchProgress``) have their own, with tokens and bytes beside the count.
"""

from __future__ import annotations

import datetime
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

from tqdm.auto import tqdm

from luong.common.errors import LuongError, LuongTypeError

__all__ = ["PROGRESS_EVERY", "STAGE_AFTER", "WorkProgress", "stage"]

T = TypeVar("T")

PROGRESS_EVERY = 30.0
"""Seconds between two progress lines where stderr is no terminal."""

STAGE_AFTER = 3.0
"""Seconds a stage of work (``stage``) runs before its line is logged."""


@contextmanager
def stage(message: str, after: float | None = None, shown: bool = True) -> Iterator[None]:
    """A stage of work that says what it does (``message``, through the "luong" logger) once
    it has run ``after`` seconds (default ``STAGE_AFTER``; 0: at once): a slow stage is
    named while the user waits (a run's vocabularies learned from half a million pairs take
    minutes), a quick one says nothing, so that the error a bad input stops it with stays
    the only line. ``shown`` False (a rank other than 0): nothing.

    Raises:
        TypeError: ``message`` is not a string.
    """
    if not isinstance(message, str):
        raise LuongTypeError(f"message: expected a string, got {type(message).__name__}")
    after = STAGE_AFTER if after is None else after
    logger = logging.getLogger("luong")
    if not shown:
        yield
        return
    if after <= 0:
        logger.info(message)
        yield
        return
    timer = threading.Timer(after, logger.info, (message,))
    timer.daemon = True  # never keeps a process alive
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class WorkProgress:
    """``total`` items of work, done one ``advance`` at a time.

    ``verb`` and ``noun`` name them in the lines (``"translated"``, ``"entries"``); the rate
    and the ETA are over the run so far. ``shown`` False (``--quiet``): nothing. ``every``,
    ``clock`` and ``terminal`` are for tests (default ``PROGRESS_EVERY``,
    ``time.monotonic`` and stderr's ``isatty``). A context manager: the bar is closed on
    the way out.

    Raises:
        TypeError: ``total`` not an int, ``verb`` or ``noun`` not a string.
        ValueError: ``total`` below 0, an empty ``verb`` or ``noun``, ``every`` below 0.
    """

    def __init__(
        self,
        total: int,
        verb: str,
        noun: str,
        shown: bool = True,
        *,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        terminal: bool | None = None,
    ) -> None:
        if isinstance(total, bool) or not isinstance(total, int):
            raise LuongTypeError(f"total: expected an int, got {type(total).__name__}")
        if total < 0:
            raise LuongError(f"total: expected >= 0, got {total}")
        for name, word in (("verb", verb), ("noun", noun)):
            if not isinstance(word, str):
                raise LuongTypeError(f"{name}: expected a string, got {type(word).__name__}")
            if not word.strip():
                raise LuongError(f"{name}: expected a word, got {word!r}")
        every = PROGRESS_EVERY if every is None else every
        if not every >= 0:
            raise LuongError(f"every: expected seconds >= 0, got {every!r}")
        if terminal is None:
            terminal = sys.stderr.isatty()
        self.total, self.verb, self.noun = total, verb, noun
        self.done = 0
        self.every, self.clock = every, clock
        self.lines = shown and not terminal and total > 0
        self.bar: Any = tqdm(
            total=total, unit=f" {noun}", disable=not (shown and terminal), leave=False
        )
        self.bar.set_description_str(verb)
        self.start = self.last = clock()
        self.said = False  # a line logged: the last item gets one too

    def advance(self, count: int = 1) -> None:
        """``count`` more items done."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise LuongError(f"count: expected an int >= 0, got {count!r}")
        self.done += count
        self.bar.update(count)
        if not (self.lines and count):
            return
        due = self.clock() - self.last >= self.every
        if due or (self.said and self.done >= self.total):
            self.line()

    def each(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, one at a time, each counted done when the caller asks for the next."""
        for item in items:
            yield item
            self.advance()

    def line(self) -> None:
        """Log where the work stands now."""
        now = self.clock()
        rate = self.done / (now - self.start) if now > self.start else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        eta = datetime.timedelta(seconds=round(max(0.0, left)))
        percent = 100 * self.done // max(1, self.total)
        logging.getLogger("luong").info(
            f"{self.verb} {self.done:,}/{self.total:,} {self.noun} ({percent}%), "
            f"{rate:,.1f} {self.noun}/s, ETA {eta}"
        )
        self.last, self.said = now, True

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> WorkProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
