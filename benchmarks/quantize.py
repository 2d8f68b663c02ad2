"""int8 decoding against float32 (``luong quantize``), side by side in one run on the CPU.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quantize.py --dates runs/dates \\
        --translation runs/translation --data data/gettext-en-de/devtest.tsv [--repeats 3]

Each model folder is decoded as it is (float32) and in int8 (``luong.model.quantize.quantize``, in
memory; the same weights ``luong quantize`` writes), the runs of every variant interleaved so
that the machine's state falls on all alike, and every time a median of ``--repeats``:

- dates (``--dates``): the 10,000 test inputs of ``luong eval DIR --task dates`` (data seed 0)
  at batch 512, greedy and beam 5: exact match, sentences/s.
- translation (``--translation`` with ``--data FILE.tsv``): the file's sources (each once) at
  batch 1000 (``luong eval DIR --data FILE.tsv``'s), greedy and beam 5: BLEU as ``luong eval``
  computes it (against each source's targets), sentences/s; beam 5 also with each part alone
  in int8 (output, cells, attention), to show what each pays. Model size on disk
  (``model.safetensors``, the int8 one written by ``quantize_folder``) and peak memory: a
  child process per folder (the float one, the int8 one) that loads the model and decodes the
  file with beam 5 (its VmHWM, and its VmRSS after the imports, before the model).

Prints the figures as JSON (and writes them to ``--out``); ``x_float32`` is a row's speed
against float32's with the same search.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from luong.common.folder_files import WEIGHTS
from luong.config.choices import INT8_PARTS
from luong.config.search import SearchOptions
from luong.evaluation.evaluate import comparable, group_references
from luong.evaluation.metrics import bleu_chrf
from luong.model.quantize import quantize, quantize_folder
from luong.model.seq2seq import Seq2Seq
from luong.tasks import load_task
from luong.tasks.tsv import read_split
from luong.translation.translator import translate

SEARCHES = {"greedy": SearchOptions(), "beam 5": SearchOptions(beam=5)}

MEMORY_CHILD = """
import sys
status = lambda key: next(
    int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key)
)
from luong.model.seq2seq import Seq2Seq
from luong.config.search import SearchOptions
from luong.tasks.tsv import read_split
from luong.translation.translator import translate
sources = [s for s, _ in read_split(sys.argv[2]).pairs]
start = status("VmRSS:")
model = Seq2Seq.from_pretrained(sys.argv[1])
translate(model, sources, SearchOptions(beam=5), batch_size=1000)
print(start, status("VmHWM:"))
"""


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def race(
    variants: dict[str, Seq2Seq],
    jobs: list[tuple[str, str]],
    sources: list[str],
    batch_size: int,
    repeats: int,
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], list[str]]]:
    """The median wall time of every job (variant, search) and its outputs, the jobs'
    runs interleaved."""
    times: dict[tuple[str, str], list[float]] = {}
    outputs: dict[tuple[str, str], list[str]] = {}
    for model in variants.values():  # warm-up: oneDNN's kernels, the allocator
        translate(model, sources[:64], SearchOptions(beam=5), batch_size=batch_size)
    for _ in range(repeats):
        for name, search in jobs:
            model, options = variants[name], SEARCHES[search]
            seconds, out = timed(
                lambda m=model, o=options: translate(m, sources, o, batch_size=batch_size)
            )
            times.setdefault((name, search), []).append(seconds)
            outputs[name, search] = out  # type: ignore[assignment]
    return {key: statistics.median(values) for key, values in times.items()}, outputs


def speedups(rows: dict[str, dict[str, object]]) -> None:
    """Each row's speed against float32's with the same search (``x_float32``), in place."""
    for key, row in rows.items():
        base = rows[f"float32, {key.split(', ')[-1]}"]
        row["x_float32"] = round(float(base["seconds"]) / float(row["seconds"]), 2)  # type: ignore[arg-type]


def bench_dates(folder: Path, repeats: int) -> dict[str, object]:
    model = Seq2Seq.from_pretrained(folder)
    variants = {"float32": model, "int8": quantize(model)}
    pairs = load_task("dates", n_train=0, n_dev=0, n_test=10_000).test
    sources = [s for s, _ in pairs]
    jobs = [(name, search) for search in SEARCHES for name in variants]
    medians, outputs = race(variants, jobs, sources, 512, repeats)
    rows: dict[str, dict[str, object]] = {}
    for (name, search), seconds in medians.items():
        out = outputs[name, search]
        rows[f"{name}, {search}"] = {
            "seconds": round(seconds, 3),
            "sentences_per_s": round(len(sources) / seconds),
            "exact_match": round(
                sum(o == t for o, (_, t) in zip(out, pairs, strict=True)) / len(pairs), 4
            ),
        }
    speedups(rows)
    return {"sentences": len(sources), "rows": rows}


def bench_translation(folder: Path, data: Path, repeats: int) -> dict[str, object]:
    # As luong eval DIR --data FILE.tsv scores (evaluate_references): each source once, its
    # targets as its references.
    grouped = group_references(read_split(data).pairs)
    sources = [s for s, _ in grouped]
    model = Seq2Seq.from_pretrained(folder)
    refs = [[comparable(model.tgt_vocab, t) for t in targets] for _, targets in grouped]
    variants = {
        "float32": model,
        "int8": quantize(model),
        **{f"int8 {part} only": quantize(model, [part]) for part in INT8_PARTS},
    }
    jobs = [(name, search) for search in SEARCHES for name in ("float32", "int8")]
    jobs += [(f"int8 {part} only", "beam 5") for part in INT8_PARTS]
    medians, outputs = race(variants, jobs, sources, 1000, repeats)
    rows: dict[str, dict[str, object]] = {}
    for (name, search), seconds in medians.items():
        hyps = [model.tgt_vocab.normalize(h) for h in outputs[name, search]]
        rows[f"{name}, {search}"] = {
            "seconds": round(seconds, 3),
            "sentences_per_s": round(len(sources) / seconds, 1),
            "bleu": round(float(bleu_chrf(hyps, refs)["bleu"]), 2),
        }
    speedups(rows)
    with tempfile.TemporaryDirectory() as tmp:
        quantize_folder(folder, Path(tmp) / "int8")
        folders = {"float32": folder, "int8": Path(tmp) / "int8"}
        sizes = {name: (path / WEIGHTS).stat().st_size for name, path in folders.items()}
        memory = {name: peak_memory(path, data) for name, path in folders.items()}
    return {
        "sentences": len(sources),
        "rows": rows,
        "model_mb": {k: round(v / 1e6, 2) for k, v in sizes.items()},
        "memory_mb": memory,
    }


def peak_memory(folder: Path, data: Path) -> dict[str, float]:
    """A child's resident memory after its imports and its peak, in MB, loading the model
    folder ``folder`` (float32, or int8 as ``luong quantize`` wrote it) and decoding
    ``data``'s sources with beam 5."""
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(folder), str(data)],
        capture_output=True,
        text=True,
        check=True,
    )
    start, peak = (int(v) / 1024 for v in out.stdout.split()[-2:])
    return {"after_imports": round(start, 1), "peak": round(peak, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dates", type=Path, help="a dates model folder (luong train dates)")
    parser.add_argument("--translation", type=Path, help="a translation model folder")
    parser.add_argument("--data", type=Path, help="the translation's test pairs (TSV)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    if args.translation is not None and args.data is None:
        parser.error("--translation needs --data FILE.tsv")
    figures: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s) (OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}), load average "
        f"{os.getloadavg()[0]:.1f} at the start",
        "repeats": args.repeats,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if args.dates is not None:
        figures["dates"] = bench_dates(args.dates, args.repeats)
    if args.translation is not None:
        figures["translation"] = bench_translation(args.translation, args.data, args.repeats)
    figures["load_average_at_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(figures, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
