"""The benchmark suite (``make bench``): matmul peak, training throughput and model-FLOPs
utilisation against a straightforward reference, decoding speed, peak memory, and the step of
the translation preset (its 4,000-piece vocabulary makes the output layer and the loss a large
share of the step).

    python benchmarks/bench.py [--model runs/dates] [--out bench.json] [--quick] [--device cuda]
    python benchmarks/bench.py --precisions --out docs/bench_precisions.json   # the peaks and
        # the translation preset's step in fp32 and bf16 alone (CPU)

On a GPU (``--device cuda``, ``benchmarks/gpu.sh``) the same suite runs there: the matmul
peak is measured in float32 and in bfloat16 (MFU is against the float32 peak, the dtype the
steps run in), every timed call ends with a device synchronisation, and peak memory is the
device's.

Every figure is a median of timed steps after warm-up, measured in this one run, side by side
with the reference (``benchmarks/reference.py``), on the same machine and thread count. The
figures of the last committed ``docs/bench.json`` are printed next to the new ones.

Model FLOPs are counted analytically (``torch.utils.flop_counter`` does not see the fused RNN
kernels): the matrix multiplies an efficient implementation must do per training step,
forward and backward (3x the forward), the RNN cells included, key projections once per
sentence, the encoder over real tokens only, the decoder over every row of the batch for
the longest target.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from luong import Ensemble, Seq2Seq, Seq2SeqConfig, TrainConfig, Vocab
from luong.common.devices import autocast, computes_in, keep_compiled_kernels, reuse_freed_memory
from luong.config.search import SearchOptions
from luong.data.batching import Batch, ParallelData, bucketed_batches, encode_sources, token_batches
from luong.model.int8 import Int8Matrix, activation_levels
from luong.tasks import load_task, translation
from luong.training.objective import loss_of, make_optimizer
from luong.translation.translator import translate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference import ReferenceSeq2Seq  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# The four training shapes of issue 7.
CONFIGS: dict[str, tuple[str, Seq2SeqConfig, int]] = {
    "a": ("dates default (2x64 bi-GRU, GRU 128, dot, feed)", Seq2SeqConfig(), 128),
    "b": (
        "B128 H128 E64 GRU dot feed",
        Seq2SeqConfig(emb_dim=64, enc_hidden=64, enc_layers=1, dec_hidden=128),
        128,
    ),
    "c": (
        "B512 H256 E128 LSTM general feed",
        Seq2SeqConfig(
            cell="lstm",
            emb_dim=128,
            enc_hidden=128,
            enc_layers=1,
            dec_hidden=256,
            attention="general",
        ),
        512,
    ),
    "d": (
        "B512 H256 E128 LSTM general no feed",
        Seq2SeqConfig(
            cell="lstm",
            emb_dim=128,
            enc_hidden=128,
            enc_layers=1,
            dec_hidden=256,
            attention="general",
            input_feed=False,
        ),
        512,
    ),
}


def matmul_peak(
    n: int = 2048, repeats: int = 7, device: str = "cpu", dtype: torch.dtype = torch.float32
) -> float:
    """GFLOP/s of the best of several large matrix multiplies (float32 by default)."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    torch.mm(a, b)
    best = min(_time(lambda: torch.mm(a, b), device) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def int8_peak(n: int = 2048, repeats: int = 7) -> float:
    """GOP/s of the best of several large int8 products: int8 x int8 -> int32
    (``torch._int_mm``, oneDNN's VNNI kernel) on a CPU with VNNI; on one without, the kernel
    ``luong quantize``'s folders decode through (``Int8Matrix.linear``: oneDNN's u8 x s8
    product of 7-bit inputs, their quantization included), since ``torch._int_mm`` there
    falls back to a loop of about 1 GOP/s that is no one's peak."""
    if activation_levels() == 127:
        a = torch.randint(-127, 128, (n, n), dtype=torch.int8)
        b = torch.randint(-127, 128, (n, n), dtype=torch.int8)
        torch._int_mm(a, b)
        best = min(_time(lambda: torch._int_mm(a, b)) for _ in range(repeats))
    else:
        x = torch.rand(n, n) * 2 - 1
        matrix = Int8Matrix.quantize(torch.randn(n, n))
        matrix.linear(x)
        best = min(_time(lambda: matrix.linear(x)) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def peaks(threads: tuple[int, ...] = (1, 2)) -> dict[str, dict[int, float]]:
    """This machine's matmul peak in each precision (GFLOP/s; int8: GOP/s) on each thread
    count: float32 and bfloat16 ``torch.mm`` and int8 (``int8_peak``), 2048^3 (bfloat16
    512^3 on a CPU without its units), best of 7."""
    before = torch.get_num_threads()
    result: dict[str, dict[int, float]] = {"fp32": {}, "bf16": {}, "int8": {}}
    try:
        for count in threads:
            torch.set_num_threads(count)
            result["fp32"][count] = round(matmul_peak(), 1)
            # no bfloat16 units: emulated, some 10 times slower; a smaller product suffices
            units = computes_in("bf16", torch.device("cpu")) == "bf16"
            bf16 = matmul_peak(n=2048 if units else 512, dtype=torch.bfloat16)
            result["bf16"][count] = round(bf16, 1)
            result["int8"][count] = round(int8_peak(), 1)
    finally:
        torch.set_num_threads(before)
    return result


# What a profile's operators are, for a roofline's shares: the matrix products (the units a
# precision speeds up), and every other kernel (elementwise work, reductions, copies, index
# ops); the rest of the wall time is Python and the framework (autograd's engine, dispatch).
PRODUCTS = {
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_int_mm",
    "aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward", "onednn::qlinear_pointwise",
}  # fmt: skip


def roofline(fn: Callable[[], object], calls: int = 3) -> dict[str, float]:
    """Where ``calls`` calls of ``fn`` spend their wall time (torch.profiler, after one
    warm-up call): the shares in matrix products, in other kernels and in Python and the
    framework (the wall time no kernel accounts for)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        wall = time.perf_counter() - start
    products = kernels = 0.0
    for event in prof.key_averages():
        if event.key in PRODUCTS:
            products += event.self_cpu_time_total
        elif event.key.startswith(("aten::", "onednn::", "mkldnn::")):
            kernels += event.self_cpu_time_total
    products, kernels = products / 1e6, kernels / 1e6
    return {
        "products": round(products / wall, 3),
        "other_kernels": round(kernels / wall, 3),
        "python_and_framework": round(max(0.0, wall - products - kernels) / wall, 3),
        "ms_per_call": round(1e3 * wall / calls, 1),
    }


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _time(fn: Callable[[], object], device: str = "cpu") -> float:
    """Seconds ``fn`` takes, the device's queued work included."""
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def model_flops(cfg: Seq2SeqConfig, batch: Batch, tgt_vocab: int) -> float:
    """Matmul FLOPs of one training step (forward + backward = 3 x forward; the embeddings
    are lookups)."""
    gates = 4 if cfg.cell == "lstm" else 3
    dirs = 2 if cfg.bidirectional else 1
    H, d, E, K = cfg.enc_hidden, cfg.dec_hidden, cfg.emb_dim, cfg.key_dim
    B, T = batch.tgt.shape[0], batch.tgt.shape[1] - 1
    src_tokens = int(batch.src_lengths.sum())
    S = batch.src.shape[1]
    flops = 0.0
    for layer in range(cfg.enc_layers):  # packed: real source tokens only
        width = E if layer == 0 else dirs * H
        flops += src_tokens * dirs * 2 * (width + H) * gates * H
    flops += 2 * B * K * d * (cfg.dec_layers if cfg.bridge == "bridge" else 0)
    if cfg.bridge == "bridge" and cfg.cell == "lstm":
        flops += 2 * B * K * d * cfg.dec_layers
    steps = B * T  # the decoder runs every row to the longest target
    feed = d if cfg.input_feed else 0
    context_in = K if cfg.attention == "bahdanau" else 0
    flops += steps * 2 * (E + feed + context_in + d) * gates * d
    flops += steps * (cfg.dec_layers - 1) * 2 * (2 * d) * gates * d
    if cfg.attention in ("general", "concat", "bahdanau"):
        flops += src_tokens * 2 * K * d  # key projection, once per sentence
    if cfg.attention in ("concat", "bahdanau"):
        flops += steps * (2 * d * d + 2 * S * d)  # W_h h and v . tanh(...)
    else:
        flops += steps * 2 * S * d  # h . proj_s
    flops += steps * 2 * S * K  # the context read
    flops += steps * 2 * (K + d) * d  # W_c [c ; h]
    flops += output_layer_flops(cfg, batch, tgt_vocab)
    return 3 * flops


def output_layer_flops(cfg: Seq2SeqConfig, batch: Batch, tgt_vocab: int) -> float:
    """The output layer's forward FLOPs, W_o h~ for every decoder row and step (its share of
    ``model_flops`` is 3 times this over the step's)."""
    return 2 * cfg.dec_hidden * tgt_vocab * batch.tgt.shape[0] * (batch.tgt.shape[1] - 1)


def dates_batches(batch_size: int, count: int, src_vocab: Vocab, tgt_vocab: Vocab) -> list[Batch]:
    data = load_task("dates", n_train=batch_size * count, n_dev=0, n_test=0)
    parallel = ParallelData(data.train, src_vocab, tgt_vocab)
    order = bucketed_batches(parallel.src_lengths.tolist(), batch_size, random.Random(0))
    return [parallel.batch(i) for i in order if len(i) == batch_size][:count]


def vocabularies() -> tuple[Vocab, Vocab]:
    data = load_task("dates", n_train=5000, n_dev=0, n_test=0)
    return (
        Vocab.build((s for s, _ in data.train), lowercase=True),
        Vocab.build(t for _, t in data.train),
    )


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: Batch) -> None:
    """One timed training step: forward, backward, gradient clipping at 1.0, the optimizer."""
    loss = loss_of(model, batch)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def train_step_times(
    model: torch.nn.Module, batches: list[Batch], warmup: int, device: str = "cpu"
) -> list[float]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for i, batch in enumerate(batches):
        seconds = _time(lambda batch=batch: train_step(model, optimizer, batch), device)
        if i >= warmup:
            times.append(seconds)
    return times


def bench_training(
    key: str, peak: float, steps: int, warmup: int, device: str = "cpu"
) -> dict[str, object]:
    name, cfg, batch_size = CONFIGS[key]
    src_vocab, tgt_vocab = vocabularies()
    batches = dates_batches(batch_size, steps + warmup, src_vocab, tgt_vocab)
    batches = [b.to(device) for b in batches]
    ours_model = Seq2Seq(cfg, src_vocab, tgt_vocab, seed=0).to(device)
    reference = ReferenceSeq2Seq(
        len(src_vocab),
        len(tgt_vocab),
        cfg.emb_dim,
        cfg.enc_hidden,
        cfg.dec_hidden,
        cfg.cell,
        cfg.attention,
        cfg.input_feed,
        cfg.enc_layers,
    ).to(device)
    # Side by side: alternate whole runs so drifting load hits both alike. The batches are
    # length-bucketed, so their sizes differ: every figure is a median of per-step rates
    # (this step's tokens or FLOPs over this step's time), never a median time over a mean
    # size, and the speedup is the median of per-batch time ratios on the same batches.
    timed = batches[warmup:]
    tokens = [b.target_tokens for b in timed]
    flops = [model_flops(cfg, b, len(tgt_vocab)) for b in timed]
    ours_rates, ref_rates, flop_rates, ratios = [], [], [], []
    ours_times, ref_times = [], []
    for _ in range(2):
        ours = train_step_times(ours_model, batches, warmup, device)
        ref = train_step_times(reference, batches, warmup, device)
        ours_times += ours
        ref_times += ref
        ours_rates += [n / t for n, t in zip(tokens, ours, strict=True)]
        ref_rates += [n / t for n, t in zip(tokens, ref, strict=True)]
        flop_rates += [f / t for f, t in zip(flops, ours, strict=True)]
        ratios += [r / o for r, o in zip(ref, ours, strict=True)]
    return {
        "config": key,
        "name": name,
        "batch": batch_size,
        "step_ms": round(1e3 * statistics.median(ours_times), 2),
        "tokens_per_s": round(statistics.median(ours_rates)),
        "mfu": round(statistics.median(flop_rates) / 1e9 / peak, 4),
        "gflop_per_step": round(statistics.mean(flops) / 1e9, 3),
        "reference_step_ms": round(1e3 * statistics.median(ref_times), 2),
        "reference_tokens_per_s": round(statistics.median(ref_rates)),
        "speedup": round(statistics.median(ratios), 2),
    }


def translation_batches(count: int, max_tokens: int) -> tuple[Vocab, list[Batch]]:
    """Batches shaped like the translation preset's: a joint vocabulary of 4,000 symbols
    and token batches of ``max_tokens`` (padding counted) of sentence pairs whose lengths in
    pieces follow a log-normal law (median 13, a long tail, capped at 120; targets 0.9 to
    1.4 times their source), like the software messages of docs/results.md. Synthetic, so the
    benchmark reads no corpus; the symbols are drawn uniformly (the step's cost does not
    depend on which)."""
    rng = random.Random(0)
    size = translation.VOCAB_CONFIG.vocab_size
    words = [f"w{i}" for i in range(size - len(Vocab.SPECIALS))]
    vocab = Vocab.build([" ".join(words)], tokens="space")
    pairs = []
    for _ in range(count * 150):
        n = min(120, max(2, round(rng.lognormvariate(2.56, 0.6))))
        m = min(120, max(2, round(n * rng.uniform(0.9, 1.4))))
        pairs.append((" ".join(rng.choices(words, k=n)), " ".join(rng.choices(words, k=m))))
    data = ParallelData(pairs, vocab, vocab)
    order = token_batches(
        data.src_lengths.tolist(), data.tgt_lengths.tolist(), max_tokens, random.Random(1)
    )
    return vocab, [data.batch(rows) for rows in order[:count]]


def bench_translation(peak: float, steps: int, warmup: int, device: str = "cpu") -> dict:
    """The translation preset's training step (``luong.tasks.translation``) on batches of
    its shape: median step, target tokens/s, MFU, and the peak memory of a process that
    trains it (on the CPU)."""
    cfg, batch_tokens = translation.MODEL_CONFIG, translation.TRAIN_CONFIG.batch_tokens
    vocab, batches = translation_batches(steps + warmup, batch_tokens)
    model = Seq2Seq(cfg, vocab, vocab, seed=0).to(device)
    batches = [b.to(device) for b in batches]
    times = train_step_times(model, batches, warmup, device)
    timed = batches[warmup:]
    flops = [model_flops(cfg, b, len(vocab)) for b in timed]
    tokens = [b.target_tokens for b in timed]
    return {
        "name": "translation preset (bi-LSTM 2x128, LSTM 256, general, feed, V 4000)",
        "batch_tokens": batch_tokens,
        "mean_pairs_per_batch": round(statistics.mean(len(b.src) for b in timed), 1),
        "step_ms": round(1e3 * statistics.median(times), 2),
        "tokens_per_s": round(statistics.median(n / t for n, t in zip(tokens, times, strict=True))),
        "mfu": round(
            statistics.median(f / t for f, t in zip(flops, times, strict=True)) / 1e9 / peak, 4
        ),
        "gflop_per_step": round(statistics.mean(flops) / 1e9, 3),
        "output_layer_share_of_flops": round(
            statistics.mean(
                3 * output_layer_flops(cfg, b, len(vocab)) / f
                for b, f in zip(timed, flops, strict=True)
            ),
            3,
        ),
        "peak_memory_mb": peak_memory_mb("translation") if device == "cpu" else None,
    }


def precision_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    precision: str,
    train_cfg: TrainConfig,
) -> None:
    """The trainer's step on the CPU in ``precision``: the forward under autocast with the
    config's label smoothing, the backward, clipping at its norm, the optimizer."""
    with autocast(precision, torch.device("cpu")):
        loss = loss_of(model, batch, train_cfg.label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.clip_norm)
    optimizer.step()


