"""SIGINT (Ctrl-C) and SIGTERM (``kill``, a scheduler's stop) during training: the loop
finishes the step under way, writes a checkpoint and stops with ``TrainingInterrupted``; a
dev evaluation under way stops at once (``SignalFlag.cutting`` raises ``Cut``), and the
resumed run does it again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Cut", "SignalFlag", "TrainingInterrupted"]


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; a resumable checkpoint was written first."""

    def __init__(self, checkpoint: Path | None, signum: int = signal.SIGINT) -> None:
        super().__init__(str(checkpoint) if checkpoint else "")
        self.checkpoint = checkpoint
        self.signum = signum  # the signal that stopped the run


class Cut(BaseException):
    """A signal arrived while ``SignalFlag.cutting``: the work under way stops there. Not
    an ``Exception``, so that no ``except Exception`` on the way swallows it."""


class SignalFlag:
    """While active, SIGINT (Ctrl-C) and SIGTERM (``kill``, a scheduler's stop) set
    ``raised`` instead of stopping a step half-way; the loop checks it between steps.
    Inside ``cutting()`` (a dev evaluation, which a long decode can make last for hours) a
    signal stops the work at once instead."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.raised = False
        self.signum: int = signal.SIGINT  # the signal that arrived first
        self._previous: dict[int, Any] = {}
        self._cutting = False

    def __enter__(self) -> SignalFlag:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if not self.raised:
            self.raised, self.signum = True, signum
        if self._cutting:
            self._cutting = False  # raised once: the clean-up after it runs undisturbed
            raise Cut()

    @contextmanager
    def cutting(self) -> Iterator[None]:
        """Within: a signal raises ``Cut`` as it arrives, and one that arrived already
        raises it on entry (while active in the main thread, where the handlers are)."""
        if self.raised:
            raise Cut()
        self._cutting = True
        try:
            yield
        finally:
            self._cutting = False

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:  # None: a handler installed outside Python
                signal.signal(signum, previous)
        self._previous = {}
