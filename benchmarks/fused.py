"""What the fused decoder recurrence (``luong.model.recurrence``) buys a training step, measured in
one process so that the machine's drifting speed hits both sides alike:

    .venv/bin/python benchmarks/fused.py              # shapes a, b, c of bench.py, 30 batches
    .venv/bin/python benchmarks/fused.py --configs b --batches 60

Two copies of the same model (same seed) train on the same batches, each with its own Adam:
one through the fused recurrence, one through the decoder's step-by-step path (what autograd
records; ``Decoder.fused`` switched off for it), in alternating order from batch to batch. A
step is forward, backward, gradient clipping and the optimizer, as in ``bench.py``. Printed:
the median step of each, and the median and quartiles of the per-batch ratios (the batches
differ in size, so each ratio compares like with like).
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

import torch
from bench import CONFIGS, dates_batches, train_step, vocabularies

from luong import Seq2Seq
from luong.data.batching import Batch
from luong.model.decoder import Decoder

WARMUP = 3


def step_seconds(model: Seq2Seq, optimizer: torch.optim.Optimizer, batch: Batch) -> float:
    start = time.perf_counter()
    train_step(model, optimizer, batch)
    return time.perf_counter() - start


def compare(key: str, count: int) -> str:
    name, cfg, batch_size = CONFIGS[key]
    src_vocab, tgt_vocab = vocabularies()
    batches = dates_batches(batch_size, count + WARMUP, src_vocab, tgt_vocab)
    models = {side: Seq2Seq(cfg, src_vocab, tgt_vocab, seed=0) for side in ("fused", "steps")}
    if not models["fused"].decoder.fused:
        raise ValueError(f"config {key}: its decoder does not train through the fused recurrence")
    optimizers = {side: torch.optim.Adam(m.parameters(), lr=1e-3) for side, m in models.items()}
    times: dict[str, list[float]] = {"fused": [], "steps": []}
    for i, batch in enumerate(batches):
        for side in ("fused", "steps") if i % 2 else ("steps", "fused"):
            if side == "steps":
                with mock.patch.object(Decoder, "fused", False):
                    seconds = step_seconds(models[side], optimizers[side], batch)
            else:
                seconds = step_seconds(models[side], optimizers[side], batch)
            if i >= WARMUP:
                times[side].append(seconds)
    ratios = [s / f for f, s in zip(times["fused"], times["steps"], strict=True)]
    low, _, high = statistics.quantiles(ratios, n=4)
    return (
        f"({key}) {name}, batch {batch_size}: fused {1e3 * statistics.median(times['fused']):.1f}"
        f" ms, step by step {1e3 * statistics.median(times['steps']):.1f} ms a step; per batch"
        f" {statistics.median(ratios):.2f}x faster (quartiles {low:.2f}-{high:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="a,b,c", help="shapes of bench.py, comma-separated")
    parser.add_argument("--batches", type=int, default=30)
    args = parser.parse_args()
    keys = args.configs.split(",")
    unknown = [key for key in keys if key not in CONFIGS]
    if unknown or args.batches < 4:
        parser.error(f"expected shapes among {', '.join(CONFIGS)} and --batches >= 4")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for key in keys:
        print(compare(key, args.batches))


if __name__ == "__main__":
    main()