def bench_translation_precisions(
    peak: dict[str, float], steps: int, warmup: int
) -> dict[str, object]:
    """The translation preset's training step in float32 and in bf16 side by side on the
    CPU: two copies of one model and the trainer's Adam (``make_optimizer``: fused), the
    steps alternating batch by batch (the trainer's step: forward under autocast with the
    preset's label smoothing, backward, clipping, Adam). Per precision: the median step,
    target tokens/s, MFU against that precision's own peak (``peak``: GFLOP/s by precision);
    the speed ratio is the median of the per-batch ratios; and each step's roofline
    (``roofline``).

    The batches are stepped through twice and the second pass is timed: a training meets each
    batch shape again within an epoch, and oneDNN (every bf16 product) compiles a kernel per
    shape the first time (``keep_compiled_kernels``); the first pass's ratio is reported
    beside it (``bf16_speed_over_fp32_first_pass``)."""
    reuse_freed_memory()  # as the Trainer does
    keep_compiled_kernels()  # as the Trainer does
    cfg, train_cfg = translation.MODEL_CONFIG, translation.TRAIN_CONFIG
    vocab, batches = translation_batches(steps + warmup, train_cfg.batch_tokens)
    base = Seq2Seq(cfg, vocab, vocab, seed=0).train()
    precisions = ("fp32", "bf16")
    models = {p: copy.deepcopy(base) for p in precisions}
    # The trainer's optimizer (Adam fused into one kernel on the CPU), at the preset's lr.
    optimizers = {p: make_optimizer(m, train_cfg) for p, m in models.items()}

    def step(precision: str, batch: Batch) -> None:
        precision_step(models[precision], optimizers[precision], batch, precision, train_cfg)

    first: dict[str, list[float]] = {p: [] for p in precisions}
    times: dict[str, list[float]] = {p: [] for p in precisions}
    for passed in (first, times):
        for i, batch in enumerate(batches):
            for p in precisions:
                seconds = _time(lambda p=p, batch=batch: step(p, batch))
                if i >= warmup:
                    passed[p].append(seconds)
    timed = batches[warmup:]
    tokens = [b.target_tokens for b in timed]
    flops = [model_flops(cfg, b, len(vocab)) for b in timed]
    result: dict[str, object] = {
        "name": "translation preset (bi-LSTM 2x128, LSTM 256, general, feed, V 4000)",
        "batch_tokens": train_cfg.batch_tokens,
        "gflop_per_step": round(statistics.mean(flops) / 1e9, 3),
    }
    for p in precisions:
        result[p] = {
            "step_ms": round(1e3 * statistics.median(times[p]), 2),
            "tokens_per_s": round(
                statistics.median(n / t for n, t in zip(tokens, times[p], strict=True))
            ),
            "mfu_of_own_peak": round(
                statistics.median(f / t for f, t in zip(flops, times[p], strict=True))
                / 1e9
                / peak[p],
                4,
            ),
            "roofline": roofline(lambda p=p: step(p, timed[0])),
        }
    ratios = [f / b for f, b in zip(times["fp32"], times["bf16"], strict=True)]
    result["bf16_speed_over_fp32"] = round(statistics.median(ratios), 2)
    ratios = [f / b for f, b in zip(first["fp32"], first["bf16"], strict=True)]
    result["bf16_speed_over_fp32_first_pass"] = round(statistics.median(ratios), 2)
    return result


