"""A second language end to end (issue 40): a model trained on the corpus ``luong corpus``
harvests from this machine's catalogs fills the held-out catalogs of that corpus with ``luong
po``, scored against their own translations.

    python benchmarks/second_language.py runs/fr runs/corpus-fr --tgt-lang fr \
        [--catalogs FILE.mo ...] [--out docs/french.json]

For each catalog the corpus dealt to devtest (its manifest; whole catalogs, never trained
on), or each of ``--catalogs`` (those a corpus split by hash left out with ``--exclude``):
its singular entries become a template (each msgstr emptied, the header's Language kept),
``luong po --to-utf8`` fills it as a translator would run it (the model's decoding
defaults; in UTF-8, since a model may write what a catalog's older charset cannot hold),
and BLEU and chrF (sacrebleu, through ``luong.evaluation.metrics``) score every filled msgstr
against the catalog's own. Also ``luong eval MODEL --data CORPUS/devtest.tsv``: the devtest split's
figures. One JSON object out.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polib

from luong.evaluation.metrics import bleu_chrf


def luong(*args: str) -> subprocess.CompletedProcess[str]:
    """``luong ARGS`` as a person runs it (exit 3 of ``luong po``: entries whose format
    check failed, named on stderr, the catalog written)."""
    result = subprocess.run(
        [sys.executable, "-m", "luong", *args], capture_output=True, text=True, check=False
    )
    if result.returncode not in (0, 3):
        raise RuntimeError(f"luong {' '.join(args)}: {result.stderr.strip()}")
    return result


def fill(
    model: Path, path: Path, tgt_lang: str, work: Path, pooled: list[tuple[str, str]]
) -> dict[str, object]:
    """The catalog ``path`` emptied, filled by ``luong po``, scored against itself; its
    (output, reference) pairs added to ``pooled``."""
    original = polib.mofile(str(path)) if path.suffix == ".mo" else polib.pofile(str(path))
    template = polib.POFile()
    template.metadata = {**original.metadata, "Language": tgt_lang}
    references = []
    for entry in original:
        if entry.msgid and not entry.msgid_plural and entry.msgstr and not entry.obsolete:
            template.append(polib.POEntry(msgid=entry.msgid, msgstr="", msgctxt=entry.msgctxt))
            references.append(entry.msgstr)
    empty, filled = work / f"{path.stem}.po", work / f"{path.stem}.{tgt_lang}.po"
    template.save(str(empty))
    started = time.perf_counter()
    done = luong("po", str(model), str(empty), "--out", str(filled), "--force", "--to-utf8")
    summary = "\n".join(filter(None, (done.stdout.strip(), done.stderr.strip())))
    seconds = time.perf_counter() - started
    outputs = [entry.msgstr for entry in polib.pofile(str(filled)) if entry.msgid]
    pooled.extend(zip(outputs, references, strict=True))
    scores = bleu_chrf(outputs, [[reference] for reference in references])
    return {
        "catalog": path.stem,
        "entries": len(references),
        "bleu": round(scores["bleu"], 2),
        "chrf": round(scores["chrf"], 2),
        "seconds": round(seconds, 1),
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("corpus", type=Path, help="the corpus folder luong corpus wrote")
    parser.add_argument("--tgt-lang", required=True)
    parser.add_argument(
        "--catalogs",
        type=Path,
        nargs="+",
        help="the held-out catalogs to fill (default: those the corpus dealt to devtest; a "
        "corpus split by hash deals none whole, and its --exclude'd catalogs go here)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    manifest = json.loads((args.corpus / "manifest.json").read_text(encoding="utf-8"))
    held_out = args.catalogs or [
        Path(c["path"]) for c in manifest["catalogs"] if c["split"] == "devtest"
    ]
    if not held_out:
        parser.error(f"{args.corpus}: no catalog in devtest; name the held-out ones: --catalogs")
    pooled: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as work:
        catalogs = [fill(args.model, p, args.tgt_lang, Path(work), pooled) for p in held_out]
    every = bleu_chrf([out for out, _ in pooled], [[ref] for _, ref in pooled])
    evaluated = json.loads(
        luong("eval", str(args.model), "--data", str(args.corpus / "devtest.tsv"), "--json").stdout
    )
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(["python", "benchmarks/second_language.py", *sys.argv[1:]]),
        "model": str(args.model),
        "corpus": {"pairs": manifest["pairs"], "catalogs": manifest["catalogs_read"]},
        "devtest": {k: evaluated[k] for k in ("bleu", "chrf", "sources", "bleu_signature")},
        "held_out_catalogs": catalogs,
        "held_out_entries": len(pooled),
        "held_out_bleu": round(float(every["bleu"]), 2),
        "held_out_chrf": round(float(every["chrf"]), 2),
    }
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
