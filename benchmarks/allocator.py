"""Decoding with glibc's mmap on and off for large blocks, side by side (issue 50;
docs/performance.md, "The allocator: freed buffers kept").

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/allocator.py --model runs/de-fp32 \\
        --data ../shared/data/gettext-en-de/devtest.tsv [--rounds 3] [--out docs/allocator.json]

``luong.common.devices.reuse_freed_memory`` (called by every ``Translator`` and ``Trainer``)
serves every block from the heap: ``M_MMAP_THRESHOLD`` at its 32 MiB ceiling and, since this
benchmark, ``M_MMAP_MAX`` 0. ``mapped`` is the setting before it: blocks above 32 MiB mapped
afresh (``M_MMAP_MAX`` back to glibc's 65,536 once the translators are built), as a beam
search's ``[k B, V]`` logits and log-probabilities are (74 MB each at beam 5 over 929
sentences and 4,000 pieces). ``heap`` is luong's own. mallopt holds for a whole process, so
each variant decodes in a process of its own, the variants alternating round by round; each
process decodes the sources as ``luong eval`` does (batches of 1,000) in float32 and in int8
(``luong quantize``), greedy and beam 5, after a warm-up on 64 of them, and reports its wall
times, the page faults of those decodings (``getrusage``'s minor faults) and its peak
resident memory. Per variant and row: the median over ``--rounds``; ``heap_speed``: mapped's
time over heap's, the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from luong.config.search import SearchOptions
from luong.evaluation.evaluate import group_references
from luong.model.quantize import quantize
from luong.model.seq2seq import Seq2Seq
from luong.tasks.tsv import read_split
from luong.translation.translator import Translator

VARIANTS = ("mapped", "heap")
SEARCHES = {"greedy": SearchOptions(), "beam 5": SearchOptions(beam=5)}
BATCH = 1000  # luong eval's batch
GLIBC_MMAP_MAX = 65536  # glibc's default M_MMAP_MAX (malloc/malloc.c, DEFAULT_MMAP_MAX)


def child(model_dir: Path, data: Path, variant: str) -> dict[str, dict[str, float]]:
    """One process's figures: per row ``"fp32, beam 5"`` its seconds and page faults, and
    ``peak_rss_mb``."""
    torch.set_num_threads(1)
    sources = [s for s, _ in group_references(read_split(data).pairs)]
    model = Seq2Seq.from_pretrained(model_dir)
    translators = {"fp32": Translator(model, "fp32"), "int8": Translator(quantize(model), "fp32")}
    if variant == "mapped":  # the setting before: blocks above 32 MiB mapped afresh
        ctypes.CDLL(None).mallopt(-4, GLIBC_MMAP_MAX)  # M_MMAP_MAX
    rows: dict[str, dict[str, float]] = {}
    for name, translator in translators.items():
        for search, options in SEARCHES.items():
            translator.translate(sources[:64], options, batch_size=BATCH)
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            translator.translate(sources, options, batch_size=BATCH)
            seconds = time.perf_counter() - start
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            rows[f"{name}, {search}"] = {"seconds": round(seconds, 3), "page_faults": faults}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rows": rows, "peak_rss_mb": round(peak_mb)}  # type: ignore[dict-item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a float model folder")
    parser.add_argument("--data", type=Path, required=True, help="a TSV of pairs (devtest)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.model, args.data, args.child)))
        return
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for round_ in range(args.rounds):
        order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            command = [sys.executable, __file__, "--model", str(args.model), "--data"]
            command += [str(args.data), "--child", variant]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            runs[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {round_ + 1} {variant}: {runs[variant][-1]}", file=sys.stderr)
    rows: dict[str, dict[str, object]] = {}
    for row in runs["heap"][0]["rows"]:
        entry: dict[str, object] = {}
        for variant in VARIANTS:
            seconds = [r["rows"][row]["seconds"] for r in runs[variant]]
            faults = [r["rows"][row]["page_faults"] for r in runs[variant]]
            entry[variant] = {
                "seconds": round(statistics.median(seconds), 2),
                "page_faults": int(statistics.median(faults)),
            }
        ratios = [
            m["rows"][row]["seconds"] / h["rows"][row]["seconds"]
            for m, h in zip(runs["mapped"], runs["heap"], strict=True)
        ]
        entry["heap_speed"] = round(statistics.median(ratios), 2)
        rows[row] = entry
    result = {
        "machine": {"threads": 1, "platform": platform.platform(), "cpu": _cpu()},
        "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/allocator.py "
        + " ".join(sys.argv[1:]),
        "model": str(args.model),
        "data": args.data.name,
        "rounds": args.rounds,
        "rows": rows,
        "peak_rss_mb": {v: max(r["peak_rss_mb"] for r in runs[v]) for v in VARIANTS},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
