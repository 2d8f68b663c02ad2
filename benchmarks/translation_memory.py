"""How fast a translation memory answers (``luong.memory.translation_memory``): gettext-en-de's
train split as the memory (its TSV read and indexed once), every source of its devtest recalled
(exact, then fuzzy by rapidfuzz's ratio over all the memory's keys), on one thread.

    PYTHONPATH=src python benchmarks/translation_memory.py [--data DIR] [--sizes 1000 ...]

Prints, for memories of the given sizes (the first N pairs of train), the time to read and
index, and per recall the median and the 95th percentile in milliseconds, with how many
devtest sources had an exact and a fuzzy match (docs/robustness.md quotes it).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from luong.common.files import read_text_lines
from luong.memory.translation_memory import MemoryEntry, TranslationMemory, read_entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(__file__).resolve().parents[2] / "shared"  # ../shared beside the checkout
    parser.add_argument("--data", type=Path, default=shared / "data" / "gettext-en-de")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 33993])
    args = parser.parse_args()
    start = time.perf_counter()
    entries = read_entries(args.data / "train.tsv", "en", "de")
    read_s = time.perf_counter() - start
    sources = [line.split("\t")[0] for line in read_text_lines(args.data / "devtest.tsv")]
    print(f"read {len(entries)} pairs of train.tsv in {read_s:.2f} s")
    for size in args.sizes:
        chosen: list[MemoryEntry] = entries[:size]
        start = time.perf_counter()
        memory = TranslationMemory(chosen)
        index_s = time.perf_counter() - start
        times, exact, fuzzy = [], 0, 0
        for source in sources:
            start = time.perf_counter()
            recall = memory.recall(source)
            times.append((time.perf_counter() - start) * 1000)
            exact += recall.exact is not None
            fuzzy += recall.exact is None and bool(recall.fuzzy)
        p95 = statistics.quantiles(times, n=20)[-1]
        print(
            f"{len(memory)} entries ({len(memory.keys)} keys): indexed in {index_s * 1000:.0f} ms; "
            f"recall of {len(sources)} devtest sources: median {statistics.median(times):.2f} "
            f"ms, 95th percentile {p95:.2f} ms, total {sum(times) / 1000:.2f} s; "
            f"{exact} exact, {fuzzy} with fuzzy matches only"
        )


if __name__ == "__main__":
    main()
