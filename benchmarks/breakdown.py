"""Where a training step's time goes, for the figures in docs/performance.md.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/breakdown.py [--config b] [--steps 20]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/breakdown.py --greedy runs/dates

For one of the shapes of ``bench.py`` (a, b, c, d, or ``translation``: the translation preset
on its synthetic 2,048-token batches), on one thread unless told otherwise:

1. the float32 matmul rate at the decoder's per-step shapes, against the 2048^3 peak;
2. the encoder's forward and backward against the whole step's (medians over the batches);
3. the operators with the most self time over 5 steps, from ``torch.profiler``.

With ``--greedy MODEL``: the operators of greedy decoding 2,048 dates test inputs at batch 512
with a trained model (``make demo`` writes ``runs/dates``), and the encoder's share.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from bench import CONFIGS, dates_batches, matmul_peak, translation_batches, vocabularies
from torch.profiler import ProfilerActivity, profile

from luong import Seq2Seq
from luong.tasks import load_task, translation
from luong.training.objective import loss_of
from luong.translation.translator import translate


def matmul_rate(m: int, k: int, n: int, repeats: int = 200) -> float:
    """GFLOP/s of an [m, k] x [k, n] product, median of ``repeats``."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(20):
        a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * m * k * n / statistics.median(times) / 1e9


def greedy_breakdown(model_dir: str) -> None:
    model = Seq2Seq.from_pretrained(model_dir)
    sources = [s for s, _ in load_task("dates", n_train=0, n_dev=0).test][:2048]
    translate(model, sources, batch_size=512)  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        translate(model, sources, batch_size=512)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    encoder = sum(e.cpu_time_total for e in events if e.key in ("aten::gru", "aten::lstm"))
    print(
        f"greedy, 2,048 dates at batch 512: the encoder's RNN is {encoder / total:.0%} of the time"
    )
    print(events.table(sort_by="self_cpu_time_total", row_limit=12))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=[*sorted(CONFIGS), "translation"], default="b")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--greedy", metavar="MODEL", help="profile greedy decoding instead")
    args = parser.parse_args()
    if args.greedy:
        greedy_breakdown(args.greedy)
        return
    if args.config == "translation":
        cfg = translation.MODEL_CONFIG
        tokens = translation.TRAIN_CONFIG.batch_tokens
        name = f"translation preset, {tokens}-token batches"
        src_vocab, batches = translation_batches(args.steps, tokens)
        tgt_vocab = src_vocab
        batch_size = round(statistics.mean(int(b.src.shape[0]) for b in batches))
    else:
        name, cfg, batch_size = CONFIGS[args.config]
        src_vocab, tgt_vocab = vocabularies()
        batches = dates_batches(batch_size, args.steps, src_vocab, tgt_vocab)
    print(f"({args.config}) {name}, batch {batch_size}, {torch.get_num_threads()} thread(s)")

    peak = matmul_peak()
    gates = 4 if cfg.cell == "lstm" else 3
    d, e = cfg.dec_hidden, cfg.emb_dim
    print(f"matmul peak (2048^3): {peak:.1f} GFLOP/s")
    for m, k, n, what in [
        (batch_size, d, gates * d, "recurrent gates h W_hh^T"),
        (batch_size, d, gates * d, "input feed's gates"),
        (batch_size, cfg.key_dim + d, d, "W_c [c ; h]"),
        (batch_size, e, gates * d, "embedding's gates"),
    ]:
        rate = matmul_rate(m, k, n)
        print(f"  [{m}, {k}] x [{k}, {n}] {what:<26} {rate:6.1f} GFLOP/s ({rate / peak:.0%})")

    model = Seq2Seq(cfg, src_vocab, tgt_vocab, seed=0)
    encoder, whole = [], []
    for batch in batches:
        start = time.perf_counter()
        keys, final = model.encoder(batch.src, batch.src_lengths)
        (keys.sum() + final[0].sum()).backward()
        middle = time.perf_counter()
        loss_of(model, batch).backward()
        encoder.append(middle - start)
        whole.append(time.perf_counter() - middle)
    enc, all_ = statistics.median(encoder), statistics.median(whole)
    print(f"encoder forward + backward {1e3 * enc:.1f} ms of the step's {1e3 * all_:.1f} ms")
    print(f"  ({enc / all_:.0%}; the step's forward + backward, without the optimizer)")

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches[:5]:
            loss_of(model, batch).backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
