"""Catalogs of packages a model never saw, as a translator meets them (issues 40 and 41): each
of six Debian packages' German catalogs (none in gettext-en-de, none in the larger corpus of
benchmarks/debian_catalogs.py) has its translated singular entries split into halves by a hash
of the source. The first half plays the project's own translations, the second the entries to
fill: a project catalog holds the first half translated and the second empty, ``luong po``
fills it as a translator runs it, and BLEU and chrF (sacrebleu, through
``luong.evaluation.metrics``) score the second half's outputs against the package's own
translations.

    python benchmarks/unseen.py runs/de runs/de-large --catalogs cache/debian-de \
        [--adapt] [--tm] [--glossary] [--out docs/unseen.json]

``--adapt``: ``luong po --adapt DIR`` (each model fine-tuned on the project's first half, then
the second filled), and each adapted model's devtest BLEU (what adaptation costs the general
model). ``--adapt --mix FILE``: the same fine-tuning with general pairs mixed in, as ``luong
train --preset adapt --init-from MODEL --mix FILE --mix-ratio R`` on the split ``luong po
--adapt`` makes (``luong.catalogs.adapt.catalog_splits``), then ``luong po`` with the adapted model.
``--adapt --combine interpolate:W ensemble``: beside each adapted model, the general and the
adapted model combined: their weights interpolated (``luong average GENERAL ADAPTED --weights
1-W W``, ``luong.model.averaging``), or the two as an ensemble (``luong po GENERAL ADAPTED``),
each scored on the second half and on devtest like the adapted model.
``--tm``: a translation memory of the first half and gettext-en-de's train. With
``--glossary``: the glossary of ``glossary_terms`` (the method is its docstring). Each
configuration is one row per model; the catalogs come from benchmarks/debian_catalogs.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import polib

from luong.catalogs.adapt import catalog_splits
from luong.evaluation.metrics import bleu_chrf
from luong.model.averaging import average_checkpoints
from luong.translation.placeholders import keeps_placeholders

UNSEEN = {
    "system-config-printer-common": "system-config-printer.mo",  # printers, queues, jobs
    "seahorse": "seahorse.mo",  # keyrings, keys, secrets
    "nano": "nano.mo",  # a text editor
    "file-roller": "file-roller.mo",  # archives
    "simple-scan": "simple-scan.mo",  # scanning
    "deja-dup": "deja-dup.mo",  # backups
}
"""Package -> its catalog: six programs of different kinds, picked by hand before any model
decoded them (their terms are the issue's: queue, job, secret, keyring)."""

GETTEXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "gettext-en-de"  # ../shared


def first_half(source: str) -> bool:
    """The half a source falls in: the first byte of its SHA-256, even or odd."""
    return hashlib.sha256(source.encode("utf-8")).digest()[0] % 2 == 0


@dataclass
class Project:
    """One package's catalog cut into halves, written as the project a translator holds."""

    name: str
    catalog: Path  # first half translated, second half empty
    first: list[tuple[str, str]]  # (source, translation)
    second: list[tuple[str | None, str, str]]  # (context, source, reference)


def projects(catalogs: Path, work: Path) -> list[Project]:
    """The six projects, written under ``work``."""
    made = []
    for package, name in UNSEEN.items():
        original = polib.mofile(str(catalogs / package / name))
        catalog = polib.POFile()
        catalog.metadata = {
            "Project-Id-Version": package,
            "Language": "de",
            "MIME-Version": "1.0",
            "Content-Type": "text/plain; charset=UTF-8",
            "Content-Transfer-Encoding": "8bit",
        }
        first, second = [], []
        for entry in original:
            if not entry.msgid or entry.msgid_plural or not entry.msgstr:
                continue
            if first_half(entry.msgid):
                first.append((entry.msgid, entry.msgstr))
                msgstr = entry.msgstr
            else:
                second.append((entry.msgctxt, entry.msgid, entry.msgstr))
                msgstr = ""
            catalog.append(polib.POEntry(msgid=entry.msgid, msgstr=msgstr, msgctxt=entry.msgctxt))
        path = work / f"{Path(name).stem}.po"
        catalog.save(str(path))
        made.append(Project(Path(name).stem, path, first, second))
    return made


def luong(*args: str) -> subprocess.CompletedProcess[str]:
    """``luong ARGS`` as a person runs it (exit 3 of ``luong po``: entries whose format
    check failed, named on stderr, the catalog written)."""
    result = subprocess.run(
        [sys.executable, "-m", "luong", *args], capture_output=True, text=True, check=False
    )
    if result.returncode not in (0, 3):
        raise RuntimeError(f"luong {' '.join(args)}: {result.stderr.strip()}")
    return result


def outputs(filled: Path, project: Project) -> tuple[list[str], list[bool]]:
    """The filled msgstr of each second-half entry ("" where luong po left it empty), and
    whether it came from a translation memory (its ``# luong: from memory`` comment)."""
    found = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(filled))}
    entries = [found.get((context, source)) for context, source, _ in project.second]
    texts = [e.msgstr if e is not None else "" for e in entries]
    recalled = [e is not None and "luong: from memory" in e.tcomment for e in entries]
    return texts, recalled


