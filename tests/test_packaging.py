"""The package as a user installs it (issue 28): ``python -m build`` makes an sdist and a wheel
(the wheel built from the sdist, so the sdist holds everything); the wheel holds the
explorer's files and ``py.typed``; installed into a fresh virtual environment with the core
dependencies only (torch from this machine's CPU build through ``constraints.txt``, nothing of
the extras or the dev tools), ``luong --help``, ``luong train dates`` for a few steps and
``luong translate`` run there, from the installed package, and a command whose extra is
missing says so in one line.

Oracles: the wheel's file list; the environment's package list against the core's; the
commands' exit status and exact output lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers import TINY_DATES_FLAGS

from luong.version import __version__

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXPLORER = {
    f"luong/server/explorer/{name}" for name in ("index.html", "explorer.js", "explorer.css")
}


def start(
    *command: str | Path, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` outside this checkout: no PYTHONPATH, so the installed package is the
    one imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
    )


def run(*command: str | Path, cwd: Path | None = None, stdin: str | None = None) -> str:
    """``command``'s stdout, after a check that it succeeded."""
    done = start(*command, cwd=cwd, stdin=stdin)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0].split("[")[0]
        for mark in "<>=!~ ":
            name = name.split(mark)[0]
        names.add(name.lower().replace("_", "-"))
    return names


@pytest.mark.slow
def test_the_wheel_installs_and_runs_with_the_core_dependencies_only(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--outdir", dist, ROOT)
    (wheel,) = dist.glob("luong-*.whl")
    assert len(list(dist.glob("luong-*.tar.gz"))) == 1
    files = set(zipfile.ZipFile(wheel).namelist())
    assert EXPLORER | {"luong/py.typed", "luong/cli/parsers.py"} <= files

    # A fresh environment without pip of its own: this environment's pip installs into it
    # (--python), without compiling torch's thousands of modules (--no-compile), in about a
    # minute.
    env = tmp_path / "env"
    run(sys.executable, "-m", "venv", "--without-pip", env)
    python, pip = env / "bin" / "python", [sys.executable, "-m", "pip", "--python"]
    install = ["install", "-q", "--no-compile", "--disable-pip-version-check"]
    run(*pip, python, *install, "-c", ROOT / "constraints.txt", wheel)
    listed = json.loads(run(*pip, python, "list", "--format=json", "--disable-pip-version-check"))
    installed = {package["name"].lower().replace("_", "-") for package in listed}
    versions = {package["name"].lower(): package["version"] for package in listed}
    core = requirement_names(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    others = set().union(*(requirement_names(extras[name]) for name in extras)) - {"luong"}
    assert core | {"luong"} <= installed
    assert installed & others == set()
    assert versions["torch"].startswith("2.13.0")  # constraints.txt's, not a CUDA build

    luong = env / "bin" / "luong"
    where = run(python, "-c", "import luong; print(luong.__file__)", cwd=tmp_path)
    assert where.startswith(str(env))
    assert run(luong, "--help", cwd=tmp_path).startswith("usage: luong")
    out = tmp_path / "run"
    trained = run(luong, "train", "dates", "--out", out, *TINY_DATES_FLAGS, cwd=tmp_path)
    assert trained.splitlines()[-1] == f"model and metrics.json written to {out}"
    outputs = run(luong, "translate", out, cwd=tmp_path, stdin="3 May 1979\n12.10.21\n")
    assert len(outputs.splitlines()) == 2

    # The extras' commands, without their extra.
    for command, extra in ((["serve", out], "serve"), (["plot-scores", "--out", "a.png"], "plot")):
        done = start(luong, *command, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (
            1,
            "",
            f"luong {command[0]} needs the {extra} extra (in a clone of luong: pip install -e "
            f"'.[{extra}]'; from its wheel: pip install 'luong-{__version__}-py3-none-any.whl"
            f"[{extra}]')\n",
        )
