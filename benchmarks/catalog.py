"""A model fills real catalogs (tests/data/catalogs: nano's and wdiff's templates) as ``luong
po`` does, scored against the packages' own German.

    python benchmarks/catalog.py MODEL [MODEL ...] [--out docs/catalog.json] [--beam 5]
        [--tgt-lang de] [--placeholders off mask constrain]

For each catalog: BLEU and chrF (sacrebleu, through ``luong.evaluation.metrics``) of every filled
msgstr (a plural entry's forms each count) against the package's msgstr; the share of filled format
entries (``c-format``) whose placeholders all match the msgid's (``FillSummary``); and the
errors of ``msgfmt --check-format --use-fuzzy`` (the filled entries are fuzzy, which msgfmt
otherwise leaves unchecked) on the filled file; for each way of keeping placeholders
(``luong po --placeholders``: off, mask, constrain). One JSON object out.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polib

from luong import RequestOptions, SearchOptions, TranslationRequest, load
from luong.catalogs.fill import fill_catalog, too_long, translate_messages
from luong.config.faces import PLACEHOLDER_MODES
from luong.evaluation.metrics import bleu_chrf

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "catalogs"
CATALOGS = ("nano", "wdiff")


def msgfmt_errors(path: Path) -> int:
    """The fatal errors msgfmt --check-format --use-fuzzy finds in ``path``."""
    result = subprocess.run(
        ["msgfmt", "--check-format", "--use-fuzzy", "-o", "/dev/null", str(path)],
        capture_output=True,
        text=True,
    )
    found = re.search(r"found (\d+) fatal errors?", result.stderr)
    if result.returncode and found is None:
        raise RuntimeError(f"msgfmt failed: {result.stderr.strip()}")
    return int(found.group(1)) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument(
        "--placeholders", nargs="+", choices=PLACEHOLDER_MODES, default=list(PLACEHOLDER_MODES)
    )
    args = parser.parse_args()
    translator = load([str(m) for m in args.model] if len(args.model) > 1 else str(args.model[0]))
    target = translator.tgt_lang or args.tgt_lang
    options = SearchOptions(beam=args.beam)
    name = "+".join(m.resolve().name for m in args.model)
    results: dict[str, dict[str, object]] = {}
    for catalog, mode in itertools.product(CATALOGS, args.placeholders):
        start = time.perf_counter()
        filled = fill_catalog(
            (DATA / f"{catalog}.pot").read_text(encoding="utf-8"),
            lambda texts, mode=mode: translate_messages(
                translator, texts, TranslationRequest(options, RequestOptions(placeholders=mode))
            ),
            target=target,
            model=name,
            too_long=too_long(translator, mode),  # as luong po: a line too long is left
        )
        seconds = time.perf_counter() - start
        reference = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(DATA / f"{catalog}.de.po"))}
        hyps, refs = [], []
        for entry in polib.pofile(filled.text):
            if not entry.fuzzy:
                continue
            ref = reference[(entry.msgctxt, entry.msgid)]
            if entry.msgid_plural:
                for n, text in sorted(entry.msgstr_plural.items()):
                    hyps.append(text)
                    refs.append(ref.msgstr_plural[n])
            else:
                hyps.append(entry.msgstr)
                refs.append(ref.msgstr)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{catalog}.de.po"
            path.write_text(filled.text, encoding="utf-8")
            errors = msgfmt_errors(path)
        s = filled.summary
        scores = bleu_chrf(hyps, [[r] for r in refs])
        results.setdefault(mode, {})[catalog] = {
            "entries_filled": s.filled,
            "left_empty": s.left_empty,
            "plural_entries": s.plural_entries,
            "plural_forms": s.plural_forms,
            "msgstrs_scored": len(hyps),
            "bleu": round(float(scores["bleu"]), 2),
            "chrf": round(float(scores["chrf"]), 2),
            "bleu_signature": scores["bleu_signature"],
            "format_entries": s.format_entries,
            "placeholders_match": s.format_matches,
            "placeholders_match_share": round(s.format_matches / max(s.format_entries, 1), 4),
            "msgfmt_check_format_errors": errors,
            "seconds": round(seconds, 1),
        }
        print(f"{catalog} {mode}: {json.dumps(results[mode][catalog])}", file=sys.stderr)
    report = {"model": [str(m) for m in args.model], "beam": args.beam, "placeholders": results}
    text = json.dumps(report, indent=2) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")


if __name__ == "__main__":
    main()
