"""Corpora larger than memory: peak memory and start-up time of training from text against
training from a prepared corpus (``luong prepare``), and ``prepare``'s throughput.

    python benchmarks/large_corpus.py [--sizes 20000 200000 2000000] [--steps 200]
        [--work /tmp/large-corpus] [--out large_corpus.json]

For each size: a synthetic corpus is generated (random sentences of 5 to 30 words from a
5,000-word vocabulary, each target the source's words reversed and marked: how long it takes
is recorded), prepared with 1 and 2 workers (lines per second of the whole command, start-up
included), then trained ``--steps`` steps in a fresh child process from the prepared folder
and from the text file (the text path reads the pairs into Python and pads them into one
tensor per side, as ``luong train --train`` does). Each child reports its own peak RSS
(``resource.getrusage``) and the seconds from its launch until the trainer is ready to take
its first step (reading the data, the vocabularies, the batches of every epoch). JSON out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The training child: the data, a small model, a Trainer stopped at its first dev evaluation.
CHILD = """
import json, resource, sys, time
launched = float(sys.argv[4])
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig
from luong.config import VocabConfig
from luong.prepared import PreparedData, build_vocabularies
from luong.tasks.data import TaskData
from luong.tasks.tsv import read_pairs
from luong.trainer import Trainer

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
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf-like, as text is
    with open(path, "w", encoding="utf-8") as file:
        for _ in range(pairs):
            sentence = rng.choices(words, weights, k=rng.randint(5, 30))
            target = " ".join(f"{w}x" for w in reversed(sentence))
            file.write(f"{' '.join(sentence)}\t{target}\n")
    return time.perf_counter() - start


def luong(*args: str) -> float:
    """Run ``python -m luong ARGS``; its wall time in seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "luong", *args], check=True, capture_output=True)
    return time.perf_counter() - start


def train_child(mode: str, data: Path, steps: int, dev: Path) -> dict[str, object]:
    launched = str(time.time())
    result = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(data), str(steps), launched, str(dev)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000, 2_000_000])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/large-corpus"))
    parser.add_argument("--out", type=Path, default=Path("large_corpus.json"))
    parser.add_argument("--no-text", action="store_true", help="skip the text path")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    dev = args.work / "dev.tsv"
    generate(dev, 20, seed=1)
    results: dict[str, object] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
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
        entry["prepared"] = train_child(
            "prepared", args.work / f"prepared-{size}-w1", args.steps, dev
        )
        if not args.no_text:
            entry["text"] = train_child("text", tsv, args.steps, dev)
        results["sizes"][str(size)] = entry  # type: ignore[index]
        print(json.dumps({size: entry}), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
