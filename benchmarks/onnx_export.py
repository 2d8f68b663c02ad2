"""ONNX export against float32 PyTorch: the same tokens, BLEU, speed and size, in one run.

    .venv/bin/python benchmarks/onnx_export.py MODEL --data ../shared/data/gettext-en-de/devtest.tsv
        [--threads 2] [--repeats 3] [--batch-size 512] [--json benchmarks/onnx_export.json]

Exports MODEL (``luong.export.exporter.export_onnx``) into a temporary folder, then decodes
the sources of the TSV file (source TAB reference) with greedy search and beam 5 through
luong's own search in float32 PyTorch (``luong.search.decode``) and through the export's
runtime (``luong.export.runtime``, numpy over onnxruntime), both with ``--threads`` threads,
``--repeats`` times interleaved so that the machine's load falls on both alike. Prints, per
search: the share of lines whose best output has the same tokens, each side's sentences per
second (all lines over the median wall time), its BLEU against the references (sacreBLEU,
outputs and references normalised as ``luong eval`` does), and the size of the model on
disk (model.safetensors; encoder.onnx + step.onnx). Nothing is trained.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import onnxruntime
import torch

from luong.export import runtime
from luong.export.exporter import export_onnx
from luong.files import read_text_lines
from luong.folder_files import WEIGHTS
from luong.metrics import bleu_chrf
from luong.model import Seq2Seq
from luong.search import decode, hypothesis_text
from luong.search_options import SearchOptions
from luong.vocab import one_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model folder or run folder")
    parser.add_argument("--data", type=Path, required=True, help="TSV: source TAB reference")
    parser.add_argument("--threads", type=int, default=2, help="threads of each side (2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--batch-size", type=int, default=512, help="sentences per search call")
    parser.add_argument("--beam", type=int, default=5, help="the beam search's size (5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    pairs = [line.split("\t") for line in read_text_lines(args.data) if line.strip()]
    sources, references = [p[0] for p in pairs], [p[1] for p in pairs]
    model = Seq2Seq.from_pretrained(args.model).eval()
    folder = Path(tempfile.mkdtemp(prefix="luong-onnx-")) / "export"
    start = time.perf_counter()
    export_onnx(model, folder)
    export_seconds = time.perf_counter() - start
    onnx = runtime.load(folder, threads=args.threads)
    vocab = model.tgt_vocab
    refs = [[vocab.normalize(one_line(ref))] for ref in references]

    searches = {"greedy": 1, f"beam {args.beam}": args.beam}
    sides = ("pytorch", "onnxruntime")
    times: dict[tuple[str, str], list[float]] = {(s, n): [] for n in searches for s in sides}
    tokens: dict[tuple[str, str], list[list[int]]] = {}
    texts: dict[tuple[str, str], list[str]] = {}
    for _ in range(args.repeats):
        for name, beam in searches.items():
            start = time.perf_counter()
            lists = decode(model, sources, SearchOptions(beam=beam), batch_size=args.batch_size)
            times["pytorch", name].append(time.perf_counter() - start)
            tokens["pytorch", name] = [hyps[0].tokens for hyps in lists]
            texts["pytorch", name] = [hypothesis_text(model, hyps[0]) for hyps in lists]
            start = time.perf_counter()
            found = onnx.decode(sources, runtime.SearchOptions(beam=beam), args.batch_size)
            times["onnxruntime", name].append(time.perf_counter() - start)
            tokens["onnxruntime", name] = [hyps[0].tokens for hyps in found]
            texts["onnxruntime", name] = [vocab.decode(hyps[0].tokens) for hyps in found]

    sizes = {
        "pytorch": (args.model / WEIGHTS).stat().st_size,
        "onnxruntime": sum((folder / f).stat().st_size for f in (runtime.ENCODER, runtime.STEP)),
    }
    rows = []
    for name in searches:
        same = sum(
            a == b
            for a, b in zip(tokens["pytorch", name], tokens["onnxruntime", name], strict=True)
        )
        for side in sides:
            hyps = [vocab.normalize(text) for text in texts[side, name]]
            rows.append(
                {
                    "search": name,
                    "side": side,
                    "seconds": statistics.median(times[side, name]),
                    "sentences_per_second": len(sources) / statistics.median(times[side, name]),
                    "bleu": bleu_chrf(hyps, refs)["bleu"],
                    "same_tokens": same / len(sources),
                    "bytes": sizes[side],
                }
            )
    print(
        f"{args.model}, {len(sources)} lines of {args.data}; torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, {platform.machine()}, {args.threads} "
        f"thread(s) each, batch {args.batch_size}, median of {args.repeats}; export "
        f"{export_seconds:.1f} s"
    )
    print()
    print("| search | decoder | sentences/s | BLEU | same tokens as PyTorch | model on disk |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['search']} | {row['side']} | {row['sentences_per_second']:.1f} | "
            f"{row['bleu']:.2f} | {100 * row['same_tokens']:.1f} % | "
            f"{row['bytes'] / 1e6:.1f} MB |"
        )
    if args.json is not None:
        record = {
            "model": str(args.model),
            "data": str(args.data),
            "lines": len(sources),
            "threads": args.threads,
            "batch_size": args.batch_size,
            "repeats": args.repeats,
            "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__,
            "export_seconds": export_seconds,
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
