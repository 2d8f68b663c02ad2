"""A translation memory of half a million entries (issue 51, item 4): how fast a source is
looked up through the memory's trigram index (``luong.memory.index``), how long the index
takes to build and to read back from its cache, and whether its fuzzy matches are those of
the exhaustive scan, on one thread.

    OMP_NUM_THREADS=1 python benchmarks/memory_index.py --work /tmp/tm [--sources 1000] \
        [--compare 300] [--threshold 75] [--out docs/memory_index.json]

The memory is made from this machine's catalogs (``/usr/share/locale/*/LC_MESSAGES``): every
distinct English msgid (whitespace collapsed, at most 200 characters) with its first
translation, less 1,000 drawn as the sources to look up (seeded), then English-like
sentences drawn from a word-bigram model of those msgids (seeded) up to 500,000 keys, the
size of the German general corpus's train split (574,030). The sources are real messages
that the memory does not hold, so each lookup is a fuzzy one, as for a project's new
strings. ``WORK/memory.tsv`` and ``WORK/sources.txt`` are written once and reused.

Measured: ``TranslationMemory.read`` of the TSV with no cache (the index built and cached
beside it), then again (the cache read back); ``recall`` of every source (exact lookup,
then fuzzy: the index's candidates scored by ``fuzz.ratio``), after one untimed lookup:
mean, median, 95th percentile and maximum in ms, for each of two passes over the sources
(a slow lookup that is slow in one pass only is the machine's, not the source's); the first
``--compare`` sources' fuzzy matches against the memory without an index
(``process.extract`` over every key): identical lists or not.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from pathlib import Path

import polib

from luong.memory.index import INDEX_SUFFIX
from luong.memory.translation_memory import TranslationMemory, read_entries

KEYS = 500_000


def make_memory(work: Path, held_out: int, seed: int = 0) -> None:
    """Write ``work/memory.tsv`` (``KEYS`` pairs) and ``work/sources.txt``."""
    first: dict[str, str] = {}
    for path in sorted(Path("/usr/share/locale").glob("*/LC_MESSAGES/*.mo")):
        try:
            catalog = polib.mofile(str(path))
        except (OSError, ValueError):
            continue
        for entry in catalog:
            source, target = " ".join(entry.msgid.split()), " ".join(entry.msgstr.split())
            if source and target and len(source) <= 200 and any(c.isalpha() for c in source):
                first.setdefault(source, target)
    real = sorted(first)
    rng = random.Random(seed)
    rng.shuffle(real)
    sources, kept = real[:held_out], real[held_out:]
    follows: dict[str, list[str]] = {}
    for text in kept:
        words = ["<s>", *text.split(), "</s>"]
        for word, after in zip(words, words[1:], strict=False):
            follows.setdefault(word, []).append(after)
    keys, made = set(kept), list(kept)
    while len(made) < KEYS:
        word, words = "<s>", []
        while len(words) <= 40:
            word = rng.choice(follows[word])
            if word == "</s>":
                break
            words.append(word)
        text = " ".join(words)
        if text and len(text) <= 200 and text not in keys and text not in first:
            keys.add(text)
            made.append(text)
    rng.shuffle(made)
    lines = (f"{key}\t{first.get(key, key.upper())}\n" for key in made)
    (work / "memory.tsv").write_text("".join(lines), encoding="utf-8")
    (work / "sources.txt").write_text("".join(f"{s}\n" for s in sources), encoding="utf-8")
    print(f"{len(kept)} real msgids and {KEYS - len(kept)} drawn ones; {len(sources)} sources")


def fuzzy_of(memory: TranslationMemory, source: str) -> list[tuple[str, float]]:
    return [(match.source, round(match.score, 6)) for match in memory.recall(source).fuzzy]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="where the memory is made")
    parser.add_argument("--sources", type=int, default=1000, help="sources looked up")
    parser.add_argument("--compare", type=int, default=300, help="sources also scanned whole")
    parser.add_argument("--threshold", type=float, default=75.0, help="--tm-threshold")
    parser.add_argument("--out", type=Path, help="the figures as JSON")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    tsv = args.work / "memory.tsv"
    if not tsv.is_file():
        make_memory(args.work, args.sources)
    sources = (args.work / "sources.txt").read_text(encoding="utf-8").splitlines()
    sources = sources[: args.sources]
    (args.work / f"memory.tsv{INDEX_SUFFIX}").unlink(missing_ok=True)
    start = time.perf_counter()
    built = TranslationMemory.read([tsv], "en", "de", args.threshold)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    memory = TranslationMemory.read([tsv], "en", "de", args.threshold)
    cached_s = time.perf_counter() - start
    start = time.perf_counter()
    entries = read_entries(tsv, "en", "de")
    read_s = time.perf_counter() - start
    del built
    memory.recall("A first lookup, untimed")  # the first one pays for numpy's first calls
    passes: list[list[float]] = [[], []]
    for times in passes:
        for source in sources:
            start = time.perf_counter()
            memory.recall(source)
            times.append((time.perf_counter() - start) * 1000)
    matched = sum(bool(memory.recall(source).fuzzy) for source in sources)
    whole = TranslationMemory(entries, args.threshold, index_from=len(entries))  # every key
    compared = sources[: args.compare]
    scan_times, same = [], 0
    for source in compared:
        start = time.perf_counter()
        expected = fuzzy_of(whole, source)
        scan_times.append((time.perf_counter() - start) * 1000)
        same += fuzzy_of(memory, source) == expected
    figures = {
        "command": "OMP_NUM_THREADS=1 python benchmarks/memory_index.py --work WORK "
        f"--sources {args.sources} --compare {args.compare} --threshold {args.threshold:g}",
        "threshold": args.threshold,
        "keys": len(memory.keys),
        "read_tsv_s": round(read_s, 2),
        "read_and_build_index_s": round(build_s, 2),
        "read_with_cached_index_s": round(cached_s, 2),
        "index_bytes": (args.work / f"memory.tsv{INDEX_SUFFIX}").stat().st_size,
        "sources": len(sources),
        "with_fuzzy_matches": matched,
        "recall_ms": [
            {
                "mean": round(statistics.fmean(times), 2),
                "median": round(statistics.median(times), 2),
                "p95": round(statistics.quantiles(times, n=20)[-1], 2),
                "max": round(max(times), 2),
            }
            for times in passes
        ],
        "slowest_in_both_passes_ms": round(max(map(min, zip(*passes, strict=True))), 2),
        "whole_scan_ms_median": round(statistics.median(scan_times), 2),
        "same_fuzzy_matches_as_whole_scan": f"{same} of {len(compared)}",
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
