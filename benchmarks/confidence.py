"""How well a model's confidence in its outputs ranks them (``luong.translation.confidence``), and
what a value means: on gettext-en-de, each output's confidence against its sentence chrF.

    python benchmarks/confidence.py MODEL [--dev dev.tsv] [--devtest devtest.tsv]
        [--out docs/confidence.json] [--beam 5] [--nbest 5] [--batch-size 64]

Each split is decoded twice with beam ``--beam`` (5) and the rest of the model's decoding
defaults (alpha 0.6 with the translation preset): with ``nbest`` outputs per source (the
best is the same as with one: ``luong.search.beam``) and placeholders off (the model's own
outputs), to compare two measures of the best output's confidence; and as ``luong po``
decodes (one output, placeholders ``constrain``), for what its comment and
``--min-confidence`` give. The measures:

- ``geometric_mean``: ``luong.translation.confidence.confidence``, exp(mean log-probability of its
  tokens, EOS included), what luong writes;
- ``nbest_share``: the best output's share of the n-best list's probability mass, a softmax
  over the outputs' summed log-probabilities (agreement across the n-best).

Figures, one JSON object out: on devtest (and dev), Spearman's rank correlation
(``scipy.stats.spearmanr``) between each measure and the best output's sentence chrF against
the reference (``sacrebleu.sentence_chrf``); then on ``luong po``'s outputs, the same for
the geometric mean, its calibration (in buckets of 0.1, each with its count and mean
sentence chrF, on dev and devtest), and ``--min-confidence`` at the value that leaves 20 %
of dev's outputs to a person (dev's 20th percentile, rounded down to two decimals as one
would type it), applied to devtest: the share left, the mean sentence chrF and corpus chrF
of the outputs filled against all.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import sacrebleu
from scipy.stats import spearmanr

from luong import RequestOptions, Translator, load
from luong.tasks.tsv import read_pairs
from luong.translation.confidence import confidence

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gettext-en-de"  # ../shared
BUCKETS = [i / 10 for i in range(11)]  # [0, 0.1), ..., [0.9, 1.0]
LEFT_TO_PEOPLE = 0.2


def nbest_share(summed: list[float]) -> float:
    """The first output's share of ``exp(summed)`` over the n-best list (a stable softmax)."""
    top = max(summed)
    weights = [math.exp(s - top) for s in summed]
    return weights[0] / math.fsum(weights)


def decode_split(
    translator: Translator,
    path: Path,
    beam: int,
    nbest: int,
    batch_size: int,
    placeholders: str = "off",
) -> dict[str, Any]:
    """The split's best outputs, their sentence chrF and both measures, in order."""
    pairs = read_pairs(path).pairs
    sources = [source for source, _ in pairs]
    references = [reference for _, reference in pairs]
    search = replace(translator.search, beam=beam, nbest=nbest)
    request = RequestOptions(placeholders=placeholders)
    start = time.perf_counter()
    outputs, geometric, share = [], [], []
    for translation in translator.translations(sources, search, request, batch_size=batch_size):
        hypotheses = translation.hypotheses
        outputs.append(translation.texts[0] if translation.texts else "")
        geometric.append(confidence(hypotheses[0]) if hypotheses else 0.0)
        share.append(nbest_share([sum(h.log_probs) for h in hypotheses]) if hypotheses else 0.0)
    seconds = time.perf_counter() - start
    chrf = [sacrebleu.sentence_chrf(o, [r]).score for o, r in zip(outputs, references, strict=True)]
    print(
        f"{path.name}, {placeholders}: {len(sources)} sources in {seconds:.0f} s", file=sys.stderr
    )
    return {
        "outputs": outputs,
        "references": references,
        "chrf": chrf,
        "geometric_mean": geometric,
        "nbest_share": share,
        "seconds": seconds,
        "search": search,
    }


def ranking(
    split: dict[str, Any], measures: tuple[str, ...] = ("geometric_mean", "nbest_share")
) -> dict[str, float]:
    """Spearman's rho of each measure against sentence chrF."""
    return {
        measure: round(float(spearmanr(split[measure], split["chrf"]).statistic), 4)
        for measure in measures
    }


