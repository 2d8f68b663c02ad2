"""Mutation testing of the attention core (``make mutation``).

1. mutmut 2.5.1 mutates ``src/luong/model/attention.py`` and runs the attention tests against each
   mutant. The score is killed / (total - survivors judged equivalent); the bar is 0.90. The raw
   killed / total is printed too, with every survivor.
2. Each pitfall of the specification (section 5 of the first seed) is applied to the source as
   an explicit patch, and the test named for it must fail.

Both run on a copy of the package in a temporary folder, so the working tree is never touched
(the tests import the copy through PYTHONPATH). Exit status 0 only when the score meets the bar
and every pitfall is caught. ``--skip-mutmut`` runs only the pitfalls (seconds, not minutes).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mutmut import Context, RelativeMutationID, mutate

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("src/luong")
# The masks, the softmax, the global scores and Bahdanau's; local attention (local-m, local-p)
# is in model/local_attention.py, which is not mutated, though its tests run against each mutant.
TARGET = PACKAGE / "model" / "attention.py"
TESTS = (
    "tests/test_attention.py",
    "tests/test_attention_properties.py",
    "tests/test_attention_family.py",  # location, scaled dot, local-m, local-p
)
THRESHOLD = 0.90
BIN = Path(sys.executable).parent

# Survivors judged equivalent, by (original line, mutated line), stripped: the mutant computes
# the same thing as the original on every input the module accepts. Each needs its reason.
EQUIVALENT: dict[tuple[str, str], str] = {
    (
        "fan_in = param.shape[1] if param.dim() > 1 else param.shape[0]",
        "fan_in = param.shape[1] if param.dim() > 1 else param.shape[1]",
    ): "every parameter is a 2-D Linear weight: the 1-D branch is unreachable",
    (
        "fan_in = param.shape[1] if param.dim() > 1 else param.shape[0]",
        "fan_in = param.shape[1] if param.dim() >= 1 else param.shape[0]",
    ): "every parameter is 2-D, so dim() > 1 and dim() >= 1 agree",
    (
        "filled = filled.masked_fill(empty, 0.0)  # an all -inf row would give 0/0",
        "filled = filled.masked_fill(empty, 1.0)  # an all -inf row would give 0/0",
    ): "any finite fill of an empty row gives a uniform softmax that the final re-mask zeroes, "
    "with zero gradient either way",
    (
        "self, query: Tensor, keys: Tensor, mask: Tensor, proj: Tensor, step: int = 0",
        "self, query: Tensor, keys: Tensor, mask: Tensor, proj: Tensor, step: int = 1",
    ): "the global attentions' attend_unchecked never reads the step (only LocalAttention's, "
    "whose own default is tested)",
    (
        "self.max_len: int | None = None",
        "self.max_len: int & None = None",
    ): "an annotation, never evaluated (from __future__ import annotations)",
}


@dataclass(frozen=True)
class Pitfall:
    name: str
    test: str  # a pytest -k expression: the test named for this pitfall
    edits: tuple[tuple[str, str], ...]  # (old, new), each old found exactly once


PITFALLS = (
    Pitfall(
        "1. W_c [h ; c] instead of W_c [c ; h]",
        "test_hand_example_attentional_order",
        (("torch.cat([context, query], dim=-1)", "torch.cat([query, context], dim=-1)"),),
    ),
    Pitfall(
        "2. general with W_a^T",
        "test_general_is_not_symmetric",
        (
            (
                "return self.score_proj(keys)",
                "return F.linear(keys, self.score_proj.weight.t())",
            ),
        ),
    ),
    Pitfall(
        "3. masking after the softmax only (no -inf before)",
        "test_masked_weights_are_exactly_zero",
        (('filled = scores.masked_fill(~mask, float("-inf"))', "filled = scores"),),
    ),
    Pitfall(
        "4. the dot score scaled by 1/sqrt(d)",
        "test_dot_is_not_scaled",
        (
            # The dot score reads the keys through project_keys: h . (k / sqrt(d)).
            (
                'if self.score == "dot":\n            return keys',
                'if self.score == "dot":\n            return keys / math.sqrt(self.d)',
            ),
        ),
    ),
    Pitfall(
        "5. concat precomputing the keys with the query half of W_a",
        "test_concat_projection_splits_the_weight",
        (
            (
                "F.linear(keys, self.score_proj.weight[:, self.d :])",
                "F.linear(keys, self.score_proj.weight[:, : self.d])",
            ),
            (
                "F.linear(query, self.score_proj.weight[:, : self.d])",
                "F.linear(query, self.score_proj.weight[:, self.d :])",
            ),
        ),
    ),
    Pitfall(
        "6. -1e9 instead of -inf before the softmax",
        "test_masked_weights_are_exactly_zero",
        (('float("-inf")', "-1e9"),),
    ),
    Pitfall(
        "6b. -1e9, without the empty-row guard and the re-mask",
        "test_masked_weights_are_exactly_zero",
        (
            ('float("-inf")', "-1e9"),
            ("filled = filled.masked_fill(empty, 0.0)", "pass"),
            (
                "return filled.softmax(dim=-1, dtype=wide).masked_fill(~mask, 0.0)",
                "return filled.softmax(-1, dtype=wide)",
            ),
        ),
    ),
    Pitfall(
        "7. the attentional state without the tanh",
        "test_hand_example_dot",
        (
            (
                "return torch.tanh(self.combine(torch.cat([context, query], dim=-1)))",
                "return self.combine(torch.cat([context, query], dim=-1))",
            ),
        ),
    ),
)


def make_workspace() -> Path:
    """A temporary folder with a copy of the package and of the attention tests."""
    work = Path(tempfile.mkdtemp(prefix="luong-mutation-"))
    shutil.copytree(
        ROOT / PACKAGE, work / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    (work / "tests").mkdir()
    for test in TESTS:
        shutil.copy2(ROOT / test, work / test)
    return work


def environment(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(work / "src")  # ahead of the editable install of the working tree
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never run a stale .pyc of an earlier mutant
    env["LUONG_MUTATION"] = "1"  # the property tests draw fewer, fixed examples
    env["OMP_NUM_THREADS"] = "1"  # tiny tensors: threads only contend with other work
    return env


def pytest_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *extra, *TESTS]


def check_imports_the_copy(work: Path) -> None:
    code = "import luong.model.attention as a; print(a.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
        check=True,
    )
    imported = Path(out.stdout.strip()).resolve()
    if imported != (work / TARGET).resolve():
        raise SystemExit(f"the tests would import {imported}, not the copy {work / TARGET}")


# --- 1. mutmut -----------------------------------------------------------------------------------


@dataclass
class Mutant:
    line_number: int
    original: str
    mutated: str
    status: str


def run_mutmut(work: Path) -> list[Mutant]:
    # mutmut 2 counts only exit status 1 as "killed": a mutant that breaks the import (pytest
    # exits 2, a collection error) would "survive". Any failure exits 1 here.
    # (mutmut splits the runner like a shell for its first run and hands it to a shell for the
    # mutants, so the whole command goes to bash -c, quoted.)
    runner = "bash -c " + shlex.quote(" ".join(pytest_command()) + " || exit 1")
    command = [
        str(BIN / "mutmut"),
        "run",
        "--paths-to-mutate",
        str(TARGET),
        "--tests-dir",
        "tests",
        "--runner",
        runner,
        "--no-progress",
        "--simple-output",
    ]
    print(f"mutmut: {' '.join(command[:6])} ...\nrunner: {runner}", flush=True)
    started = time.monotonic()
    proc = subprocess.run(command, cwd=work, env=environment(work), capture_output=True, text=True)
    print(f"mutmut finished in {time.monotonic() - started:.0f} s (exit {proc.returncode})")
    # Exit bits 2, 4, 8: survivors, timeouts, slow mutants. 1 is a fatal error.
    if proc.returncode & 1:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        raise SystemExit("mutmut failed to run (see above)")
    return read_cache(work)


def read_cache(work: Path) -> list[Mutant]:
    source = (work / TARGET).read_text()
    lines = source.splitlines()
    with sqlite3.connect(work / ".mutmut-cache") as db:
        rows = db.execute(
            'SELECT l.line, l.line_number, m."index", m.status FROM Mutant m '
            'JOIN Line l ON m.line = l.id ORDER BY l.line_number, m."index"'
        ).fetchall()
    mutants = []
    for line, line_number, index, status in rows:
        mutation_id = RelativeMutationID(line=line, index=index, line_number=line_number)
        context = Context(source=source, mutation_id=mutation_id, filename=str(TARGET))
        mutated_lines = mutate(context)[0].splitlines()
        changed = [(a, b) for a, b in zip(lines, mutated_lines, strict=False) if a != b] or [
            (line, "(line removed)")
        ]
        original, mutated = changed[0]
        mutants.append(Mutant(line_number + 1, original.strip(), mutated.strip(), status))
    return mutants


def report_mutmut(mutants: list[Mutant]) -> bool:
    detected = {"ok_killed", "bad_timeout", "ok_suspicious"}  # timeouts and slow kills: detected
    total = len(mutants)
    killed = sum(m.status in detected for m in mutants)
    survivors = [m for m in mutants if m.status not in detected]
    equivalent = [m for m in survivors if (m.original, m.mutated) in EQUIVALENT]
    counted = total - len(equivalent)
    score = killed / counted if counted else 0.0
    by_status: dict[str, int] = {}
    for m in mutants:
        by_status[m.status] = by_status.get(m.status, 0) + 1
    print(f"\nmutants by status: {by_status}")
    print(f"raw score: {killed}/{total} = {killed / max(total, 1):.4f}")
    print(
        f"score excluding {len(equivalent)} survivor(s) judged equivalent: "
        f"{killed}/{counted} = {score:.4f} (bar {THRESHOLD:.2f})"
    )
    print(f"\nsurvivors ({len(survivors)}):")
    for m in survivors:
        reason = EQUIVALENT.get((m.original, m.mutated))
        label = f"equivalent: {reason}" if reason else f"NOT EQUIVALENT ({m.status})"
        print(f"  line {m.line_number}: {m.original}\n      -> {m.mutated}\n      {label}")
    return score >= THRESHOLD


# --- 2. the pitfalls -----------------------------------------------------------------------------


def apply_edits(source: str, pitfall: Pitfall) -> str:
    for old, new in pitfall.edits:
        if source.count(old) != 1:
            raise SystemExit(
                f"pitfall {pitfall.name!r}: expected {old!r} once in {TARGET}, found it "
                f"{source.count(old)} times; update the patch in scripts/mutation.py"
            )
        source = source.replace(old, new)
    return source


def failing_tests(work: Path, test: str) -> tuple[int, list[str]]:
    proc = subprocess.run(
        pytest_command("-rf", "-k", test),
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
    )
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
    return proc.returncode, failed


def run_pitfalls(work: Path) -> bool:
    target = work / TARGET
    original = target.read_text()
    all_caught = True
    print("\npitfalls (section 5 of the specification), each applied as a source patch:")
    try:
        for test in sorted({p.test for p in PITFALLS}):
            code, failed = failing_tests(work, test)
            if code != 0:
                raise SystemExit(f"{test} fails on the unpatched source ({code}): {failed}")
        for pitfall in PITFALLS:
            target.write_text(apply_edits(original, pitfall))
            code, failed = failing_tests(work, pitfall.test)
            # Exit 1 with a named failure: the test ran and failed. 2+ (collection or import
            # error, no test selected) would not say that the named test catches anything.
            caught = code == 1 and any(pitfall.test in name for name in failed)
            all_caught &= caught
            verdict = "caught" if caught else f"NOT CAUGHT (pytest exit {code})"
            print(f"  {pitfall.name:60s} {verdict}\n      by {', '.join(failed) or '-'}")
    finally:
        target.write_text(original)
    return all_caught


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-mutmut", action="store_true", help="run only the pitfalls")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    before = (ROOT / TARGET).read_bytes()
    work = make_workspace()
    print(f"working on a copy in {work}")
    try:
        check_imports_the_copy(work)
        pitfalls_ok = run_pitfalls(work)
        score_ok = True
        if not args.skip_mutmut:
            score_ok = report_mutmut(run_mutmut(work))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if (ROOT / TARGET).read_bytes() != before:
        print(f"note: {TARGET} changed in the working tree during the run (not by this script)")
    print(f"\npitfalls: {'all caught' if pitfalls_ok else 'SOME NOT CAUGHT'}")
    if not args.skip_mutmut:
        print(f"mutation score: {'meets' if score_ok else 'BELOW'} the bar of {THRESHOLD:.2f}")
    return 0 if pitfalls_ok and score_ok else 1


if __name__ == "__main__":
    sys.exit(main())
