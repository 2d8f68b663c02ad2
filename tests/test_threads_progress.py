"""Threads (``--threads``, ``luong.use_threads``, the default) and the progress a log can show
(``StepProgress``: a line every half minute where stderr is not a terminal)."""

from __future__ import annotations

import logging

import pytest
import torch
from helpers import TINY_DATES_FLAGS, assert_one_line_error, luong

import luong as luong_package
from luong.cli import build_parser
from luong.common import devices
from luong.common.devices import default_threads, use_threads
from luong.training import records
from luong.training.records import StepProgress

# The commands that compute (train, decode, trace, average, quantize) take --threads; those
# that only read files and print do not.
COMPUTING = {
    "train",
    "eval",
    "translate",
    "plot",
    "plot-scores",
    "zoo",
    "average",
    "quantize",
    "shortlist",
    "serve",
    "export",
    "po",
}
READING = {"prepare", "corpus", "runs", "curves", "pair"}


def test_default_threads_is_omp_num_threads_else_one() -> None:
    assert default_threads({}) == 1
    assert default_threads({"OMP_NUM_THREADS": ""}) == 1
    assert default_threads({"OMP_NUM_THREADS": "3"}) == 3
    assert default_threads({"OMP_NUM_THREADS": " 4,2 "}) == 4  # OpenMP's nested list
    for bad in ("0", "-1", "two", "²"):
        with pytest.raises(ValueError) as error:
            default_threads({"OMP_NUM_THREADS": bad})
        assert str(error.value) == f"OMP_NUM_THREADS: expected a positive integer, got {bad!r}"


def test_use_threads_sets_torch_threads_and_checks_its_argument() -> None:
    before = torch.get_num_threads()
    try:
        assert use_threads(2) == 2
        assert torch.get_num_threads() == 2
        assert luong_package.use_threads(1) == 1
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match=r"^threads: expected an int >= 1, got 0$"):
        use_threads(0)
    for bad, shown in ((1.5, "1.5"), (True, "True"), ("2", "'2'")):
        with pytest.raises(TypeError, match=rf"^threads: expected an int >= 1, got {shown}$"):
            use_threads(bad)  # type: ignore[arg-type]
    assert torch.get_num_threads() == before


def test_every_command_that_computes_takes_threads() -> None:
    subparsers = next(
        action for action in build_parser()._actions if action.dest == "command"
    ).choices
    assert set(subparsers) == COMPUTING | READING
    for name, parser in subparsers.items():
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert ("--threads" in flags) == (name in COMPUTING), name


def test_threads_are_set_before_the_command_runs(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int | None] = []

    def recording(threads: int | None = None) -> int:
        asked.append(threads)
        return use_threads(threads)

    monkeypatch.setattr(devices, "use_threads", recording)
    missing = str(tmp_path / "missing")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert_one_line_error(luong("translate", missing, "--threads", "2"), "missing")
    assert_one_line_error(luong("translate", missing), "missing")
    assert asked == [2, None]  # None: default_threads(), here 1
    # Wrong counts are one line each, before the command reads anything.
    result = luong("translate", missing, "--threads", "0")  # a usage error: exit 2, not 1
    assert_one_line_error(result, "argument --threads: expected a positive integer, got '0'")
    assert result.returncode == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    result = luong("eval", missing, "--task", "dates")
    assert_one_line_error(result, "OMP_NUM_THREADS: expected a positive integer, got 'many'")


class Clock:
    """A clock that reads the times given, one per call."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_progress_lines_come_every_interval_and_at_the_last_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Construction reads the clock once; each step once, and a line once more.
    clock = Clock(0.0, 10.0, 31.0, 31.0, 40.0, 62.0, 62.0)
    progress = StepProgress(4, 0, shown=True, every=30.0, clock=clock, terminal=False)
    with caplog.at_level(logging.INFO, logger="luong"):
        for tokens in (100, 210, 50, 1000):
            progress.step(tokens)
    progress.close()
    assert [r.getMessage() for r in caplog.records] == [
        # 310 tokens in 31 s; 2 steps left at 15.5 s a step
        "step 2/4 (50%), 10 tokens/s, ETA 0:00:31",
        # the last step: 1,050 tokens in the 31 s since the line before
        "step 4/4 (100%), 34 tokens/s, ETA 0:00:00",
    ]


def test_a_resumed_session_counts_from_its_step_and_a_terminal_gets_the_bar_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock(0.0, 40.0, 40.0)
    with caplog.at_level(logging.INFO, logger="luong"):
        resumed = StepProgress(10, 6, shown=True, every=30.0, clock=clock, terminal=False)
        resumed.step(4000)
        for shown, terminal in ((True, True), (False, False)):
            quiet = StepProgress(2, 0, shown=shown, every=0.0, terminal=terminal)
            quiet.step(1)
            quiet.step(1)
            quiet.close()
    # 7 of 10 done, one step in 40 s this session: 3 more take 120 s
    assert [r.getMessage() for r in caplog.records] == [
        "step 7/10 (70%), 100 tokens/s, ETA 0:02:00"
    ]


def test_train_prints_progress_lines_when_stderr_is_not_a_terminal(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "PROGRESS_EVERY", 0.0)  # a line every step
    flags = [f for f in TINY_DATES_FLAGS if f != "--no-progress"]
    result = luong("train", "dates", "--out", str(tmp_path / "run"), *flags)
    assert result.returncode == 0, result.stderr.decode()
    lines = [line for line in result.stderr.decode().splitlines() if " tokens/s, ETA " in line]
    total = int(lines[0].split("/")[1].split()[0])
    assert total >= 2
    assert [line.split()[2] for line in lines] == [f"{n}/{total}" for n in range(1, total + 1)]
    assert lines[-1].startswith(f"luong: step {total}/{total} (100%), ")
    logged = (tmp_path / "run" / "train.log").read_text(encoding="utf-8")
    assert f"step {total}/{total} (100%)" in logged
    # --no-progress: no lines
    quiet = luong("train", "dates", "--out", str(tmp_path / "quiet"), *TINY_DATES_FLAGS)
    assert quiet.returncode == 0 and b" tokens/s, ETA " not in quiet.stderr


def test_a_total_still_being_counted_gives_lines_without_an_eta(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock(0.0, 30.0, 30.0, 60.0, 60.0)
    progress = StepProgress(None, 0, shown=True, every=30.0, clock=clock, terminal=False)
    with caplog.at_level(logging.INFO, logger="luong"):
        progress.step(300)
        progress.total = 8  # the count came in
        progress.step(600)
    assert [r.getMessage() for r in caplog.records] == [
        "step 1, 10 tokens/s",
        "step 2/8 (25%), 20 tokens/s, ETA 0:03:00",
    ]
