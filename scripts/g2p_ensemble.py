"""G2P ensembles and checkpoint averaging on the standard CMUdict split (g014b2b).

    python scripts/g2p_ensemble.py --data ../shared/data/cmudict-g014b2b \\
        --members runs/g2p-s0 runs/g2p-s1 runs/g2p-s2 runs/g2p-s3 runs/g2p-s4 \\
        --average-last 5 --beam 5 --out runs/g2p-ensemble.json

Each member is a folder of ``scripts/g2p_benchmark.py`` (``MEMBER/model`` trained with its own
``--seed`` and ``--keep-checkpoints 5``, ``MEMBER/data/dev.tsv`` its dev words; every member
is trained on the same split). The rows, each scored on dev and test with greedy search
and with beam search (``--beam``; plain log P ranking, as the benchmark): every member alone;
the average of the first member's last ``--average-last`` checkpoints (``luong average``);
the ensembles of the first 2, 3, ... members (``luong eval DIR1 DIR2 ...``) and the ensemble
of every member's average, with the
decoding seconds of each, so the cost of K members shows beside one model's. Scoring as
``g2p_benchmark.py``: unique words, WER and PER against any reference.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from luong.config.search import SearchOptions
from luong.evaluation.evaluate import evaluate_references
from luong.model.averaging import average_models, run_checkpoints
from luong.model.ensemble import Decodable, Ensemble
from luong.model.seq2seq import Seq2Seq
from luong.tasks.g2p import read_references
from luong.tasks.tsv import read_pairs


def score(model: Decodable, splits: dict[str, list[tuple[str, str]]], beams: list[int]) -> dict:
    rows: dict[str, Any] = {}
    for split, pairs in splits.items():
        for beam in beams:
            start = time.perf_counter()
            scores = evaluate_references(model, pairs, SearchOptions(beam=beam), batch_size=500)
            seconds = time.perf_counter() - start
            name = "greedy" if beam == 1 else f"beam {beam}"
            rows[f"{split} {name}"] = {
                "wer": scores["wer"],
                "per": scores["per"],
                "words": scores["sources"],
                "decode_seconds": round(seconds, 2),
            }
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with g014b2b.ref")
    parser.add_argument("--members", type=Path, nargs="+", required=True)
    parser.add_argument("--average-last", type=int, default=5)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument(
        "--sizes", type=int, nargs="+", help="only the ensembles of these sizes (default 2 .. N)"
    )
    parser.add_argument(
        "--ensembles-only",
        action="store_true",
        help="skip the single models and the averages (a later run with more members)",
    )
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    args = parser.parse_args(argv)
    dev = read_pairs(args.members[0] / "data" / "dev.tsv").pairs
    test = [(w, p) for w, prons in read_references(args.data / "g014b2b.ref") for p in prons]
    splits = {"dev": dev, "test": test}
    beams = [1, args.beam]
    models = [Seq2Seq.from_pretrained(m / "model") for m in args.members]
    report: dict[str, Any] = {"members": [str(m) for m in args.members], "rows": {}}

    def add(name: str, model: Decodable) -> None:
        rows = score(model, splits, beams)
        report["rows"][name] = rows
        test_row = rows[f"test beam {args.beam}"]
        print(
            f"{name}: test greedy WER {rows['test greedy']['wer']:.2%} PER "
            f"{rows['test greedy']['per']:.2%}; beam {args.beam} WER {test_row['wer']:.2%} "
            f"PER {test_row['per']:.2%} ({test_row['decode_seconds']} s)",
            flush=True,
        )
        (args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    names = [str(m) for m in args.members]
    if not args.ensembles_only:
        for member, model in zip(args.members, models, strict=True):
            add(f"single {member.name}", model)
        averages = []
        for member in args.members:
            folders = run_checkpoints(member / "model", args.average_last)
            checkpoints = [Seq2Seq.from_pretrained(f) for f in folders]
            averages.append(average_models(checkpoints, [str(f) for f in folders]))
        first = f"{args.members[0].name}, average of its last {args.average_last} checkpoints"
        add(first, averages[0])
    for k in args.sizes or range(2, len(models) + 1):
        add(f"ensemble of {k}", Ensemble(models[:k], names=names[:k]))
    if len(models) > 1 and not args.ensembles_only:
        add(f"ensemble of {len(models)} averages", Ensemble(averages, names=names))
    report["machine"] = {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
        "torch": torch.__version__,
    }
    report["script"] = " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv])
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
