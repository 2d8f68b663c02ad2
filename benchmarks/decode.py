"""Decoding speed: greedy and beam search on the 10,000 dates test inputs.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/decode.py runs/dates [--beam 5] [--repeats 3]

Loads a trained model folder (``make demo`` writes ``runs/dates``), decodes the dates test
sources (``load_task("dates", n_train=0, n_dev=0).test``) with ``luong.search.decode`` at
batch 512: greedy, beam search with the best output (n-best 1), and beam search with an
n-best list as long as the beam (which runs every beam: the greedy bound prunes only for
n-best 1). Prints sentences per second, exact match of the best outputs, and the beam /
greedy wall-time ratios (medians of the repeats, run interleaved). Nothing is trained.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

from luong.config.search import SearchOptions
from luong.model.seq2seq import Seq2Seq
from luong.search import Hypothesis, decode, hypothesis_text
from luong.tasks import load_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model folder, e.g. runs/dates")
    parser.add_argument("--beam", type=int, default=5, help="beam size (default 5)")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--n", type=int, default=10_000, help="test inputs (default 10000)")
    args = parser.parse_args()

    model = Seq2Seq.from_pretrained(args.model).eval()
    pairs = load_task("dates", n_train=0, n_dev=0, n_test=args.n).test
    sources = [source for source, _ in pairs]
    k = args.beam
    runs = {"greedy": (1, 1), f"beam {k}": (k, 1), f"beam {k}, {k}-best": (k, k)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    outputs: dict[str, list[list[Hypothesis]]] = {}
    decode(model, sources[: args.batch_size], SearchOptions(beam=k), batch_size=args.batch_size)
    for _ in range(args.repeats):  # interleaved, so load from other processes hits all alike
        for name, (beam, n_best) in runs.items():
            start = time.perf_counter()
            outputs[name] = decode(
                model, sources, SearchOptions(beam=beam, nbest=n_best), batch_size=args.batch_size
            )
            times[name].append(time.perf_counter() - start)
    print(
        f"torch {torch.__version__}, {platform.machine()}, {torch.get_num_threads()} thread(s) "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}), {len(sources)} "
        f"inputs, batch {args.batch_size}, median of {args.repeats}"
    )
    greedy = statistics.median(times["greedy"])
    for name, values in times.items():
        median = statistics.median(values)
        correct = sum(
            hypothesis_text(model, hyps[0]) == target
            for hyps, (_, target) in zip(outputs[name], pairs, strict=True)
        )
        print(
            f"{name:>14}: {median:6.2f} s  {len(sources) / median:6.0f} sentences/s  "
            f"{median / greedy:4.2f}x greedy  exact match {correct / len(pairs):.4f}  (runs: "
            + ", ".join(f"{v:.2f}" for v in values)
            + ")"
        )


if __name__ == "__main__":
    main()