def bench_decoding(model_dir: Path, repeats: int, device: str = "cpu") -> dict[str, object]:
    model = Seq2Seq.from_pretrained(model_dir, device=device)
    test = load_task("dates", n_train=0, n_dev=0).test
    sources = [s for s, _ in test]
    result: dict[str, object] = {"sentences": len(sources)}
    greedy = [
        _time(lambda: translate(model, sources, batch_size=512), device) for _ in range(repeats)
    ]
    result["greedy_s"] = round(statistics.median(greedy), 3)
    result["greedy_sentences_per_s"] = round(len(sources) / statistics.median(greedy))
    beam = [
        _time(lambda: translate(model, sources, SearchOptions(beam=5), batch_size=512), device)
        for _ in range(repeats)
    ]
    result["beam5_s"] = round(statistics.median(beam), 3)
    result["beam5_sentences_per_s"] = round(len(sources) / statistics.median(beam))
    result["beam5_over_greedy"] = round(statistics.median(beam) / statistics.median(greedy), 2)
    cfg = model.config
    reference = (
        ReferenceSeq2Seq(
            len(model.src_vocab),
            len(model.tgt_vocab),
            cfg.emb_dim,
            cfg.enc_hidden,
            cfg.dec_hidden,
            cfg.cell,
            cfg.attention,
            cfg.input_feed,
            cfg.enc_layers,
        )
        .to(device)
        .eval()
    )
    src, lengths = encode_sources(model.src_vocab, sources, device)

    def reference_greedy() -> None:
        for start in range(0, len(sources), 512):
            # The reference runs every batch for 11 steps (10 characters and EOS), the
            # length the trained model decodes; it is untrained, so EOS cannot stop it.
            part = slice(start, start + 512)
            n = int(lengths[part].max())
            reference.greedy(src[part, :n], lengths[part], 11, Vocab.bos_id, -1)

    ref = [_time(reference_greedy, device) for _ in range(repeats)]
    result["reference_greedy_s"] = round(statistics.median(ref), 3)
    result["greedy_speedup"] = round(statistics.median(ref) / statistics.median(greedy), 2)
    result.update(bench_ensemble(model_dir, sources, repeats, device))
    return result


