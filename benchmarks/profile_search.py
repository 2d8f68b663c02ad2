"""Where a search's time goes, and how far it stands from the machine's matmul peak (issue 42's
starting point): greedy and beam-5 decoding of a test set under ``torch.profiler``, one table
of operators by their own CPU time, and a roofline figure.

    python benchmarks/profile_search.py runs/de DEVTEST.tsv [--threads 1] [--out profile.json]

For each search: the wall time of decoding every source once without the profiler (the best
of ``--repeats``; sentences/s), then one profiled run whose operators are grouped by name
(their own CPU time, excluding what they call, as a share of the profiled total). The
roofline figure: the floating-point operations of the matrix products the search ran, as the
profiler counts them from each call's shapes (``with_flops``: aten::mm, addmm, bmm, matmul,
linear), over the unprofiled wall time, against the float32 matmul peak measured in the same
process at the same thread count (``bench.matmul_peak``). The RNN cells' own products (the
fused LSTM of the decoder step) are counted by the profiler only where they go through those
operators, so the fraction is a floor.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from luong import SearchOptions, load, use_threads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import matmul_peak  # noqa: E402

SEARCHES = {"greedy": SearchOptions(), "beam 5": SearchOptions(beam=5, alpha=0.6)}


def sources_of(path: Path) -> list[str]:
    return [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("data", type=Path, help="a TSV file: its first column is decoded")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--top", type=int, default=12, help="operators shown per search")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    use_threads(args.threads)
    translator = load(args.model)
    sources = sources_of(args.data)
    peak = matmul_peak()
    searches: dict[str, object] = {}
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(["python", "benchmarks/profile_search.py", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)",
        "sources": len(sources),
        "matmul_peak_gflops": round(peak, 1),
        "searches": searches,
    }
    for name, search in SEARCHES.items():
        translator.translate(sources[:64], search)  # warm-up
        walls = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            translator.translate(sources, search)
            walls.append(time.perf_counter() - started)
        wall = min(walls)
        with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
            translator.translate(sources, search)
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        flops = sum(e.flops for e in events if e.flops)
        top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[: args.top]
        searches[name] = {
            "seconds": round(wall, 3),
            "sentences_per_s": round(len(sources) / wall, 1),
            "matmul_gflop": round(flops / 1e9, 3),
            "gflops_achieved": round(flops / wall / 1e9, 2),
            "fraction_of_peak": round(flops / wall / 1e9 / peak, 4),
            "operators": [
                {
                    "name": e.key,
                    "calls": e.count,
                    "self_cpu_share": round(e.self_cpu_time_total / total, 4),
                    "self_cpu_ms": round(e.self_cpu_time_total / 1e3, 1),
                }
                for e in top
            ],
        }
        print(json.dumps({name: searches[name]}, indent=1), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