def scores(hyps: list[str], refs: list[str]) -> dict[str, float]:
    """BLEU and chrF, rounded."""
    got = bleu_chrf(hyps, [[ref] for ref in refs])
    return {"bleu": round(float(got["bleu"]), 2), "chrf": round(float(got["chrf"]), 2)}


def devtest_bleu(*models: Path) -> dict[str, float]:
    """``luong eval MODEL [MODEL ...] --data gettext-en-de/devtest.tsv``: BLEU and chrF
    (several models: their ensemble)."""
    folders = [str(model) for model in models]
    got = json.loads(
        luong("eval", *folders, "--data", str(GETTEXT / "devtest.tsv"), "--json").stdout
    )
    return {"bleu": round(float(got["bleu"]), 2), "chrf": round(float(got["chrf"]), 2)}


WORD = re.compile(r"[A-Za-z][A-Za-z-]+")


def glossary_terms(projects: list[Project], least: int = 1) -> list[tuple[str, str]]:
    """A glossary from the projects' first halves, as a terminologist would draw it from a
    project's own translations: each first-half entry whose source is one or two words (a
    label: "Printer", "Print queue"; accelerators and trailing dots and colons taken out) and
    whose translation is at most two words is a candidate, its translation the target term;
    it is kept where the project uses that target consistently: of the other first-half
    entries whose source holds the term (whole words, any case), at least ``least``, and
    at least 80 % of them hold the target term as written (case kept: German writes its nouns
    with a capital anywhere, so a label's verb, "Öffnen", written small in a sentence, is
    not kept). A term of one capitalised word is listed in lower case (so that it matches in
    any case, ``luong.memory.glossary``'s rule), an all-capitals one as written."""
    pairs = [pair for p in projects for pair in p.first]
    terms: dict[str, str] = {}
    for p in projects:
        for source, target in p.first:
            term = re.sub(r"[_&]|\.\.\.$|…$|:$", "", source).strip()
            want = re.sub(r"[_&]|\.\.\.$|…$|:$", "", target).strip()
            if not (1 <= len(term.split()) <= 2 and 1 <= len(want.split()) <= 2):
                continue
            if not all(WORD.fullmatch(word) for word in term.split()) or len(term) < 4:
                continue
            if term.lower() in terms or term.isupper():
                continue
            pattern = re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.IGNORECASE)
            others = [t for s, t in pairs if s != source and pattern.search(s)]
            if len(others) >= least and sum(want in t for t in others) >= 0.8 * len(others):
                terms[term.lower()] = want
    return sorted(terms.items())


def term_held(
    triples: list[tuple[str, str, str]], glossary: list[tuple[str, str]]
) -> dict[str, int]:
    """Over (source, output, reference) triples, each glossary term a source holds (any
    case, word boundaries): how often, how often the output holds its target term (any
    case), and how often the reference does (how often the enforced form is the right
    one)."""
    seen = held = in_reference = 0
    for source, output, reference in triples:
        for term, target in glossary:
            if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", source, re.IGNORECASE):
                seen += 1
                held += target.lower() in output.lower()
                in_reference += target.lower() in reference.lower()
    return {"occurrences": seen, "held": held, "in_reference": in_reference}