def bench_ensemble(
    model_dir: Path, sources: list[str], repeats: int, device: str = "cpu"
) -> dict[str, object]:
    """Beam 5 with an ensemble of K = 2 and 3 copies of the model against the model alone,
    interleaved in one loop (copies decode exactly as the model: the same outputs, so the
    same lengths and steps; only the cost of K members shows). Target: at most K times."""
    single = Seq2Seq.from_pretrained(model_dir, device=device)
    models = {1: single}
    for k in (2, 3):
        models[k] = Ensemble([Seq2Seq.from_pretrained(model_dir, device=device) for _ in range(k)])
    times: dict[int, list[float]] = {k: [] for k in models}
    for _ in range(repeats):
        for k, model in models.items():
            times[k].append(
                _time(lambda m=model: translate(m, sources, SearchOptions(beam=5)), device)
            )
    result: dict[str, object] = {}
    for k in (2, 3):
        result[f"ensemble{k}_beam5_s"] = round(statistics.median(times[k]), 3)
        result[f"ensemble{k}_over_single_beam5"] = round(
            statistics.median(times[k]) / statistics.median(times[1]), 2
        )
    return result


MEMORY_CHILD = """
import sys
sys.path.insert(0, {here!r})
import bench
from luong import Seq2Seq
if {shape!r} == "translation":
    cfg = bench.translation.MODEL_CONFIG
    src_vocab, batches = bench.translation_batches(4, bench.translation.TRAIN_CONFIG.batch_tokens)
    tgt_vocab = src_vocab
else:
    name, cfg, batch_size = bench.CONFIGS[{shape!r}]
    src_vocab, tgt_vocab = bench.vocabularies()
    batches = bench.dates_batches(batch_size, 4, src_vocab, tgt_vocab)
bench.train_step_times(Seq2Seq(cfg, src_vocab, tgt_vocab, seed=0), batches, 0)
# VmHWM, the peak of this process's own memory: ru_maxrss would carry the parent's peak
# across fork and exec when the parent (this benchmark) is larger than the child.
status = open("/proc/self/status").read()
print(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
"""


