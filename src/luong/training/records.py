"""Where a run stands and what it records: ``Progress`` (saved in every checkpoint, so that
a resumed run continues exactly where the checkpoint was taken), the run folder's records
(``Records``: ``log.jsonl``, one record per logging interval and one per dev evaluation,
and TensorBoard's event files with ``--tensorboard``) and the progress shown while it runs
(``StepProgress``: a bar on a terminal, a line every half minute elsewhere).
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from luong.common.errors import LuongError
from luong.common.files import write_text
from luong.common.folder_files import RECORDS, TENSORBOARD
from luong.common.progress import PROGRESS_EVERY
from luong.version import install_extra

__all__ = ["PROGRESS_EVERY", "Progress", "Records", "StepProgress"]


@dataclass
class Progress:
    """Where a run stands; saved in every checkpoint so that a resumed run continues
    exactly where the checkpoint was taken."""

    step: int = 0  # optimizer steps taken (skipped non-finite steps included)
    epoch: int = 1  # the epoch under way, from 1
    batch: int = 0  # optimizer steps of that epoch done
    best: float | None = None  # best dev figure so far (the selected one; -loss for loss)
    best_step: int = 0  # the step of the best weights
    stale: int = 0  # evaluations since the best
    bad_in_row: int = 0  # consecutive non-finite steps
    skipped: int = 0  # non-finite steps skipped in all
    seconds: float = 0.0  # training wall time before this session
    losses: list[float] = field(default_factory=list)  # losses since the last evaluation
    curve: list[dict[str, Any]] = field(default_factory=list)  # one entry per evaluation
    # Since the last training record of log.jsonl: finite losses, gradient norms, tokens.
    interval_losses: list[float] = field(default_factory=list)
    interval_norms: list[float] = field(default_factory=list)
    interval_tokens: int = 0
    finished: bool = False
    stopped_early: bool = False
    # A mid-epoch dev evaluation is due at this step: a signal stopped the run before it
    # ended, so the resumed run does it first (an end-of-epoch one is done again anyway).
    eval_due: bool = False


class Records:
    """The records of a run folder ``out``: ``log.jsonl``, and TensorBoard's event files
    with ``tensorboard``. None as ``out`` writes nothing (no run folder, or a rank other
    than 0).

    Raises:
        ValueError: ``tensorboard`` without the tensorboard package installed.
    """

    def __init__(self, out: Path | None, tensorboard: bool) -> None:
        if tensorboard and importlib.util.find_spec("tensorboard") is None:
            raise LuongError(
                "tensorboard: the tensorboard package is not installed ("
                f"{install_extra('tensorboard')})"
            )
        self.out, self.tensorboard = out, tensorboard
        self.writer: Any = None  # torch.utils.tensorboard's SummaryWriter while open
        self.interval_start = time.perf_counter()  # the start of the logging interval

    def open(self, step: int, now: float) -> None:
        """Start a session at ``step`` (0 for a new run) at the time ``now``: the records a
        killed run wrote after its checkpoint go, and TensorBoard's writer opens."""
        self.interval_start = now
        if self.out is not None:
            _keep_records(self.out / RECORDS, step)
            if self.tensorboard:
                self.writer = _summary_writer(self.out / TENSORBOARD, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def interval(self, p: Progress, seconds: float, lr: float, ranks: int) -> dict[str, Any]:
        """The training record of the interval that ends now (``seconds`` of training in
        all, the learning rate ``lr`` of its last step): the mean loss and gradient norm of
        its finite steps, tokens per second over ``ranks`` processes. ``p``'s interval
        starts again."""
        now = time.perf_counter()
        tokens, elapsed = p.interval_tokens * ranks, now - self.interval_start
        losses, norms = p.interval_losses, p.interval_norms
        record = {
            "kind": "train",
            "step": p.step,
            "epoch": p.epoch,
            "seconds": round(seconds, 3),
            "loss": round(sum(losses) / len(losses), 6) if losses else None,
            "lr": lr,
            "grad_norm": round(sum(norms) / len(norms), 6) if norms else None,
            "tokens_per_second": round(tokens / elapsed, 1) if elapsed > 0 else None,
        }
        p.interval_losses, p.interval_norms, p.interval_tokens = [], [], 0
        self.interval_start = now
        return record

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` to log.jsonl and its numbers to TensorBoard."""
        if self.out is None:
            return
        with open(self.out / RECORDS, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")
        if self.writer is not None:
            for key, value in record.items():
                if key not in ("kind", "step", "epoch") and isinstance(value, int | float):
                    self.writer.add_scalar(f"{record['kind']}/{key}", value, record["step"])
            self.writer.flush()


def _keep_records(path: Path, step: int) -> None:
    """Keep the records of log.jsonl up to ``step`` (where a resumed run continues; 0 for a
    new one): a killed run wrote some after its latest checkpoint, which the resumed run
    writes again. A line cut short by the kill goes too."""
    if not path.is_file():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        step_of = record.get("step") if isinstance(record, dict) else None
        if isinstance(step_of, int) and step_of <= step:
            kept.append(line + "\n")
    write_text(path, "".join(kept))


def _summary_writer(folder: Path, step: int) -> Any:
    """A TensorBoard writer on ``folder`` that drops the events after ``step`` (a resumed
    run writes them again). Imported here: only --tensorboard needs the package."""
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(log_dir=str(folder), purge_step=step + 1 if step else None)


class StepProgress:
    """The progress of a run's steps while it trains. On a terminal, tqdm's bar on stderr;
    anywhere else (stderr a file or a pipe: a log, a job scheduler, ``luong.train`` called
    from Python) a line through the "luong" logger every ``every`` seconds (default
    ``PROGRESS_EVERY``) and at the session's last step, which the command line shows on
    stderr and a run writes to its ``train.log``:

        step 1200/9600 (12%), 5,231 tokens/s, ETA 0:41:07

    tokens/s over the steps since the line before, the ETA from this session's mean step
    time. ``total`` None: not known yet (a large corpus's later epochs still being counted:
    ``step 1200, 5,231 tokens/s`` until the caller sets ``total``). ``shown`` False
    (``--no-progress``, ``--quiet``, a rank other than 0): nothing. ``clock`` and
    ``terminal`` are for tests (default ``time.monotonic`` and stderr's ``isatty``)."""

    def __init__(
        self,
        total: int | None,
        initial: int,
        shown: bool,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        terminal: bool | None = None,
    ) -> None:
        if terminal is None:
            terminal = sys.stderr.isatty()
        self.done, self.start_step = initial, initial
        self.every = PROGRESS_EVERY if every is None else every
        self.clock = clock
        self.lines = shown and not terminal
        self.bar: Any = tqdm(
            total=total, initial=initial, disable=not (shown and terminal), unit="step", leave=False
        )
        self.start = self.last = clock()
        self.tokens = 0  # target tokens since the last line

    @property
    def total(self) -> int | None:
        """The run's steps; None while they are being counted."""
        return self.bar.total

    @total.setter
    def total(self, total: int | None) -> None:
        self.bar.total = total

    def step(self, tokens: int) -> None:
        """One step done, of ``tokens`` target tokens (every rank's)."""
        self.done += 1
        self.tokens += tokens
        self.bar.update(1)
        last = self.total is not None and self.done >= self.total
        if self.lines and (last or self.clock() - self.last >= self.every):
            self.line()

    def line(self) -> None:
        """Log where the run stands now."""
        now = self.clock()
        rate = self.tokens / (now - self.last) if now > self.last else 0.0
        total, steps = self.total, self.done - self.start_step
        if total is None:
            logging.getLogger("luong").info(f"step {self.done}, {rate:,.0f} tokens/s")
        else:
            left = (total - self.done) * (now - self.start) / steps if steps else 0.0
            eta = datetime.timedelta(seconds=round(left))
            percent = 100 * self.done // max(1, total)
            logging.getLogger("luong").info(
                f"step {self.done}/{total} ({percent}%), {rate:,.0f} tokens/s, ETA {eta}"
            )
        self.last, self.tokens = now, 0

    def show(self, **figures: str) -> None:
        """``figures`` (the last dev evaluation's) beside the bar."""
        self.bar.set_postfix(**figures)

    def close(self) -> None:
        self.bar.close()