def mixed(
    model: Path, project: Project, out: Path, mix: Path | None, ratio: float, flags: list[str]
) -> None:
    """``model`` fine-tuned on the project's first half with general pairs mixed in, into
    ``out``: the split of ``luong po --adapt``, then ``luong train --preset adapt``."""
    train, dev = catalog_splits(project.catalog, "de")
    for name, pairs in (("train", train), ("dev", dev)):
        text = "".join(f"{source}\t{target}\n" for source, target in pairs)
        (out.parent / f"{out.name}.{name}.tsv").write_text(text, encoding="utf-8")
    luong(
        "train", "--preset", "adapt", "--init-from", str(model),
        "--train", str(out.parent / f"{out.name}.train.tsv"),
        "--dev", str(out.parent / f"{out.name}.dev.tsv"),
        "--out", str(out), *flags,
        *(["--mix", str(mix), "--mix-ratio", f"{ratio:g}"] if mix is not None else []),
    )  # fmt: skip


def filled_row(
    folders: list[Path],
    project: Project,
    work: Path,
    flags: list[str],
    started: float,
    devtest: list[Path] | None,
) -> dict[str, object]:
    """``luong po FOLDER [FOLDER ...] CATALOG FLAGS`` (several: an ensemble), scored, with the
    devtest figures of the models ``devtest`` where given (seconds: the fill's alone)."""
    filled = work / f"{project.name}.{folders[-1].name}.filled.po"
    done = luong(
        "po", *map(str, folders), str(project.catalog), "--out", str(filled), "--force",
        "--to-utf8", *flags,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    hyps, recalled = outputs(filled, project)
    row: dict[str, object] = {
        "project": project.name,
        "entries": len(project.second),
        **scores(hyps, [ref for _, _, ref in project.second]),
        "seconds": round(seconds, 1),
        # The scratch folder left out: its catalogs are named as within it, not by /tmp.
        "stderr": [line.replace(f"{work}/", "") for line in done.stderr.strip().splitlines()[-3:]],
        "outputs": hyps,
        "recalled": recalled,
    }
    if devtest is not None:
        row["devtest"] = devtest_bleu(*devtest)
    return row


def combined(
    model: Path, adapted: Path, project: Project, work: Path, flags: list[str], combine: str
) -> dict[str, object]:
    """The general ``model`` and its ``adapted`` form combined as ``combine`` says
    (``interpolate:W``: their weights, W the adapted model's; ``ensemble``), scored."""
    started = time.perf_counter()
    if combine == "ensemble":
        pair = [model, adapted]
        return filled_row(pair, project, work, flags, started, pair)
    weight = float(combine.removeprefix("interpolate:"))
    mixed = work / f"{project.name}.{model.name}.interpolated-{weight:g}"
    average_checkpoints([model, adapted], mixed, force=True, weights=[1 - weight, weight])
    return filled_row([mixed], project, work, flags, started, [mixed])


def run(
    model: Path,
    project: Project,
    work: Path,
    flags: list[str],
    adapt: bool,
    mix: tuple[Path | None, float, list[str]] | None = None,
    combine: list[str] | None = None,
) -> dict[str, dict[str, object]]:
    """``luong po MODEL CATALOG FLAGS`` (``--adapt`` into ``work``, or first fine-tuned with
    ``mix``), scored; with ``combine``, also each combination of the model and its adapted
    form (``combined``), by its name."""
    adapted = work / f"{project.name}.{model.name}.adapted"
    extra = ["--adapt", str(adapted)] if adapt and mix is None else []
    started = time.perf_counter()
    filling = model
    if adapt and mix is not None:
        mixed(model, project, adapted, *mix)
        filling = adapted
    devtest = [adapted] if adapt else None
    rows = {"": filled_row([filling], project, work, extra + flags, started, devtest)}
    for way in combine or []:
        rows[way] = combined(model, adapted, project, work, flags, way)
    return rows


def pool(
    made: list[Project],
    per: list[dict[str, object]],
    glossary: list[tuple[str, str]],
    known: set[str] | None,
) -> dict[str, object]:
    """The projects' rows pooled: BLEU and chrF of every second-half entry; the glossary's
    terms held; the entries a memory filled and how many kept their source's placeholders;
    the entries whose source ``known`` lacks (accelerators out, whitespace collapsed, as
    ``luong corpus`` keys a source), scored apart."""
    triples, reused = [], []
    for project, row in zip(made, per, strict=True):
        texts, recalled = row.pop("outputs"), row.pop("recalled")
        for (_, source, ref), hyp, memory in zip(project.second, texts, recalled, strict=True):  # type: ignore[call-overload]
            triples.append((source, hyp, ref))
            if memory:
                reused.append(keeps_placeholders(source, hyp))
    hyps, refs = [h for _, h, _ in triples], [r for _, _, r in triples]
    pooled: dict[str, object] = {"entries": len(refs), **scores(hyps, refs)}
    if glossary:
        pooled["terms"] = term_held(triples, glossary)
    if reused:
        pooled["from_memory"] = {"entries": len(reused), "placeholders_kept": sum(reused)}
    if known is not None:
        new = [t for t in triples if " ".join(re.sub("[_&]", "", t[0]).split()) not in known]
        pooled["not_in_known"] = {
            "entries": len(new),
            **scores([h for _, h, _ in new], [r for _, _, r in new]),
        }
    return pooled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", type=Path, nargs="+")
    parser.add_argument("--catalogs", type=Path, required=True)
    parser.add_argument("--adapt", action="store_true")
    parser.add_argument("--mix", type=Path, help="with --adapt: general pairs mixed in")
    parser.add_argument("--mix-ratio", type=float, default=1.0)
    parser.add_argument(
        "--combine",
        nargs="+",
        default=[],
        help="with --adapt: interpolate:W (the adapted model's weight W) and/or ensemble",
    )
    parser.add_argument(
        "--train-flags", default="", help="with --adapt: luong train's flags over the preset's"
    )
    parser.add_argument("--tm", action="store_true")
    parser.add_argument("--glossary", action="store_true")
    parser.add_argument(
        "--known", type=Path, help="a TSV: also score the entries whose source it lacks"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    known = None
    if args.known is not None:
        with open(args.known, encoding="utf-8") as lines:
            known = {line.split("\t", 1)[0] for line in lines}

    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(["python", "benchmarks/unseen.py", *sys.argv[1:]]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        made = projects(args.catalogs, work)
        result["projects"] = {
            p.name: {"first": len(p.first), "second": len(p.second)} for p in made
        }
        flags: list[str] = []
        glossary: list[tuple[str, str]] = []
        if args.glossary:
            glossary = glossary_terms(made)
            path = work / "glossary.tsv"
            path.write_text("".join(f"{s}\t{t}\n" for s, t in glossary), encoding="utf-8")
            flags += ["--glossary", str(path)]
            result["glossary"] = glossary
        rows: dict[str, object] = {}
        variants = [("", flags)]
        if args.tm or args.glossary:  # each project without, then with: timed side by side
            variants = [("without", []), ("with", flags)]
        for model in args.models:
            names = [name for name, _ in variants]
            names += [f"{name} {way}".strip() for name in names for way in args.combine]
            per: dict[str, list[dict[str, object]]] = {name: [] for name in names}
            for project in made:
                tm = []
                if args.tm:
                    tm = ["--tm", str(project.catalog), str(GETTEXT / "train.tsv")]
                mix = None
                if args.mix is not None or args.train_flags:
                    mix = (args.mix, args.mix_ratio, args.train_flags.split())
                for name, given in variants:
                    extra = given + (tm if name != "without" else [])
                    got = run(model, project, work, extra, args.adapt, mix, args.combine)
                    for way, row in got.items():
                        per[f"{name} {way}".strip()].append(row)
            for name in names:
                pooled = pool(made, per[name], glossary, known)
                if not args.adapt:
                    pooled["devtest"] = devtest_bleu(model)
                rows[f"{model} {name}".strip()] = {"pooled": pooled, "projects": per[name]}
        result["models"] = rows
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