def peak_memory_mb(shape: str = "c") -> float:
    """Peak resident memory of a process that trains a few steps at ``shape`` (a key of
    ``CONFIGS``, or "translation")."""
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD.format(here=here, shape=shape)],
        capture_output=True,
        text=True,
        check=True,
    )
    return round(int(out.stdout.split()[-1]) / 1024, 1)


def previous_figures() -> dict[str, object]:
    path = ROOT / "docs" / "bench.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def ensure_model(model_dir: Path) -> None:
    if (model_dir / "model.safetensors").is_file():
        return
    print(f"no model in {model_dir}: training the dates model first (luong train dates)")
    from luong import train

    train("dates", model_dir, train_config=TrainConfig(progress=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "runs" / "dates")
    parser.add_argument("--out", type=Path, default=ROOT / "bench.json")
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke test)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--precisions",
        action="store_true",
        help="only the peaks per precision and the translation step in fp32 and bf16 (CPU)",
    )
    args = parser.parse_args()
    steps, warmup, repeats = (3, 1, 1) if args.quick else (20, 3, 3)
    device = str(args.device)
    if device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is visible to torch")

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.machine()}")
    results: dict[str, object] = {
        "machine": {
            "cpu_count": os.cpu_count(),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "platform": platform.platform(),
            "device": device,
        }
    }
    if args.precisions:
        if device.startswith("cuda"):
            parser.error("--precisions: the CPU's precisions; leave out --device cuda")
        bench_precisions(results, steps, warmup)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        report_precisions(results)
        print(f"written to {args.out}")
        return
    if device.startswith("cuda"):
        results["machine"]["gpu"] = torch.cuda.get_device_name()  # type: ignore[index]
        bf16 = matmul_peak(8192, device=device, dtype=torch.bfloat16)
        results["matmul_peak_bf16_gflops"] = round(bf16, 1)
        print(f"matmul peak: {bf16:.1f} GFLOP/s (bfloat16, 8192^3, best of 7)")
    size = 8192 if device.startswith("cuda") else 2048
    peak = matmul_peak(size, device=device)
    results["matmul_peak_gflops"] = round(peak, 1)
    print(f"matmul peak: {peak:.1f} GFLOP/s (float32, {size}^3, best of 7)")
    training = [bench_training(key, peak, steps, warmup, device) for key in CONFIGS]
    results["training"] = training
    results["translation_step"] = bench_translation(peak, steps, warmup, device)
    if not device.startswith("cuda"):
        bench_precisions(results, steps, warmup)
    ensure_model(args.model)
    results["decoding"] = bench_decoding(args.model, repeats, device)
    if device.startswith("cuda"):
        # the whole run's peak on the device: shapes (c) and (d) at batch 512 set it
        results["peak_memory_mb_c"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    else:
        results["peak_memory_mb_c"] = peak_memory_mb()
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    report(results, previous_figures())
    print(f"written to {args.out}")


def bench_precisions(results: dict[str, object], steps: int, warmup: int) -> None:
    """The CPU's matmul peak in each precision on 1 and 2 threads, then the translation
    preset's step in fp32 and bf16 side by side, MFU against each precision's own peak on
    this run's thread count: into ``results`` (``peaks``, ``translation_precisions``)."""
    by_precision = peaks()
    results["peaks"] = by_precision
    for precision, rates in by_precision.items():
        unit = "GOP/s" if precision == "int8" else "GFLOP/s"
        shown = ", ".join(f"{rate:.1f} {unit} on {n} thread(s)" for n, rate in rates.items())
        print(f"matmul peak {precision}: {shown}")
    threads = torch.get_num_threads()
    own = {p: rates.get(threads, rates[1]) for p, rates in by_precision.items()}
    results["translation_precisions"] = bench_translation_precisions(own, steps, warmup)


def report(new: dict, old: dict) -> None:
    old_training = {r["config"]: r for r in old.get("training", [])}
    print()
    print("training (median step, target tokens/s, MFU; reference; speedup) [last committed]")
    for r in new["training"]:
        prev = old_training.get(r["config"])
        was = f"  [{prev['tokens_per_s']} tok/s, {prev['speedup']}x]" if prev else ""
        print(
            f"  ({r['config']}) {r['name']:<40} {r['step_ms']:>8.1f} ms {r['tokens_per_s']:>7} "
            f"tok/s  MFU {100 * r['mfu']:5.1f}%   ref {r['reference_tokens_per_s']:>7} tok/s  "
            f"{r['speedup']:>5.2f}x{was}"
        )
    dec, prev_dec = new["decoding"], old.get("decoding", {})
    print("decoding 10,000 dates at batch 512 (median wall time) [last committed]")
    for key in (
        "greedy_s",
        "beam5_s",
        "reference_greedy_s",
        "ensemble2_beam5_s",
        "ensemble3_beam5_s",
    ):
        if dec.get(key) is not None:
            was = f"  [{prev_dec[key]} s]" if prev_dec.get(key) is not None else ""
            print(f"  {key:<22} {dec[key]:>8} s{was}")
    t, prev_t = new["translation_step"], old.get("translation_step")
    was = f"  [{prev_t['tokens_per_s']} tok/s, MFU {100 * prev_t['mfu']:.1f}%]" if prev_t else ""
    print(
        f"translation preset step ({t['batch_tokens']} tokens, {t['mean_pairs_per_batch']} "
        f"pairs): {t['step_ms']:.1f} ms, {t['tokens_per_s']} tok/s, MFU {100 * t['mfu']:.1f}%, "
        f"output layer {100 * t['output_layer_share_of_flops']:.0f}% of FLOPs, peak memory "
        f"{t['peak_memory_mb']} MB{was}"
    )
    print(f"peak memory training at (c): {new['peak_memory_mb_c']} MB")
    report_precisions(new)


def report_precisions(new: dict) -> None:
    """The lines of ``bench_precisions``' figures, where the run has them."""
    if "translation_precisions" not in new:
        return
    tp = new["translation_precisions"]
    print("translation preset step by precision (side by side; MFU against its own peak)")
    for p in ("fp32", "bf16"):
        r, roof = tp[p], tp[p]["roofline"]
        print(
            f"  {p}: {r['step_ms']:.1f} ms, {r['tokens_per_s']} tok/s, MFU "
            f"{100 * r['mfu_of_own_peak']:.1f}%; products {100 * roof['products']:.0f}%, "
            f"other kernels {100 * roof['other_kernels']:.0f}%, Python and framework "
            f"{100 * roof['python_and_framework']:.0f}%"
        )
    print(f"  bf16 over fp32: {tp['bf16_speed_over_fp32']}x (shapes seen before)")
    if "bf16_speed_over_fp32_first_pass" in tp:
        print(f"  bf16 over fp32, each shape new: {tp['bf16_speed_over_fp32_first_pass']}x")


if __name__ == "__main__":
    main()
