"""Translation ensembles and checkpoint averaging on gettext-en-de (devtest, BLEU and chrF).

    python scripts/translation_ensemble.py --data ../shared/data/gettext-en-de \\
        --members runs/de-s0 runs/de-s1 runs/de-s2 --average-last 3 \\
        --out benchmarks/translation_ensemble.json

Each member is a run folder of ``luong train --preset translation --seed S
--keep-checkpoints N`` on the same data (the same sentencepiece model: the preset learns it
from the training split alone, so every seed learns the same one; ``Ensemble`` refuses
members whose vocabularies differ). The rows, each decoding ``devtest.tsv`` greedily and
with beam 5 and the preset's length penalty (its test figures): every member alone, every
member's average of its last ``--average-last`` checkpoints (``luong average``), the ensemble
of all members (``luong eval DIR1 DIR2 ...``) and the ensemble of their averages, with the
seconds each decoding took, so the cost of K members shows beside one model's. BLEU and chrF
are sacreBLEU's over the detokenised outputs, as ``luong eval`` reports them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from luong.config.search import SearchOptions
from luong.evaluation.evaluate import evaluate
from luong.model.averaging import average_models, run_checkpoints
from luong.model.ensemble import Decodable, Ensemble
from luong.model.seq2seq import Seq2Seq
from luong.tasks import translation
from luong.tasks.tsv import read_pairs

BEAM = 5


def score(model: Decodable, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Greedy and beam-5 BLEU and chrF of ``model`` on ``pairs``, with decoding seconds."""
    rows: dict[str, Any] = {}
    for name, options in (
        ("greedy", SearchOptions()),
        (f"beam {BEAM}", SearchOptions(beam=BEAM, alpha=translation.TRAIN_CONFIG.test_alpha)),
    ):
        start = time.perf_counter()
        scores = evaluate(model, pairs, options, references=False, bleu=True)
        rows[name] = {
            "bleu": round(scores["bleu"], 2),
            "chrf": round(scores["chrf"], 2),
            "exact_match": round(scores["exact_match"], 4),
            "decode_seconds": round(time.perf_counter() - start, 2),
        }
    return rows


def last_checkpoints_averaged(run: Path, last: int) -> Seq2Seq:
    """The mean of ``run``'s last ``last`` checkpoints (``luong average``'s, in memory)."""
    folders = run_checkpoints(run, last)
    return average_models([Seq2Seq.from_pretrained(f) for f in folders], [str(f) for f in folders])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with devtest.tsv")
    parser.add_argument("--members", type=Path, nargs="+", required=True, help="run folders")
    parser.add_argument("--average-last", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    args = parser.parse_args(argv)
    if len(args.members) < 2:
        parser.error(f"--members: expected at least 2 run folders, got {len(args.members)}")
    pairs = read_pairs(args.data / "devtest.tsv").pairs
    models = [Seq2Seq.from_pretrained(member) for member in args.members]
    names = [member.name for member in args.members]
    report: dict[str, Any] = {"members": [str(m) for m in args.members], "rows": {}}

    def add(name: str, model: Decodable) -> dict[str, Any]:
        rows = score(model, pairs)
        report["rows"][name] = rows
        beam = rows[f"beam {BEAM}"]
        print(
            f"{name}: greedy BLEU {rows['greedy']['bleu']}; beam {BEAM} BLEU {beam['bleu']} "
            f"chrF {beam['chrf']} ({beam['decode_seconds']} s)",
            flush=True,
        )
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        return rows

    singles = [add(f"single {name}", model) for name, model in zip(names, models, strict=True)]
    averages = [last_checkpoints_averaged(member, args.average_last) for member in args.members]
    averaged_rows = [
        add(f"{name}, average of its last {args.average_last} checkpoints", model)
        for name, model in zip(names, averages, strict=True)
    ]
    ensemble = add(f"ensemble of {len(models)}", Ensemble(models, names=names))
    add(f"ensemble of the {len(models)} averages", Ensemble(averages, names=names))
    beam = f"beam {BEAM}"
    mean_bleu = statistics.mean(row[beam]["bleu"] for row in singles)
    mean_seconds = statistics.mean(row[beam]["decode_seconds"] for row in singles)
    report["summary"] = {
        "mean_member_bleu": round(mean_bleu, 2),
        "mean_average_bleu": round(statistics.mean(r[beam]["bleu"] for r in averaged_rows), 2),
        "ensemble_gain_over_mean_member": round(ensemble[beam]["bleu"] - mean_bleu, 2),
        "ensemble_seconds_over_mean_member": round(
            ensemble[beam]["decode_seconds"] / mean_seconds, 2
        ),
    }
    report["machine"] = {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
        "torch": torch.__version__,
    }
    report["script"] = " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv])
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report["summary"]))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
