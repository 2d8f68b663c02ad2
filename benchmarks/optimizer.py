"""Adam as one fused kernel (``torch.optim.Adam(fused=True)``, what ``luong train`` uses on a
CPU or CUDA) against PyTorch's default loop over the weights, one thread, side by side:

- the optimizer's step alone, on the weights of the translation and the general presets
  (random gradients, the same for both);
- the translation preset's whole training step (``benchmarks/bench.py``'s synthetic batches
  of its shape: forward with label smoothing, backward, clipping, Adam) in float32 and in
  bf16, the four variants alternating batch by batch, the batches stepped through twice and
  the second pass timed (as ``bench.py --precisions``: oneDNN compiles a kernel per shape the
  first time).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/optimizer.py --out docs/optimizer.json
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from luong import Seq2Seq, Vocab
from luong.common.devices import keep_compiled_kernels, reuse_freed_memory
from luong.config.presets import GENERAL, TRANSLATION, Preset
from luong.data.batching import Batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import _time, precision_step, translation_batches  # noqa: E402

KINDS = {"loop": {}, "fused": {"fused": True}}


def preset_model(preset: Preset) -> Seq2Seq:
    """The preset's model over a vocabulary of its size (the symbols do not matter here)."""
    size = preset.vocab.vocab_size
    words = [f"w{i}" for i in range(size - len(Vocab.SPECIALS))]
    vocab = Vocab.build([" ".join(words)], tokens="space")
    return Seq2Seq(preset.model, vocab, vocab, seed=0)


def adam_alone(preset: Preset, repeats: int) -> dict[str, object]:
    """Median milliseconds of one Adam step on the preset's weights, per kind, interleaved."""
    model = preset_model(preset)
    weights = {
        k: [torch.nn.Parameter(w.detach().clone()) for w in model.parameters()] for k in KINDS
    }
    generator = torch.Generator().manual_seed(0)
    grads = [torch.randn(w.shape, generator=generator) * 1e-3 for w in model.parameters()]
    optimizers = {}
    for kind, options in KINDS.items():
        for weight, grad in zip(weights[kind], grads, strict=True):
            weight.grad = grad.clone()
        optimizers[kind] = torch.optim.Adam(weights[kind], lr=1e-3, **options)
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    for _ in range(repeats):
        for kind, optimizer in optimizers.items():
            times[kind].append(_time(optimizer.step))
    drift = max(
        float((a - b).abs().max()) for a, b in zip(weights["loop"], weights["fused"], strict=True)
    )
    loop, fused = (statistics.median(times[k]) for k in KINDS)
    return {
        "parameters": sum(w.numel() for w in model.parameters()),
        "tensors": len(weights["loop"]),
        "loop_ms": round(1e3 * loop, 2),
        "fused_ms": round(1e3 * fused, 2),
        "fused_speed_over_loop": round(loop / fused, 2),
        "largest_weight_difference_after_all_steps": drift,
    }


def whole_steps(steps: int, warmup: int) -> dict[str, object]:
    """The translation preset's training step per precision and kind of Adam: the median of
    the second pass, and the per-batch ratios."""
    reuse_freed_memory()  # as the Trainer does
    keep_compiled_kernels()  # as the Trainer does
    model_cfg, train_cfg = TRANSLATION.model, TRANSLATION.train
    vocab, batches = translation_batches(steps + warmup, train_cfg.batch_tokens)
    base = Seq2Seq(model_cfg, vocab, vocab, seed=0).train()
    variants = [(p, k) for p in ("fp32", "bf16") for k in KINDS]
    models = {v: copy.deepcopy(base) for v in variants}
    optimizers = {
        v: torch.optim.Adam(m.parameters(), lr=1e-3, **KINDS[v[1]]) for v, m in models.items()
    }

    def step(variant: tuple[str, str], batch: Batch) -> None:
        precision_step(models[variant], optimizers[variant], batch, variant[0], train_cfg)

    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(2):  # the second pass is kept
        times = {v: [] for v in variants}
        for i, batch in enumerate(batches):
            for v in variants:
                seconds = _time(lambda v=v, batch=batch: step(v, batch))
                if i >= warmup:
                    times[v].append(seconds)
    tokens = [b.target_tokens for b in batches[warmup:]]

    def ratio(slow: tuple[str, str], fast: tuple[str, str]) -> float:
        return round(
            statistics.median(s / f for s, f in zip(times[slow], times[fast], strict=True)), 3
        )

    result: dict[str, object] = {
        f"{p}_{k}": {
            "step_ms": round(1e3 * statistics.median(times[(p, k)]), 2),
            "tokens_per_s": round(
                statistics.median(n / t for n, t in zip(tokens, times[(p, k)], strict=True))
            ),
        }
        for p, k in variants
    }
    result["fused_speed_over_loop_fp32"] = ratio(("fp32", "loop"), ("fp32", "fused"))
    result["fused_speed_over_loop_bf16"] = ratio(("bf16", "loop"), ("bf16", "fused"))
    result["bf16_speed_over_fp32_loop"] = ratio(("fp32", "loop"), ("bf16", "loop"))
    result["bf16_speed_over_fp32_fused"] = ratio(("fp32", "fused"), ("bf16", "fused"))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="timed batches (default 40)")
    parser.add_argument("--warmup", type=int, default=5, help="batches not timed (default 5)")
    parser.add_argument("--repeats", type=int, default=21, help="Adam steps alone (default 21)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    torch.manual_seed(0)
    started = time.perf_counter()
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(["python", "benchmarks/optimizer.py", *sys.argv[1:]]),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "adam_alone": {
            "translation": adam_alone(TRANSLATION, args.repeats),
            "general": adam_alone(GENERAL, args.repeats),
        },
        "translation_step": whole_steps(args.steps, args.warmup),
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
