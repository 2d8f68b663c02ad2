"""How fast a large glossary loads and matches (``luong.memory.glossary``, issue 54's finding 7): a
TSV of N generated terms (half of them starting with a sign, as ``.w5``: the terms the old
index searched through every text) read by ``read_glossary``, then ``Glossary.find`` over
1,000 lines of 12 words that hold some of the terms, on one thread.

    PYTHONPATH=src python benchmarks/glossary.py [--terms 100000] [--lines 1000]

Prints the file's size, the time to read and index it, the time to find the terms of every
line and how many were found (docs/performance.md quotes it).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from luong.memory.glossary_files import read_glossary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terms", type=int, default=100_000)
    parser.add_argument("--lines", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(args.terms)]
    terms = [f"{'.' if i % 2 else ''}{word}{i}" for i, word in enumerate(words)]
    lines = [
        " ".join(rng.choice(terms) if rng.random() < 0.1 else rng.choice(words) for _ in range(12))
        for _ in range(args.lines)
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "terms.tsv"
        path.write_text("".join(f"{t}\tZiel{i}\n" for i, t in enumerate(terms)), encoding="utf-8")
        size = path.stat().st_size
        start = time.perf_counter()
        glossary = read_glossary(path)
        load_s = time.perf_counter() - start
    start = time.perf_counter()
    found = sum(len(glossary.find(line)) for line in lines)
    find_s = time.perf_counter() - start
    print(
        f"{len(glossary)} terms ({size / 1e6:.1f} MB, half starting with a sign): read and "
        f"indexed in {load_s:.2f} s; {args.lines} lines matched in {find_s:.3f} s "
        f"({1000 * find_s / args.lines:.3f} ms a line), {found} terms found"
    )


if __name__ == "__main__":
    main()
