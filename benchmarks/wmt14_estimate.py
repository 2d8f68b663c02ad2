"""How long the wmt14 preset's run should take: an ESTIMATE from counted FLOPs and an assumed
throughput, not a measurement (no GPU has run it yet; ``scripts/wmt14.md``).

    python benchmarks/wmt14_estimate.py [--peak-tflops 989] [--mfu 0.1 0.3 0.5] [--json]

The FLOPs of a training step are ``bench.model_flops`` (the matrix multiplies, forward and
backward = 3 x forward) for the preset's shape (``luong.config.presets.WMT14``) on one sentence pair
of the corpus's mean lengths, plus the local-p position predictor (eq. 9), which
``model_flops`` does not count; its global-attention terms over the S source positions stand
in for the window of 2D + 1 = 21 (S is about 27 here). Padding is not counted: the batches
are bucketed by length, and what padding costs is part of the MFU a GPU run measures.

The corpus: WMT'14 English-German as the paper counts it, 4.5 million pairs, 116 million
English and 110 million German words (section 4.1), so 25.8 and 24.4 words a sentence, each
side with its EOS; the 50-word filter drops a few percent of the pairs, not counted here.

The throughput: a GPU's dense bf16 peak (H100 and H200 SXM: 989 TFLOP/s) times an assumed
model-FLOPs utilisation. Batches of 128 sentences of a 1,000-wide recurrence are small
matrix multiplies done one time step after another, so the low assumption is the likely one;
``benchmarks/gpu.sh`` measures the real MFU of such steps on the device.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from luong.config.presets import WMT14
from luong.data.batching import Batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import model_flops  # noqa: E402

PAIRS = 4_500_000
SRC_WORDS = 116e6 / PAIRS  # English words a sentence (section 4.1)
TGT_WORDS = 110e6 / PAIRS  # German


def flops_per_pair(src_len: int, tgt_len: int) -> float:
    """Training FLOPs (forward and backward) of one pair whose source has ``src_len`` symbols
    and whose target has ``tgt_len`` predicted tokens, both EOS included."""
    cfg = WMT14.model
    src = torch.full((1, src_len), 5, dtype=torch.long)
    tgt = torch.full((1, tgt_len + 1), 5, dtype=torch.long)  # BOS, then the predicted tokens
    batch = Batch(src, torch.tensor([src_len]), tgt)
    flops = model_flops(cfg, batch, WMT14.vocab.vocab_size)
    d = cfg.dec_hidden
    return flops + 3 * tgt_len * (2 * d * d + 2 * d)  # local-p's W_p h and v_p . tanh(...)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak")
    parser.add_argument("--mfu", type=float, nargs="+", default=[0.1, 0.3, 0.5])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.peak_tflops <= 0 or any(not 0 < m <= 1 for m in args.mfu):
        parser.error("--peak-tflops: expected > 0; --mfu: expected numbers in (0, 1]")
    if any(g < 1 for g in args.gpus):
        parser.error("--gpus: expected counts >= 1")
    # The mean lengths sit between two integers: interpolate the (linear) count between them.
    src, tgt = SRC_WORDS + 1, TGT_WORDS + 1  # EOS
    low = flops_per_pair(int(src), int(tgt))
    high = flops_per_pair(int(src) + 1, int(tgt) + 1)
    per_pair = low + (high - low) * ((src % 1 + tgt % 1) / 2)
    epochs = WMT14.train.epochs
    total = per_pair * PAIRS * epochs
    tokens_per_epoch = PAIRS * (src + tgt)
    rows = []
    for gpus in args.gpus:
        for mfu in args.mfu:
            rate = args.peak_tflops * 1e12 * mfu * gpus
            rows.append(
                {
                    "gpus": gpus,
                    "mfu": mfu,
                    "hours": round(total / rate / 3600, 1),
                    "target_tokens_per_second": round(PAIRS * tgt * epochs / (total / rate)),
                }
            )
    result = {
        "estimate": True,
        "parameters": WMT14.model.parameter_count(WMT14.vocab.vocab_size, WMT14.vocab.vocab_size),
        "gflops_per_pair": round(per_pair / 1e9, 2),
        "gflops_per_target_token": round(per_pair / tgt / 1e9, 2),
        "tokens_per_epoch": round(tokens_per_epoch),
        "epochs": epochs,
        "total_exaflops": round(total / 1e18, 3),
        "peak_tflops": args.peak_tflops,
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"ESTIMATE (no GPU run yet): the wmt14 preset, {result['parameters']:,} parameters")
    print(
        f"{result['gflops_per_pair']} GFLOP per pair ({result['gflops_per_target_token']} per "
        f"target token, forward + backward), {PAIRS:,} pairs of {src:.1f} + {tgt:.1f} tokens "
        f"= {tokens_per_epoch / 1e6:.0f}M tokens an epoch, {epochs} epochs: "
        f"{result['total_exaflops']} EFLOP"
    )
    print(f"at an assumed MFU of a {args.peak_tflops:g} TFLOP/s (dense bf16) GPU:")
    for row in rows:
        print(
            f"  {row['gpus']} GPU{'s' * (row['gpus'] > 1)}, MFU {row['mfu']:.0%}: "
            f"{row['hours']} h ({row['target_tokens_per_second']:,} target tokens/s)"
        )


if __name__ == "__main__":
    main()
