"""The standard CMUdict G2P benchmark (g014b2b): train through the own-data path, score the test.

    python scripts/g2p_benchmark.py --data ../shared/data/cmudict-g014b2b --out runs/g2p-bench \\
        [--beam 5] [--every 20] [--dev-only] [--eval-only] [-- --epochs 2 ...]

The split is not part of this repository (see docs/results.md for where it comes from); give
the folder holding ``g014b2b.train`` and ``g014b2b.ref``. Steps:

1. Read ``g014b2b.train`` (``WORD<TAB>PH ON EMES``, one pronunciation a line) with the strict
   own-data reader, and hold out every ``--every``-th word (sorted, all its pronunciations) as
   dev; the test file is never looked at until step 3. ``OUT/data/{train,dev}.tsv`` are written.
2. Train with ``luong train --train OUT/data/train.tsv --dev OUT/data/dev.tsv --tgt-tokens space
   --preset g2p --out OUT/model``, the G2P defaults, plus any flags after ``--``.
3. Score ``g014b2b.ref`` (``WORD<TAB>pron 1<TAB>pron 2...``) as the G2P literature does: unique
   words, right when the output equals any reference (WER), edit distance to the closest
   reference over its length (PER); greedy search, then beam search with ``--beam`` (plain log P
   ranking, no length or coverage penalty); the dev words are scored the same way (with
   ``--dev-only``, only they are: the way to compare settings without touching the test).
   ``OUT/benchmark.json`` holds everything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

from luong import __version__
from luong.cli import main as luong_main
from luong.config.search import SearchOptions
from luong.evaluation.evaluate import evaluate_references
from luong.model.seq2seq import Seq2Seq
from luong.tasks.g2p import carve_dev, read_references
from luong.tasks.tsv import read_pairs


def _write_pairs(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with g014b2b.train/.ref")
    parser.add_argument("--out", type=Path, required=True, help="the benchmark's folder")
    parser.add_argument("--beam", type=int, default=5, help="beam size of the second row")
    parser.add_argument("--every", type=int, default=20, help="one word in EVERY goes to dev")
    parser.add_argument("--eval-only", action="store_true", help="score OUT/model again")
    parser.add_argument(
        "--dev-only", action="store_true", help="tuning: score the dev words only, not the test"
    )
    parser.add_argument("train_flags", nargs="*", help="flags for luong train, after --")
    args = parser.parse_args(argv)
    train_file, ref_file = args.data / "g014b2b.train", args.data / "g014b2b.ref"
    for path in (train_file, ref_file):
        if not path.is_file():
            parser.error(f"--data: {path} is missing; give the folder of the g014b2b split")
    model_dir = args.out / "model"
    command = [
        "train",
        "--train",
        str(args.out / "data" / "train.tsv"),
        "--dev",
        str(args.out / "data" / "dev.tsv"),
        "--tgt-tokens",
        "space",
        "--preset",
        "g2p",
        "--out",
        str(model_dir),
        *args.train_flags,
    ]
    train_seconds = None
    if not args.eval_only:
        train, dev = carve_dev(read_pairs(train_file).pairs, every=args.every)
        (args.out / "data").mkdir(parents=True, exist_ok=True)
        _write_pairs(args.out / "data" / "train.tsv", train)
        _write_pairs(args.out / "data" / "dev.tsv", dev)
        print(f"train {len(train)} pairs, dev {len(dev)} pairs ({args.data})", flush=True)
        print("luong " + " ".join(command), flush=True)
        start = time.perf_counter()
        status = luong_main(command)
        train_seconds = time.perf_counter() - start
        if status:
            return status
    model = Seq2Seq.from_pretrained(model_dir)
    dev = read_pairs(args.out / "data" / "dev.tsv").pairs
    test = [(word, pron) for word, prons in read_references(ref_file) for pron in prons]
    rows: dict[str, dict[str, dict[str, float]]] = {"dev": {}, "test": {}}
    beams = [1] + ([args.beam] if args.beam > 1 else [])
    for split, pairs in (("dev", dev), ("test", [] if args.dev_only else test)):
        for beam in beams if pairs else []:
            start = time.perf_counter()
            scores = evaluate_references(model, pairs, SearchOptions(beam=beam), batch_size=500)
            scores["decode_seconds"] = round(time.perf_counter() - start, 1)
            name = "greedy" if beam == 1 else f"beam {beam}"
            rows[split][name] = scores
            print(
                f"{split} {name}: WER {scores['wer']:.2%}  PER {scores['per']:.2%}  "
                f"({scores['sources']} words, {scores['pairs']} references, "
                f"{scores['decode_seconds']} s)",
                flush=True,
            )
    metrics = json.loads((model_dir / "metrics.json").read_text(encoding="utf-8"))
    report = {
        **rows,
        "train_seconds": metrics.get("train_seconds"),
        "wall_seconds_train_command": round(train_seconds, 1) if train_seconds else None,
        "epochs": metrics.get("epochs"),
        "steps": metrics.get("steps"),
        "dev_exact_match_pairs": metrics.get("dev_exact_match"),
        "parameters": metrics.get("parameters"),
        "model_config": metrics.get("model_config"),
        "train_config": metrics.get("train_config"),
        "command": ["luong", *command],
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "luong": __version__,
        },
        "script": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
    }
    (args.out / "benchmark.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written {args.out / 'benchmark.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
