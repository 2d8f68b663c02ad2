"""Start-up against the epoch count: the seconds from a training process's launch to its
first optimizer step, from a prepared corpus, with the translation preset's batching and
schedule (batches of 2,048 tokens, a linear decay over the run's steps after 200 warm-up
steps) and 1 or 24 epochs.

    python benchmarks/startup_epochs.py [--pairs 200000] [--epochs 1 24] [--repeats 3]
        [--work /tmp/startup-epochs] [--out startup_epochs.json]

The corpus is synthetic (``large_corpus.py``'s generator: 5 to 30 words from a 5,000-word
Zipf vocabulary, each target the source reversed), prepared once with word vocabularies.
Each run is a fresh child process (one thread): a small model (64-wide encoder, 128-wide
decoder) and a ``Trainer`` whose first step stops it; the child reports the seconds from its
launch (torch imported) to that step, and the seconds ``Trainer(...)`` took. The JSON holds
the medians and every run's figures. Run it with ``PYTHONPATH`` on another checkout's
``src`` to measure that one.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from large_corpus import generate  # noqa: E402  (the same corpus as the large-corpus benchmark)

CHILD = """
import json, sys, time
launched = float(sys.argv[3])
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig
from luong.data.prepared import PreparedData
from luong.training.trainer import Trainer

data = PreparedData(sys.argv[1])
epochs = int(sys.argv[2])
model = Seq2Seq(
    Seq2SeqConfig(emb_dim=64, enc_hidden=64, enc_layers=1, dec_hidden=128, max_src_len=64),
    data.src_vocab, data.tgt_vocab, seed=0,
)
config = TrainConfig(
    epochs=epochs, batch_tokens=2048, schedule="linear", warmup_steps=200, progress=False,
    device="cpu", eval_every=100_000,
)
built = time.perf_counter()
trainer = Trainer(model, data, [("w1 w2", "w2x w1x")], config, log=lambda message: None)
built = time.perf_counter() - built


class Stop(Exception):
    pass


def first_step(batches, interrupted):
    raise Stop(time.time() - launched)


trainer._step = first_step
try:
    trainer.run()
except Stop as stop:
    reached = stop.args[0]
print(json.dumps({
    "seconds_to_first_step": round(reached, 2),
    "trainer_seconds": round(built, 2),
    "total_steps": trainer.total_steps,
}))
"""


def child(prepared: Path, epochs: int) -> dict[str, float]:
    launched = str(time.time())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(prepared), str(epochs), launched],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, nargs="+", default=[1, 24])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/startup-epochs"))
    parser.add_argument("--out", type=Path, default=Path("startup_epochs.json"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    prepared = args.work / f"prepared-{args.pairs}"
    if not (prepared / "manifest.json").is_file():
        tsv = args.work / f"train-{args.pairs}.tsv"
        generate(tsv, args.pairs, seed=0)
        subprocess.run(
            [sys.executable, "-m", "luong", "prepare", "--train", str(tsv), "--out",
             str(prepared), "--src-tokens", "space", "--tgt-tokens", "space"],
            check=True, capture_output=True,
        )  # fmt: skip
    results: dict[str, object] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "pairs": args.pairs,
        "repeats": args.repeats,
        "epochs": {},
    }
    for epochs in args.epochs:
        runs = [child(prepared, epochs) for _ in range(args.repeats)]
        entry = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        entry["seconds_to_first_step_runs"] = [run["seconds_to_first_step"] for run in runs]
        results["epochs"][str(epochs)] = entry  # type: ignore[index]
        print(json.dumps({epochs: entry}), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