def calibration(split: dict[str, Any]) -> list[dict[str, object]]:
    """The geometric mean in buckets of 0.1 (the last holds 1.0): count, mean chrF."""
    rows = []
    values, chrf = np.array(split["geometric_mean"]), np.array(split["chrf"])
    for low, high in zip(BUCKETS, BUCKETS[1:], strict=False):
        inside = (values >= low) & ((values < high) | (high == 1.0))
        if inside.any():
            rows.append(
                {
                    "confidence": f"[{low:.1f}, {high:.1f}{']' if high == 1.0 else ')'}",
                    "outputs": int(inside.sum()),
                    "mean_chrf": round(float(chrf[inside].mean()), 2),
                }
            )
    return rows


def thresholded(split: dict[str, Any], threshold: float) -> dict[str, float]:
    """Outputs at or above ``threshold`` filled, the others left: what it gives."""
    kept = [c >= threshold for c in split["geometric_mean"]]
    filled = [i for i, k in enumerate(kept) if k]

    def corpus(indices: list[int]) -> float:
        hyps = [split["outputs"][i] for i in indices]
        refs = [[split["references"][i] for i in indices]]
        return round(float(sacrebleu.corpus_chrf(hyps, refs).score), 2)

    every = list(range(len(kept)))
    return {
        "min_confidence": threshold,
        "left_to_people": round(1 - len(filled) / len(kept), 4),
        "mean_chrf_filled": round(float(np.mean([split["chrf"][i] for i in filled])), 2),
        "mean_chrf_all": round(float(np.mean(split["chrf"])), 2),
        "corpus_chrf_filled": corpus(filled),
        "corpus_chrf_all": corpus(every),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--dev", type=Path, default=DATA / "dev.tsv")
    parser.add_argument("--devtest", type=Path, default=DATA / "devtest.tsv")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--nbest", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    translator = load(args.model)
    # the two measures side by side: n-best lists, the model's own outputs
    dev = decode_split(translator, args.dev, args.beam, args.nbest, args.batch_size)
    devtest = decode_split(translator, args.devtest, args.beam, args.nbest, args.batch_size)
    # what luong po writes and compares: one output, placeholders kept (its default)
    po_dev = decode_split(translator, args.dev, args.beam, 1, args.batch_size, "constrain")
    po_devtest = decode_split(translator, args.devtest, args.beam, 1, args.batch_size, "constrain")
    # the value that leaves 20 % of dev to people, as one would type it (rounded down)
    percentile = float(np.quantile(po_dev["geometric_mean"], LEFT_TO_PEOPLE))
    threshold = math.floor(percentile * 100) / 100
    search = dev["search"]

    def spearman(split: dict[str, Any]) -> float:
        return ranking(split, ("geometric_mean",))["geometric_mean"]

    result = {
        "command": "python benchmarks/confidence.py " + " ".join(sys.argv[1:]),
        "model": args.model.resolve().name,
        "search": {"beam": search.beam, "alpha": search.alpha},
        "sources": {"dev": len(dev["chrf"]), "devtest": len(devtest["chrf"])},
        "measures": {
            "nbest": search.nbest,
            "placeholders": "off",
            "spearman_devtest": ranking(devtest),
            "spearman_dev": ranking(dev),
        },
        "luong_po": {
            "nbest": 1,
            "placeholders": "constrain",
            "spearman_devtest": spearman(po_devtest),
            "spearman_dev": spearman(po_dev),
            "calibration_dev": calibration(po_dev),
            "calibration_devtest": calibration(po_devtest),
            "dev_20th_percentile": round(percentile, 4),
            "min_confidence_devtest": thresholded(po_devtest, threshold),
        },
        "seconds": {
            name: round(split["seconds"], 1)
            for name, split in [
                ("dev_nbest", dev),
                ("devtest_nbest", devtest),
                ("dev_po", po_dev),
                ("devtest_po", po_devtest),
            ]
        },
    }
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
