"""Placeholders kept by masking and by constrained beam search, against plain beam search:
BLEU, chrF, the share of outputs that keep every placeholder, and the time, on gettext-en-de's
dev and devtest and on the messages of the test catalogs (nano, wdiff).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/placeholders.py runs/translation \\
        [--data ../shared/data/gettext-en-de] [--beam 5] [--out docs/placeholders.json]

Each set is decoded four ways with the library's functions: ``off`` (``translate``, the
source as it is), ``mask`` (``luong.translation.placeholder_search.translate_masked``),
``constrain`` (``translate_constrained``: beam search, then, where an output misses a span,
constrained beam search with the source's spans as exact constraints, masking where that fails too)
and ``constrain-all`` (every source decoded by constrained beam search, whether or not beam
search alone kept its spans). "Kept" counts the
outputs whose placeholders (``find_placeholders``: printf, Python, braces, tags, options,
URLs, ``\\n``) are the source's, each as often (``keeps_placeholders``); "with placeholders"
restricts BLEU and chrF to the sources that hold one. Dev picks ``luong po``'s default.
The catalogs' messages are their msgids (and msgid_plurals) a line at a time, as
``luong po`` sends them, scored against the packages' own German where the entry has one
translation line per source line.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polib
import torch

import luong
from luong.config.search import SearchOptions
from luong.evaluation.metrics import bleu_chrf
from luong.model.ensemble import Decodable
from luong.search import decode, hypothesis_text
from luong.translation.placeholder_search import (
    kept_or_masked,
    spellable_spans,
    translate_constrained,
    translate_masked,
)
from luong.translation.placeholders import find_placeholders, keeps_placeholders
from luong.translation.translator import translate
from luong.version import __version__

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "tests" / "data" / "catalogs"


def tsv_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        source, target = line.split("\t")
        pairs.append((source, target))
    return pairs


def catalog_pairs(name: str) -> list[tuple[str, str]]:
    """The lines ``luong po`` translates from ``name``'s messages, with the package's own
    German line where the entry's translation has as many lines."""
    pairs = []
    for entry in polib.pofile(str(CATALOGS / f"{name}.de.po")):
        if entry.obsolete or not entry.msgid:
            continue
        sides = [(entry.msgid, entry.msgstr or entry.msgstr_plural.get(0, ""))]
        if entry.msgid_plural:
            sides.append((entry.msgid_plural, entry.msgstr_plural.get(1, "")))
        for source, target in sides:
            lines, refs = source.split("\n"), target.split("\n")
            if len(refs) != len(lines):
                refs = [""] * len(lines)
            pairs += [(s.strip(), r.strip()) for s, r in zip(lines, refs, strict=True) if s.strip()]
    return pairs


def constrain_all(model: Decodable, texts: list[str], options: SearchOptions) -> list[str]:
    """Every source decoded by constrained beam search with its spans as exact constraints
    (what ``translate_constrained`` does only where beam search missed a span), an output
    that still misses one masked: the cost of constraining every sentence."""
    phrases = [spellable_spans(model, text) or [] for text in texts]
    lists = decode(model, texts, options, constraints=phrases, exact=True)
    return [
        kept_or_masked(model, text, [hypothesis_text(model, h) for h in hyps], options)[0]
        if hyps
        else ""
        for text, hyps in zip(texts, lists, strict=True)
    ]


def score(
    sources: Sequence[str], outputs: Sequence[str], refs: Sequence[str]
) -> dict[str, float | int]:
    scored = [(o, r) for o, r in zip(outputs, refs, strict=True) if r]
    whole = bleu_chrf([o for o, _ in scored], [[r] for _, r in scored])
    held = [i for i, s in enumerate(sources) if find_placeholders(s)]
    inside = [(outputs[i], refs[i]) for i in held if refs[i]]
    held_scores = bleu_chrf([o for o, _ in inside], [[r] for _, r in inside])
    kept = sum(keeps_placeholders(s, o) for s, o in zip(sources, outputs, strict=True))
    kept_held = sum(keeps_placeholders(sources[i], outputs[i]) for i in held)
    return {
        "sentences": len(sources),
        "with_placeholders": len(held),
        "bleu": round(float(whole["bleu"]), 2),
        "chrf": round(float(whole["chrf"]), 2),
        "bleu_with_placeholders": round(float(held_scores["bleu"]), 2),
        "chrf_with_placeholders": round(float(held_scores["chrf"]), 2),
        "kept": kept,
        "kept_with_placeholders": kept_held,
        "kept_share": round(kept / len(sources), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/gettext-en-de")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--sets", nargs="+", default=["dev", "devtest", "nano", "wdiff"])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "placeholders.json")
    args = parser.parse_args()
    model = luong.load(args.model[0] if len(args.model) == 1 else args.model).model
    options = SearchOptions(beam=args.beam)
    mechanisms: dict[str, Callable[[list[str]], list[str]]] = {
        "off": lambda texts: translate(model, texts, options),
        "mask": lambda texts: [h[0] for h in translate_masked(model, texts, options)],
        "constrain": lambda texts: [h[0] for h in translate_constrained(model, texts, options)],
        "constrain-all": lambda texts: constrain_all(model, texts, options),
    }
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for name in args.sets:
        pairs = tsv_pairs(args.data / f"{name}.tsv") if name in ("dev", "devtest") else None
        pairs = pairs if pairs is not None else catalog_pairs(name)
        sources, refs = [s for s, _ in pairs], [r for _, r in pairs]
        results[name] = {}
        for mechanism, run in mechanisms.items():
            start = time.perf_counter()
            outputs = run(sources)
            seconds = time.perf_counter() - start
            figures: dict[str, Any] = {**score(sources, outputs, refs)}
            figures["seconds"] = round(seconds, 1)
            results[name][mechanism] = figures
            print(name, mechanism, json.dumps(figures), flush=True)
    record = {
        "command": "benchmarks/placeholders.py "
        + " ".join(str(m) for m in args.model)
        + f" --beam {args.beam}",
        "model": [str(m) for m in args.model],
        "beam": args.beam,
        "torch": torch.__version__,
        "luong": __version__,
        "threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d"),
        "results": results,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print("| set | mechanism | BLEU | chrF | BLEU (with placeholders) | kept | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, by in results.items():
        for mechanism, f in by.items():
            print(
                f"| {name} | {mechanism} | {f['bleu']} | {f['chrf']} | "
                f"{f['bleu_with_placeholders']} | {f['kept_with_placeholders']} of "
                f"{f['with_placeholders']} | {f['seconds']} |"
            )


if __name__ == "__main__":
    main()
