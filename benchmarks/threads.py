"""How many threads a luong process should use (issue 43): training-step time at 1 and 2
intra-op threads and at torch's own default, with OpenMP's waiting threads spinning (its
default, ``OMP_WAIT_POLICY`` unset) or sleeping (``PASSIVE``), on a quiet machine and beside
busy processes, for the dates model and the translation preset's step.

    python benchmarks/threads.py [--out docs/threads.json] [--steps 10] [--rounds 3] [--load 2]

Every case runs in a fresh child process (OpenMP reads its wait policy when torch loads), on
the same batches (``bench.py``'s: dates at batch 128; the translation preset's step of 2,048
tokens on a 4,000-symbol vocabulary), 3 warm-up steps and ``--steps`` timed; a case's figure
is its median step time. The cases run in ``--rounds`` rounds, one of each case a round, so
that a drift of the machine's load hits every case alike; the summary gives each case's
median over the rounds and its range. "Loaded" starts ``--load`` busy processes (a Python
loop each, at the same priority) for the case, as other work on a shared machine would; the
load average before each case is recorded beside its figure. Torch's own default is a thread
per core: on this 2-core machine, the 2-thread cases.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import json, statistics, sys, torch
sys.path.insert(0, {benchmarks!r})
from bench import CONFIGS, dates_batches, train_step_times, translation_batches, vocabularies
from luong import Seq2Seq
from luong.tasks import translation
shape, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if threads:
    torch.set_num_threads(threads)
if shape == "dates":
    src, tgt = vocabularies()
    batches = dates_batches(128, steps + 3, src, tgt)
    model = Seq2Seq(CONFIGS["a"][1], src, tgt, seed=0)
else:
    vocab, batches = translation_batches(steps + 3, 2048)
    model = Seq2Seq(translation.MODEL_CONFIG, vocab, vocab, seed=0)
times = train_step_times(model, batches, 3)
print(json.dumps({{"threads": torch.get_num_threads(), "step_ms": 1e3 * statistics.median(times)}}))
"""

BUSY = "while True: pass"


def run_case(shape: str, threads: int, policy: str, steps: int, load: int) -> dict[str, object]:
    """One case in a child process: ``threads`` 0 for torch's default; ``policy`` "" for
    OpenMP's default wait policy; ``load`` busy processes beside it."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    script = CHILD.format(benchmarks=str(Path(__file__).resolve().parent))
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(load)]
    try:
        load_average = os.getloadavg()[0]
        out = subprocess.run(
            [sys.executable, "-c", script, shape, str(threads), str(steps)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        for process in busy:
            process.kill()
            process.wait()
    result = json.loads(out.strip().splitlines()[-1])
    return {
        "shape": shape,
        "threads_asked": threads or "default",
        "threads": result["threads"],
        "wait_policy": policy or "default (active)",
        "busy_processes": load,
        "load_average_1min": round(load_average, 2),
        "step_ms": round(result["step_ms"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("threads.json"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=2, help="busy processes in the loaded cases")
    args = parser.parse_args()
    cases = []
    for _ in range(args.rounds):
        for shape in ("dates", "translation"):
            for load in (0, args.load):
                for threads, policy in ((1, ""), (2, ""), (2, "PASSIVE")):
                    case = run_case(shape, threads, policy, args.steps, load)
                    print(json.dumps(case), flush=True)
                    cases.append(case)
    summary = []
    keys = ("shape", "busy_processes", "threads", "wait_policy")
    for key in dict.fromkeys(tuple(case[k] for k in keys) for case in cases):
        times = [case["step_ms"] for case in cases if tuple(case[k] for k in keys) == key]
        summary.append(
            {
                **dict(zip(keys, key, strict=True)),
                "median_step_ms": statistics.median(times),
                "min_step_ms": min(times),
                "max_step_ms": max(times),
            }
        )
        print(json.dumps(summary[-1]), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} usable cores",
        "command": "python benchmarks/threads.py --out docs/threads.json",
        "summary": summary,
        "cases": cases,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
