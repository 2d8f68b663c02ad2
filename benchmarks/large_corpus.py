"""Corpora larger than memory: peak memory and start-up time of training from text against
training from a prepared corpus (``luong prepare``), and ``prepare``'s throughput.

    python benchmarks/large_corpus.py [--sizes 20000 200000 2000000] [--steps 200]
        [--repeats 3] [--work /tmp/large-corpus] [--out large_corpus.json]

For each size: a synthetic corpus is generated (random sentences of 5 to 30 words from a
5,000-word vocabulary, each target the source's words reversed and marked: how long it takes
is recorded), prepared with 1 and 2 workers (lines per second of the whole command, start-up
included), then trained ``--steps`` steps in a fresh child process from the prepared folder
and from the text file (the text path reads the pairs into Python and pads them into one
tensor per side, as ``luong train --train`` does), ``--repeats`` children a path, one after
another. Each child reports its own peak RSS (``resource.getrusage``) and the seconds from its
launch until the trainer is ready to take its first step (reading the data, the vocabularies,
the batches of every epoch); the JSON has the medians and every run's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# The training child: the data, a small model, a Trainer stopped at its first dev evaluation.
CHILD = """
import json, resource, sys, time
launched = float(sys.argv[4])
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig
from luong.config.vocab import VocabConfig
from luong.data.prepare import build_vocabularies
from luong.data.prepared import PreparedData
from luong.tasks.data import TaskData
from luong.tasks.tsv import read_pairs
from luong.training.trainer import Trainer

mode, data_path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
dev = read_pairs(sys.argv[5]).pairs
if mode == "prepared":
    data = PreparedData(data_path)
    src, tgt = data.src_vocab, data.tgt_vocab
else:
    data = read_pairs(data_path).pairs
    task = TaskData(data, [], [], src_tokens="space", tgt_tokens="space")
    src, tgt = build_vocabularies(task, VocabConfig())
model = Seq2Seq(
    Seq2SeqConfig(emb_dim=64, enc_hidden=64, enc_layers=1, dec_hidden=128, max_src_len=64),
    src, tgt, seed=0,
)
config = TrainConfig(
    epochs=1, batch_tokens=3000, warmup_steps=0, eval_every=steps, progress=False,
    device="cpu", eval_batch_size=32,
)
trainer = Trainer(model, data, dev, config, log=lambda message: None)
ready = time.time() - launched

class Stop(Exception):
    pass

def stop(point):
    raise Stop()

start = time.perf_counter()
try:
    trainer.run(on_eval=stop)
except Stop:
    pass
print(json.dumps({
    "seconds_to_first_step": round(ready, 2),
    "steps": trainer.progress.step,
    "train_seconds": round(time.perf_counter() - start, 2),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
}))
"""


def generate(path: Path, pairs: int, seed: int) -> float:
    """Write ``pairs`` synthetic pairs to ``path``; the seconds it took."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(5000)])
    weights = 1 / np.arange(1, len(words) + 1)  # Zipf-like, as text is
    weights /= weights.sum()
    with open(path, "w", encoding="utf-8") as file:
        for first in range(0, pairs, 10_000):
            count = min(10_000, pairs - first)
            lengths = rng.integers(5, 31, size=count)
            chosen = words[rng.choice(len(words), size=int(lengths.sum()), p=weights)].tolist()
            ends = np.cumsum(lengths).tolist()
            lines, begin = [], 0
            for end in ends:
                sentence = chosen[begin:end]
                target = " ".join(f"{w}x" for w in reversed(sentence))
                lines.append(f"{' '.join(sentence)}\t{target}\n")
                begin = end
            file.write("".join(lines))
    return time.perf_counter() - start


def luong(*args: str) -> float:
    """Run ``python -m luong ARGS``; its wall time in seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "luong", *args], check=True, capture_output=True)
    return time.perf_counter() - start


def train_child(mode: str, data: Path, steps: int, dev: Path) -> dict[str, float]:
    launched = str(time.time())
    result = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(data), str(steps), launched, str(dev)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def train_children(mode: str, data: Path, steps: int, dev: Path, repeats: int) -> dict[str, object]:
    """``repeats`` fresh children, one after another: the median of each figure, and every
    run's peak RSS and time to the first step (the peak moves by a few tens of MB from run to
    run: the allocator, and which batch of the 200 is the largest)."""
    runs = [train_child(mode, data, steps, dev) for _ in range(repeats)]
    median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    return {
        **median,
        "peak_rss_mb_runs": [run["peak_rss_mb"] for run in runs],
        "seconds_to_first_step_runs": [run["seconds_to_first_step"] for run in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000, 2_000_000])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/large-corpus"))
    parser.add_argument("--out", type=Path, default=Path("large_corpus.json"))
    parser.add_argument("--no-text", action="store_true", help="skip the text path")
    parser.add_argument("--repeats", type=int, default=3, help="training children per path")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    dev = args.work / "dev.tsv"
    generate(dev, 20, seed=1)
    results: dict[str, object] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "repeats": args.repeats,
        "steps": args.steps,
        "sizes": {},
    }
    for size in args.sizes:
        tsv = args.work / f"train-{size}.tsv"
        entry: dict[str, object] = {"generate_seconds": round(generate(tsv, size, seed=0), 2)}
        for workers in (1, 2):
            out = args.work / f"prepared-{size}-w{workers}"
            seconds = luong(
                "prepare", "--train", str(tsv), "--out", str(out), "--src-tokens", "space",
                "--tgt-tokens", "space", "--workers", str(workers),
            )  # fmt: skip
            entry[f"prepare_w{workers}_seconds"] = round(seconds, 2)
            entry[f"prepare_w{workers}_lines_per_second"] = round(size / seconds)
        entry["prepared"] = train_children(
            "prepared", args.work / f"prepared-{size}-w1", args.steps, dev, args.repeats
        )
        if not args.no_text:
            entry["text"] = train_children("text", tsv, args.steps, dev, args.repeats)
        results["sizes"][str(size)] = entry  # type: ignore[index]
        print(json.dumps({size: entry}), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
