"""Lexical shortlists against the full vocabulary, in one run (issue 42): greedy and beam
search of a test set, float32 and int8, over the full vocabulary and over the folder's
shortlist.

    OMP_NUM_THREADS=1 python benchmarks/shortlist.py MODEL --data DEVTEST.tsv
        [--shortlist 100 --shortlist 30] [--threads 1] [--repeats 3] [--batch-size 512]
        [--before /path/to/older/src] [--json docs/shortlist.json]

MODEL must hold a shortlist (``luong shortlist MODEL --train TRAIN.tsv``); its int8 form is
made with ``luong quantize`` into a temporary folder first (it carries the shortlist). Every
(search, decoder) decodes every source of the TSV file (source TAB reference) once per
round, the rounds in turn so that the machine's load falls on all alike, in this one process
(the models loaded once; one sentence decoded first, outside the clock). Greedy search, and
beam search with ``--beam`` and the model's own length penalty (``--alpha``, the
translation preset's test_alpha). Decoders: ``float32 full`` (``--shortlist 0``), ``float32
shortlist K`` and ``int8 shortlist K`` for each ``--shortlist`` K (the folder's table whole
when none is given), and ``int8 full``. Prints one table: sentences per second (all lines
over the median wall time), x float32 full, BLEU (sacreBLEU, as ``luong eval`` normalises),
the share of lines whose output equals float32 full's, and the mean number of candidate
pieces per search call (the output layer's columns). The load average before and after is
printed with it: this machine is shared.

``--before SRC``: also decode with ``float32 full`` as the luong of another source tree
decodes (``SRC`` on ``PYTHONPATH``: a checkout from before the search's own savings), in a
process of its own each round (it times its decoding alone, as the others), interleaved with
the rest; and, as its control, with this tree's luong in a process of its own the same way
(``float32 full, own process``): a process decodes at another speed than this long-lived one,
so before and after compare between those two rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import luong.model.ensemble as ensemble  # the module: an older luong (--before) lacks its names
from luong.config.search import SearchOptions
from luong.data.vocab import one_line
from luong.evaluation.metrics import bleu_chrf
from luong.model.seq2seq import Seq2Seq
from luong.translation.translator import translate


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def candidates(model: Seq2Seq, sources: list[str], k: int | None, batch: int) -> float:
    """The mean number of candidate pieces of the search calls (sources sorted by length, as
    ``decode_batches`` cuts them)."""
    if k == 0:
        return float(len(model.tgt_vocab))
    ordered = sorted(sources, key=len)
    sizes = []
    for start in range(0, len(ordered), batch):
        columns = ensemble.shortlist_columns(model, ordered[start : start + batch], k)
        sizes.append(len(model.tgt_vocab) if columns is None else len(columns.ids))
    return statistics.mean(sizes)


def worker(args: argparse.Namespace) -> None:
    """``--before``'s decoding, in a process whose luong is the older source tree: print a
    JSON line of its seconds and outputs."""
    torch.set_num_threads(args.threads)
    model = Seq2Seq.from_pretrained(args.model)
    sources = [line.split("\t")[0] for line in args.data.read_text("utf-8").splitlines()]
    given = {"beam": args.beam, "alpha": args.alpha if args.beam > 1 else 0.0}
    if "shortlist" in {f.name for f in dataclasses.fields(SearchOptions)}:  # not an older one's
        given["shortlist"] = 0
    options = SearchOptions(**given)
    translate(model, sources[:1], options)
    start = time.perf_counter()
    outputs = translate(model, sources, options, batch_size=args.batch_size)
    print(json.dumps({"seconds": time.perf_counter() - start, "outputs": outputs}))


def before(args: argparse.Namespace, beam: int, source: str) -> tuple[float, list[str]]:
    """One decoding in a process whose luong is ``source``'s: its seconds and outputs."""
    command = [sys.executable, __file__, str(args.model), "--data", str(args.data), "--worker"]
    command += ["--beam", str(beam), "--alpha", str(args.alpha), "--threads", str(args.threads)]
    command += ["--batch-size", str(args.batch_size)]
    env = {**os.environ, "PYTHONPATH": source}
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    found = json.loads(done.stdout.splitlines()[-1])
    return found["seconds"], found["outputs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model folder holding a shortlist")
    parser.add_argument("--data", type=Path, required=True, help="TSV: source TAB reference")
    parser.add_argument("--shortlist", type=int, action="append", help="K (repeatable)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (median)")
    parser.add_argument("--batch-size", type=int, default=512, help="sentences per search call")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--before", type=Path, help="an older luong's source tree (src/)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    torch.set_num_threads(args.threads)
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average()

    lines = args.data.read_text(encoding="utf-8").splitlines()
    pairs = [line.split("\t") for line in lines if line.strip()]
    sources = [pair[0] for pair in pairs]
    floats = Seq2Seq.from_pretrained(args.model)
    if floats.shortlist is None:
        parser.error(f"{args.model} holds no shortlist: luong shortlist {args.model} first")
    int8_folder = Path(tempfile.mkdtemp(prefix="luong-shortlist-")) / "int8"
    command = [
        sys.executable,
        "-m",
        "luong",
        "quantize",
        str(args.model),
        "--out",
        str(int8_folder),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    int8 = Seq2Seq.from_pretrained(int8_folder)
    vocab = floats.tgt_vocab
    refs = [[vocab.normalize(one_line(pair[1]))] for pair in pairs]

    ks: list[int | None] = list(args.shortlist) if args.shortlist else [None]
    shown = {k: str(floats.shortlist.k if k is None else k) for k in ks}
    decoders: dict[str, tuple[Seq2Seq, int | None]] = {"float32 full": (floats, 0)}
    for k in ks:
        decoders[f"float32 shortlist {shown[k]}"] = (floats, k)
    decoders["int8 full"] = (int8, 0)
    for k in ks:
        decoders[f"int8 shortlist {shown[k]}"] = (int8, k)
    searches = {
        "greedy": SearchOptions(),
        f"beam {args.beam}": SearchOptions(beam=args.beam, alpha=args.alpha),
    }
    beams = {"greedy": 1, f"beam {args.beam}": args.beam}
    own = str(Path(__file__).resolve().parents[1] / "src")
    processes = {"float32 full, before": str(args.before), "float32 full, own process": own}
    names = (list(processes) if args.before else []) + list(decoders)
    for options in searches.values():  # warm: the first call's allocations
        for model, k in decoders.values():
            translate(model, sources[:1], SearchOptions(**{**options.to_json(), "shortlist": k}))
    seconds: dict[tuple[str, str], list[float]] = {(s, d): [] for s in searches for d in names}
    outputs: dict[tuple[str, str], list[str]] = {}
    for _ in range(args.repeats):
        for search, options in searches.items():
            for name, source in processes.items() if args.before else ():
                took, outputs[search, name] = before(args, beams[search], source)
                seconds[search, name].append(took)
            for decoder, (model, k) in decoders.items():
                given = SearchOptions(**{**options.to_json(), "shortlist": k})
                start = time.perf_counter()
                outputs[search, decoder] = translate(
                    model, sources, given, batch_size=args.batch_size
                )
                seconds[search, decoder].append(time.perf_counter() - start)
    load_after = load_average()

    rows = []
    for search in searches:
        reference = outputs[search, "float32 full"]
        for decoder in names:
            model, k = decoders.get(decoder, (floats, 0))
            median = statistics.median(seconds[search, decoder])
            found = outputs[search, decoder]
            rows.append(
                {
                    "search": search,
                    "decoder": decoder,
                    "sentences_per_second": len(pairs) / median,
                    "seconds": median,
                    "rounds": seconds[search, decoder],
                    "bleu": bleu_chrf([vocab.normalize(o) for o in found], refs)["bleu"],
                    "same_as_full": sum(a == b for a, b in zip(found, reference, strict=True))
                    / len(pairs),
                    "candidates": candidates(model, sources, k, args.batch_size),
                }
            )
    print(
        f"{args.model}, {len(pairs)} lines of {args.data}; torch {torch.__version__}, "
        f"{platform.machine()}, {args.threads} thread(s), batch {args.batch_size}, median of "
        f"{args.repeats}; {started}, load average {load_before} before, {load_after} after"
    )
    print()
    print("| search | decoder | sentences/s | x float32 full | BLEU | same output as full "
          "| candidates |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        base = next(
            r for r in rows if r["search"] == row["search"] and r["decoder"] == "float32 full"
        )
        print(
            f"| {row['search']} | {row['decoder']} | {row['sentences_per_second']:.1f} | "
            f"{row['sentences_per_second'] / base['sentences_per_second']:.2f} | "
            f"{row['bleu']:.2f} | {100 * row['same_as_full']:.1f} % | "
            f"{row['candidates']:.0f} |"
        )
    if args.json is not None:
        record = {
            "command": " ".join(["python", "benchmarks/shortlist.py", *sys.argv[1:]]),
            "date": started,
            "load_average_before": load_before,
            "load_average_after": load_after,
            "model": str(args.model),
            "data": str(args.data),
            "lines": len(pairs),
            "threads": args.threads,
            "batch_size": args.batch_size,
            "repeats": args.repeats,
            "torch": torch.__version__,
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
