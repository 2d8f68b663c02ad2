"""Decoding in each precision on the CPU, side by side in one run: float32, bf16 (the model's
products in bfloat16, ``--precision bf16``) and int8 (``luong quantize``'s weights through
oneDNN's VNNI kernel), greedy and beam 5, with where a beam-5 decoding's time goes in each
(docs/performance.md, "Mixed precision").

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/precision.py --model runs/de-fp32 \\
        --data ../shared/data/gettext-en-de/devtest.tsv [--repeats 3] [--out docs/precision.json]

The model folder is a float one (the translation preset's, trained in fp32 or bf16: a
folder's weights are float32 either way). Its sources are decoded as ``luong eval DIR --data
FILE.tsv`` decodes them (each source once, its targets as its references, batches of 1,000),
every variant's runs interleaved so that the machine's state falls on all alike, each time
the median of ``--repeats``. BLEU as ``luong eval`` computes it. ``x_fp32``: a row's speed
over float32's with the same search.

The roofline of each precision's beam-5 decoding of the first 200 sources: the shares of
its wall time in matrix products, in other kernels and in Python and the framework
(``bench.roofline``). The matmul peaks of ``make bench`` (``bench.peaks``) are measured in
the same run, on one thread.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from luong.config.search import SearchOptions
from luong.evaluation.evaluate import comparable, group_references
from luong.evaluation.metrics import bleu_chrf
from luong.model.quantize import quantize
from luong.model.seq2seq import Seq2Seq
from luong.tasks.tsv import read_split
from luong.translation.translator import Translator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import peaks, roofline  # noqa: E402

SEARCHES = {"greedy": SearchOptions(), "beam 5": SearchOptions(beam=5)}
BATCH = 1000  # luong eval's batch


def variants(folder: Path) -> dict[str, Translator]:
    """The three ways to decode one float model folder."""
    model = Seq2Seq.from_pretrained(folder)
    return {
        "fp32": Translator(model, "fp32"),
        "bf16": Translator(model, "bf16"),
        "int8": Translator(quantize(model), "fp32"),
    }


def race(
    translators: dict[str, Translator], sources: list[str], repeats: int
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], list[str]]]:
    """The median wall time of every (precision, search) and its outputs, the runs
    interleaved."""
    for translator in translators.values():  # warm-up: oneDNN's kernels, the allocator
        translator.translate(sources[:64], SEARCHES["beam 5"], batch_size=BATCH)
    times: dict[tuple[str, str], list[float]] = {}
    outputs: dict[tuple[str, str], list[str]] = {}
    for _ in range(repeats):
        for search, options in SEARCHES.items():
            for name, translator in translators.items():
                start = time.perf_counter()
                out = translator.translate(sources, options, batch_size=BATCH)
                times.setdefault((name, search), []).append(time.perf_counter() - start)
                outputs[name, search] = out
    return {key: statistics.median(values) for key, values in times.items()}, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a float model folder")
    parser.add_argument("--data", type=Path, required=True, help="a TSV of pairs (devtest)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    grouped = group_references(read_split(args.data).pairs)
    sources = [s for s, _ in grouped]
    translators = variants(args.model)
    vocab = translators["fp32"].tgt_vocab
    refs = [[comparable(vocab, t) for t in targets] for _, targets in grouped]
    peak = peaks((1,))
    medians, outputs = race(translators, sources, args.repeats)
    rows: dict[str, dict[str, object]] = {}
    for (name, search), seconds in medians.items():
        hyps = [vocab.normalize(h) for h in outputs[name, search]]
        rows[f"{name}, {search}"] = {
            "seconds": round(seconds, 2),
            "sentences_per_s": round(len(sources) / seconds, 1),
            "bleu": round(float(bleu_chrf(hyps, refs)["bleu"]), 2),
            "x_fp32": round(medians["fp32", search] / seconds, 2),
        }
    beam = SEARCHES["beam 5"]
    rooflines = {
        name: roofline(
            lambda t=translator: t.translate(sources[:200], beam, batch_size=BATCH), calls=1
        )
        for name, translator in translators.items()
    }
    result = {
        "machine": {"threads": torch.get_num_threads(), "platform": platform.platform()},
        "model": str(args.model),
        "data": args.data.name,
        "sentences": len(sources),
        "peaks_one_thread": {p: rates[1] for p, rates in peak.items()},
        "rows": rows,
        "beam5_roofline": rooflines,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
