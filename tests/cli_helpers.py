"""Helpers for the tests that run the ``luong`` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

# A model small enough to train in a second or two.
TINY_MODEL_FLAGS = [
    "--epochs",
    "1",
    "--emb-dim",
    "8",
    "--enc-hidden",
    "8",
    "--enc-layers",
    "1",
    "--dec-hidden",
    "16",
    "--no-progress",
]
TINY_DATES_FLAGS = ["--n-train", "400", "--n-dev", "40", "--n-test", "60", *TINY_MODEL_FLAGS]


def luong(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m luong ARGS`` (one thread; PYTHONPATH, when set, is kept)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "luong", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=300,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[bytes], *needles: str) -> None:
    """A non-zero exit, no traceback, one line on stderr (argparse's usage lines aside)
    holding every needle."""
    err = result.stderr.decode()
    assert result.returncode != 0
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in err, err


def output_lines(result: subprocess.CompletedProcess[bytes]) -> list[str]:
    """stdout's lines, after checking the run succeeded and every line ended with a newline."""
    assert result.returncode == 0, result.stderr.decode()
    text = result.stdout.decode()
    assert text.endswith("\n") or text == ""
    return text.split("\n")[:-1]


# Runs code in a child whose address space may grow by at most ``budget`` bytes past what it
# holds once luong (and torch) are imported: a case that needs more fails with MemoryError.
_LIMIT = """
import resource, sys
import luong.cli, luong.plot
size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
            if line.startswith("VmSize"))
limit = size + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
"""
_LIMITED = _LIMIT + "sys.exit(luong.cli.main(sys.argv[2:]))\n"


def luong_limited(
    budget: int, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``luong ARGS`` with at most ``budget`` more bytes of memory than luong takes to start."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", _LIMITED, str(budget), *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=300,
    )


def python_limited(budget: int, code: str) -> subprocess.CompletedProcess[bytes]:
    """Run Python ``code`` with at most ``budget`` more bytes of memory than luong takes."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", _LIMIT + code, str(budget)],
        capture_output=True,
        env=env,
        timeout=300,
    )
