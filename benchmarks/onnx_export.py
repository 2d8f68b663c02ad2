"""ONNX export against float32 PyTorch: the same tokens, BLEU, speed and size, in one run;
with a model's lexical shortlist, each over the full vocabulary and over the shortlist.

    .venv/bin/python benchmarks/onnx_export.py MODEL --data ../shared/data/gettext-en-de/devtest.tsv
        [--threads 2] [--repeats 3] [--batch-size 512] [--beam 5] [--alpha 0]
        [--json benchmarks/onnx_export.json]

Exports MODEL (``luong.export.exporter.export_onnx``) into a temporary folder, then decodes
the sources of the TSV file (source TAB reference) with greedy search and beam ``--beam``
(length penalty ``--alpha``) through luong's own search in float32 PyTorch
(``luong.search.decode``) and through the export's runtime (``luong.export.runtime``, numpy
over onnxruntime), both with ``--threads`` threads, ``--repeats`` rounds, each round every
(search, decoder) once in turn, so that the machine's load falls on all alike. When MODEL has a
lexical shortlist (``luong shortlist``), each side decodes over the full vocabulary
(``--shortlist 0``) and over the shortlist (the folder's table whole), and the runtime also
over the full vocabulary of an export of the model without its shortlist (whose step graph
holds the output layer, as every export did before shortlists), so that four or five decoders
run. Prints, per search and decoder: sentences per second (all lines over the median wall
time; every decoder decodes one sentence first, outside the clock), x PyTorch full (x PyTorch
without a shortlist), the runtime over PyTorch on the same
vocabulary, its BLEU against the references (sacreBLEU, outputs and references normalised as
``luong eval`` does), the share of lines whose best output has the same tokens as PyTorch's
on the same vocabulary and as PyTorch full's, the mean number of candidate pieces per search
call, and the size of the model on disk (model.safetensors; encoder.onnx + step.onnx, and the
output layer's file where the step graph takes it as inputs); the load average (``uptime``)
before and after. Nothing is trained.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
from copy import deepcopy
from pathlib import Path

import onnxruntime
import torch

from luong.common.files import read_text_lines
from luong.common.folder_files import WEIGHTS
from luong.config.search import SearchOptions
from luong.data.vocab import one_line
from luong.evaluation.metrics import bleu_chrf
from luong.export import runtime
from luong.export.exporter import export_onnx
from luong.model.seq2seq import Seq2Seq
from luong.search import decode, hypothesis_text
from luong.search.text import SEARCH_ROWS


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def graph_bytes(folder: Path) -> int:
    """The weights of an export on disk: its graphs, and the output layer its step takes."""
    names = (runtime.ENCODER, runtime.STEP, runtime.OUTPUT_LAYER)
    return sum((folder / name).stat().st_size for name in names if (folder / name).is_file())


def candidates(onnx: runtime.OnnxTranslator, sources: list[str], beam: int, batch: int) -> float:
    """The mean number of candidate pieces of the runtime's search calls over its shortlist
    (the sources cut into calls as ``OnnxTranslator.decode`` cuts them)."""
    if onnx.shortlist is None:
        return float(len(onnx.tgt_vocab))
    todo = sorted((s for s in sources if s.strip()), key=len)
    per_call = min(batch, max(1, SEARCH_ROWS // beam))
    sizes = []
    for start in range(0, len(todo), per_call):
        ids = [onnx.src_vocab.encode(text) for text in todo[start : start + per_call]]
        sizes.append(len(onnx.columns(ids, onnx.shortlist[0].shape[1]).ids))
    return statistics.mean(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model folder or run folder")
    parser.add_argument("--data", type=Path, required=True, help="TSV: source TAB reference")
    parser.add_argument("--threads", type=int, default=2, help="threads of each side (2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--batch-size", type=int, default=512, help="sentences per search call")
    parser.add_argument("--beam", type=int, default=5, help="the beam search's size (5)")
    parser.add_argument("--alpha", type=float, default=0.0, help="the beam's length penalty (0)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    started = datetime.datetime.now(datetime.UTC)
    load_before = load_average()
    torch.set_num_threads(args.threads)
    pairs = [line.split("\t") for line in read_text_lines(args.data) if line.strip()]
    sources, references = [p[0] for p in pairs], [p[1] for p in pairs]
    model = Seq2Seq.from_pretrained(args.model).eval()
    listed = model.shortlist is not None
    temporary = Path(tempfile.mkdtemp(prefix="luong-onnx-"))
    start = time.perf_counter()
    folder = export_onnx(model, temporary / "export")
    export_seconds = time.perf_counter() - start
    exports = {"": runtime.load(folder, threads=args.threads)}
    if listed:  # the export as it was before shortlists: the output layer inside the graph
        alone = deepcopy(model)
        alone.shortlist = None
        exports[" (export without it)"] = runtime.load(
            export_onnx(alone, temporary / "alone"), threads=args.threads
        )
    vocab = model.tgt_vocab
    refs = [[vocab.normalize(one_line(ref))] for ref in references]

    # (side, vocabulary, export): the shortlist K (0: full; None: the table whole)
    decoders: dict[str, tuple[str, int | None, str]] = {}
    for vocabulary, k in (("full", 0), *((("shortlist", None),) if listed else ())):
        decoders[f"pytorch {vocabulary}" if listed else "pytorch"] = ("pytorch", k, "")
        decoders[f"onnxruntime {vocabulary}" if listed else "onnxruntime"] = ("onnxruntime", k, "")
    if listed:
        decoders["onnxruntime full (export without it)"] = (
            "onnxruntime",
            0,
            " (export without it)",
        )
    searches = {"greedy": (1, 0.0), f"beam {args.beam}": (args.beam, args.alpha)}
    for side, k, export in decoders.values():  # warm: the first calls' allocations
        if side == "pytorch":
            decode(model, sources[:1], SearchOptions(shortlist=k))
        else:
            exports[export].decode(sources[:1], runtime.SearchOptions(shortlist=k))
    times: dict[tuple[str, str], list[float]] = {(d, n): [] for n in searches for d in decoders}
    tokens: dict[tuple[str, str], list[list[int]]] = {}
    texts: dict[tuple[str, str], list[str]] = {}
    for _ in range(args.repeats):
        for name, (beam, alpha) in searches.items():
            for decoder, (side, k, export) in decoders.items():
                if side == "pytorch":
                    options = SearchOptions(beam=beam, alpha=alpha, shortlist=k)
                    start = time.perf_counter()
                    lists = decode(model, sources, options, batch_size=args.batch_size)
                    times[decoder, name].append(time.perf_counter() - start)
                    tokens[decoder, name] = [hyps[0].tokens for hyps in lists]
                    texts[decoder, name] = [hypothesis_text(model, hyps[0]) for hyps in lists]
                else:
                    given = runtime.SearchOptions(beam=beam, alpha=alpha, shortlist=k)
                    start = time.perf_counter()
                    found = exports[export].decode(sources, given, args.batch_size)
                    times[decoder, name].append(time.perf_counter() - start)
                    tokens[decoder, name] = [hyps[0].tokens for hyps in found]
                    texts[decoder, name] = [vocab.decode(hyps[0].tokens) for hyps in found]
    load_after = load_average()

    def same(a: list[list[int]], b: list[list[int]]) -> float:
        return sum(x == y for x, y in zip(a, b, strict=True)) / len(sources)

    full = "pytorch full" if listed else "pytorch"
    rows = []
    for name, (beam, _) in searches.items():
        speed = {d: len(sources) / statistics.median(times[d, name]) for d in decoders}
        for decoder, (side, k, export) in decoders.items():
            twin = decoder.replace("onnxruntime", "pytorch").replace(" (export without it)", "")
            hyps = [vocab.normalize(text) for text in texts[decoder, name]]
            onnx = exports[export]
            rows.append(
                {
                    "search": name,
                    "decoder": decoder,
                    "seconds": statistics.median(times[decoder, name]),
                    "rounds": times[decoder, name],
                    "sentences_per_second": speed[decoder],
                    "x_pytorch_full": speed[decoder] / speed[full],
                    "x_pytorch_same_vocabulary": speed[decoder] / speed[twin],
                    "bleu": bleu_chrf(hyps, refs)["bleu"],
                    "same_tokens_as_pytorch": same(tokens[decoder, name], tokens[twin, name]),
                    "same_tokens_as_pytorch_full": same(tokens[decoder, name], tokens[full, name]),
                    "candidates": (
                        float(len(vocab))
                        if k == 0
                        else candidates(onnx, sources, beam, args.batch_size)
                    ),
                    "bytes": (
                        (args.model / WEIGHTS).stat().st_size
                        if side == "pytorch"
                        else graph_bytes(onnx.folder)
                    ),
                }
            )
    print(
        f"{args.model}, {len(sources)} lines of {args.data}; torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, {platform.machine()}, {args.threads} "
        f"thread(s) each, batch {args.batch_size}, beam alpha {args.alpha}, median of "
        f"{args.repeats}; export {export_seconds:.1f} s; {started:%Y-%m-%d %H:%M} UTC, load "
        f"average {load_before} before, {load_after} after"
    )
    print()
    print(
        "| search | decoder | sentences/s | x PyTorch full | x PyTorch, same vocabulary | "
        "BLEU | same tokens as PyTorch, same vocabulary | same output as PyTorch full | "
        "candidates a call | model on disk |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['search']} | {row['decoder']} | {row['sentences_per_second']:.0f} | "
            f"{row['x_pytorch_full']:.2f} | {row['x_pytorch_same_vocabulary']:.2f} | "
            f"{row['bleu']:.2f} | {100 * row['same_tokens_as_pytorch']:.1f} % | "
            f"{100 * row['same_tokens_as_pytorch_full']:.1f} % | {row['candidates']:,.0f} | "
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
            "beam": args.beam,
            "alpha": args.alpha,
            "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__,
            "machine": platform.machine(),
            "started_utc": f"{started:%Y-%m-%d %H:%M}",
            "load_average_before": load_before,
            "load_average_after": load_after,
            "export_seconds": export_seconds,
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
