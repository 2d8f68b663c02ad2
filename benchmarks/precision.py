"""A dates training step in float32 and under bf16 autocast, side by side in one run
(docs/performance.md, "Mixed precision"); with a trained model, its greedy decoding of the
10,000 dates test inputs in both too.

    python benchmarks/precision.py [--model runs/dates] [--steps 12] [--device cpu]

Two copies of one freshly initialised dates model (the demo's architecture: bidirectional
2 x 64 GRU encoder, 128-unit GRU decoder, dot score, input feeding, so the decoder trains
through the fused recurrence) take the same length-bucketed batches of 128, the float32 copy
and the bf16 copy alternating step by step (forward, backward, clipping, Adam, as the
trainer's step): the figures are medians of per-step times after warm-up, and the ratio the
median of the per-batch ratios. Decoding is the median of 3 runs of each precision, also
alternating.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

from luong import Seq2Seq, Seq2SeqConfig
from luong.devices import autocast, resolve_device
from luong.metrics import exact_match
from luong.search_options import SearchOptions
from luong.tasks import load_task
from luong.training.objective import loss_of
from luong.translator import translate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import _time, dates_batches, vocabularies  # noqa: E402

PRECISIONS = ("fp32", "bf16")


def step(model: Seq2Seq, optimizer: torch.optim.Optimizer, batch: object, precision: str) -> None:
    """One training step as ``Trainer._step`` takes it (one batch, clipping at 1.0)."""
    with autocast(precision, model.device):
        loss = loss_of(model, batch)  # type: ignore[arg-type]
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def bench_steps(steps: int, warmup: int, device: torch.device) -> dict[str, object]:
    src_vocab, tgt_vocab = vocabularies()
    batches = [b.to(device) for b in dates_batches(128, steps + warmup, src_vocab, tgt_vocab)]
    base = Seq2Seq(Seq2SeqConfig(), src_vocab, tgt_vocab, seed=0).to(device).train()
    models = {p: copy.deepcopy(base) for p in PRECISIONS}
    optimizers = {p: torch.optim.Adam(m.parameters(), lr=1e-3) for p, m in models.items()}
    times: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    for i, batch in enumerate(batches):
        for p in PRECISIONS:
            seconds = _time(
                lambda p=p, batch=batch: step(models[p], optimizers[p], batch, p), device.type
            )
            if i >= warmup:
                times[p].append(seconds)
    ratios = [b / f for f, b in zip(times["fp32"], times["bf16"], strict=True)]
    return {
        **{f"{p}_step_ms": round(1000 * statistics.median(times[p]), 1) for p in PRECISIONS},
        "bf16_over_fp32": round(statistics.median(ratios), 2),
        "steps": steps,
    }


def bench_decoding(model_dir: Path, device: torch.device) -> dict[str, object]:
    model = Seq2Seq.from_pretrained(model_dir, device=device)
    pairs = load_task("dates", n_train=0, n_dev=0).test
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    seconds: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    outputs: dict[str, list[str]] = {}
    for _ in range(3):
        for p in PRECISIONS:
            start = time.perf_counter()
            with autocast(p, device):
                outputs[p] = translate(model, sources, SearchOptions(), batch_size=512)
            seconds[p].append(time.perf_counter() - start)
    result: dict[str, object] = {}
    for p in PRECISIONS:
        result[f"{p}_greedy_s"] = round(statistics.median(seconds[p]), 2)
        result[f"{p}_exact_match"] = exact_match(outputs[p], targets)
    same = sum(a == b for a, b in zip(outputs["fp32"], outputs["bf16"], strict=True))
    result["same_outputs"] = same / len(sources)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("runs/dates"))
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = resolve_device(args.device, "--device")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {device}")
    print(bench_steps(args.steps, args.warmup, device))
    if (args.model / "model.safetensors").is_file():
        print(bench_decoding(args.model, device))


if __name__ == "__main__":
    main()
