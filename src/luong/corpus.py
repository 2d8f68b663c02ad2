"""Parallel corpora from gettext catalogs (``luong corpus``): the translations every Linux
machine carries in ``/usr/share/locale/LANG/LC_MESSAGES``, or any ``.po`` and ``.mo`` files,
turned into ``train.tsv``, ``dev.tsv`` and ``devtest.tsv`` for one language pair, as OPUS
built its GNOME, KDE and Ubuntu corpora.

    options = CorpusOptions()
    corpus = build_corpus(catalog_files([], "de"), options, "de")   # this machine's German
    write_corpus(corpus, "runs/corpus-de", "en", "de", options)

The rules, in the order they apply to each catalog's entries
(``luong.config.faces.CorpusOptions``):

- the header, obsolete, fuzzy and untranslated entries are left out (a fuzzy translation is
  a guess nobody has reviewed);
- plural entries are left out, unless ``plurals``: then the singular msgid pairs with
  ``msgstr[0]`` and the plural msgid with the last form;
- an entry with a context (``msgctxt``) keeps its pair with the context dropped
  (``context="drop"``), or is left out (``"skip"``: its translation depends on a context
  the pair no longer shows);
- a keyboard accelerator (``_File``, ``&Open``: the marker the catalog uses, as
  ``luong po`` detects it) is taken out of both sides;
- whitespace is collapsed (line breaks and tabs included: a TSV line is one pair) and the
  ends stripped; a side left empty, or longer than ``max_len`` characters, drops the pair;
- each source once: where catalogs translate a source differently, the most frequent
  translation wins (ties: the first catalog's, in path order);
- a source of an ``exclude`` file (a TSV's first column, a catalog's msgids: another
  corpus's dev and test) is in no split;
- the catalog's declared charset is honoured (``luong.po_file`` reads a ``.po`` as msgfmt
  does; polib a ``.mo``); a catalog that does not read, or whose ``Language`` header names
  another language, is skipped, with the reason in the manifest.

Splits (``split_by``): ``"catalog"`` deals whole catalogs (by a hash of their domain name,
the same for every language) to devtest and dev until each holds its share of the pairs, so
that a test is made of catalogs never trained on; ``"hash"`` deals each source by a hash of
its text. Either way a source is in one split only: one that a dev or devtest catalog holds
too is taken out of train. The manifest (``manifest.json``) lists the catalogs, the counts
and what was dropped and why.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polib

from luong.catalog import detect_accelerator, find_accelerator, primary_language
from luong.config.faces import CorpusOptions
from luong.errors import LuongError, LuongTypeError
from luong.files import read_bounded, read_json, shown_names, write_folder
from luong.languages import check_language, locale_name
from luong.memory_index import INDEX_SUFFIX
from luong.po_file import decode_catalog

__all__ = [
    "CORPUS_FILES",
    "LOCALE_ROOT",
    "MAX_CATALOG_BYTES",
    "SPLITS",
    "Corpus",
    "build_corpus",
    "catalog_files",
    "check_corpus_folder",
    "excluded_sources",
    "write_corpus",
]

LOCALE_ROOT = Path("/usr/share/locale")
"""Where a system keeps its compiled catalogs: ``LOCALE_ROOT/LANG/LC_MESSAGES/DOMAIN.mo``."""
SPLITS = ("train", "dev", "devtest")
MANIFEST = "manifest.json"
CORPUS_FILES = (*(f"{split}.tsv" for split in SPLITS), MANIFEST)
"""What a corpus folder holds, and nothing else (but the index a translation memory over a
split caches beside it, ``train.tsv.tm-index.npz``)."""
KIND = "luong gettext corpus"
MAX_CATALOG_BYTES = 64 * 1024 * 1024  # the largest catalog read (glibc's libc.mo: 1 MB)
CATALOG_SUFFIXES = (".po", ".mo")


@dataclass
class Corpus:
    """The pairs of each split and what the catalogs gave: ``catalogs`` (path, domain,
    split, entries read, pairs kept), ``skipped`` (path and reason), ``dropped`` (a count
    per reason)."""

    splits: dict[str, list[tuple[str, str]]]
    catalogs: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)


def catalog_files(
    paths: Sequence[str | os.PathLike[str]],
    tgt_lang: str,
    root: str | os.PathLike[str] = LOCALE_ROOT,
) -> list[Path]:
    """The catalogs to read, sorted by path: the ``.po`` and ``.mo`` files of ``paths``
    (files, or folders searched below), or with none the target language's folder of the
    locale tree ``root`` (``root/de/LC_MESSAGES``).

    Raises:
        ValueError: ``tgt_lang`` is not a language code; a path that does not exist or is
            no catalog; no catalog found.
    """
    check_language(tgt_lang, "tgt_lang")
    if not paths:
        paths = [Path(root) / locale_name(tgt_lang) / "LC_MESSAGES"]
    found: set[Path] = set()
    for given in map(Path, paths):
        if given.is_dir():
            found.update(
                p for p in given.rglob("*") if p.suffix in CATALOG_SUFFIXES and p.is_file()
            )
        elif given.is_file():
            if given.suffix not in (*CATALOG_SUFFIXES, ".pot"):
                raise LuongError(f"{given}: expected a .po or .mo catalog, or a folder of them")
            found.add(given)
        else:
            raise LuongError(f"{given}: no such file or folder")
    if not found:
        where = ", ".join(map(str, paths))
        raise LuongError(f"{where}: no .po or .mo catalogs in it")
    return sorted(found)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _unaccelerated(text: str, marker: str) -> str:
    if marker in ("_", "&"):
        at = find_accelerator(text, marker)
        if at is not None:
            return text[:at] + text[at + 1 :]
    return text


def _read(path: Path) -> polib.POFile | polib.MOFile:
    """A catalog's entries: a ``.mo`` through polib, a ``.po`` as msgfmt reads it (at most
    ``MAX_CATALOG_BYTES``)."""
    data = read_bounded(path, MAX_CATALOG_BYTES)
    if path.suffix == ".mo":
        return polib.mofile(data)  # polib reads a .mo's bytes as well as its path
    return polib.pofile(decode_catalog(data))


def _catalog_pairs(
    entries: Iterable[polib.POEntry], options: CorpusOptions, dropped: Counter[str]
) -> list[tuple[str, str]]:
    """The pairs of one catalog's entries, by the rules; what is left out counted in
    ``dropped``."""
    kept: list[tuple[str, str]] = []
    for entry in entries:
        if entry.msgid == "" or entry.obsolete:
            continue  # the header, an obsolete entry: no message
        if "fuzzy" in entry.flags:
            dropped["fuzzy"] += 1
        elif entry.msgctxt is not None and options.context == "skip":
            dropped["context"] += 1
        elif entry.msgid_plural:
            forms = [entry.msgstr_plural[k] for k in sorted(entry.msgstr_plural)]
            if not forms or not all(forms):
                dropped["untranslated"] += 1
            elif not options.plurals:
                dropped["plural"] += 1
            else:
                kept += [(entry.msgid, forms[0]), (entry.msgid_plural, forms[-1])]
        elif not entry.msgstr:
            dropped["untranslated"] += 1
        else:
            kept.append((entry.msgid, entry.msgstr))
    marker = detect_accelerator([source for source, _ in kept])
    pairs = []
    for source, target in kept:
        source, target = (_collapse(_unaccelerated(t, marker)) for t in (source, target))
        if not source or not target:
            dropped["empty"] += 1
        elif max(len(source), len(target)) > options.max_len:
            dropped["too long"] += 1
        else:
            pairs.append((source, target))
    return pairs


def _language_of(catalog: polib.POFile | polib.MOFile) -> str:
    return str(catalog.metadata.get("Language", "")).strip()


def excluded_sources(paths: Sequence[str | os.PathLike[str]]) -> set[str]:
    """The sources no split may hold: a TSV file's first column (a line's text before its
    first tab), or a catalog's msgids, each whitespace-collapsed, and also without a
    keyboard accelerator (``_`` or ``&``) where it has one.

    Raises:
        ValueError: a file that does not read (named).
    """
    sources: set[str] = set()
    for path in map(Path, paths):
        if path.suffix in (*CATALOG_SUFFIXES, ".pot"):
            try:
                texts = [entry.msgid for entry in _read(path) if entry.msgid]
            except (LuongError, OSError, ValueError) as error:
                raise LuongError(f"{path}: {error}") from None
        else:
            data = read_bounded(path, MAX_CATALOG_BYTES * 16)
            try:
                lines = data.decode("utf-8").removeprefix("\ufeff").splitlines()
            except UnicodeDecodeError as error:
                raise LuongError(
                    f"{path}: not UTF-8 ({error.reason} at byte {error.start})"
                ) from None
            texts = [line.split("\t", 1)[0] for line in lines]
        for text in texts:
            sources.add(_collapse(text))
            for marker in ("_", "&"):
                sources.add(_collapse(_unaccelerated(text, marker)))
    sources.discard("")
    return sources


def _domain_hash(text: str) -> float:
    """A number in [0, 1) from ``text``, the same on every machine (not Python's hash)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2**64


def build_corpus(
    files: Sequence[Path],
    options: CorpusOptions,
    tgt_lang: str,
    exclude: set[str] | None = None,
) -> Corpus:
    """The corpus of ``files`` (``catalog_files``) into ``tgt_lang``, by ``options`` (the
    module's docstring has the rules), no source of ``exclude`` in any split.

    Raises:
        ValueError: no catalog gave a pair.
    """
    if not isinstance(options, CorpusOptions):
        raise LuongTypeError(f"options: expected CorpusOptions, got {type(options).__name__}")
    corpus = Corpus(splits={split: [] for split in SPLITS})
    exclude = exclude or set()
    read: list[tuple[dict[str, Any], list[tuple[str, str]]]] = []
    for path in files:
        try:
            catalog = _read(path)
        except Exception as error:  # noqa: BLE001 - a catalog that does not read is skipped
            corpus.skipped.append({"path": str(path), "reason": str(error) or type(error).__name__})
            continue
        language = _language_of(catalog)
        if language and primary_language(language) != primary_language(tgt_lang):
            reason = f"its Language header says {language!r}, not {tgt_lang}"
            corpus.skipped.append({"path": str(path), "reason": reason})
            continue
        pairs = _catalog_pairs(catalog, options, corpus.dropped)
        entries = sum(1 for entry in catalog if entry.msgid and not entry.obsolete)
        info: dict[str, Any] = {"path": str(path), "domain": path.stem}
        info.update(entries=entries, pairs=len(pairs))
        read.append((info, pairs))
    # Each source once: its most frequent translation, ties to the first seen.
    translations: dict[str, Counter[str]] = {}
    where: dict[str, list[int]] = {}  # the catalogs (indices into read) that hold a source
    for index, (_, pairs) in enumerate(read):
        for source, target in pairs:
            if source in exclude:
                corpus.dropped["excluded"] += 1
                continue
            translations.setdefault(source, Counter())[target] += 1
            where.setdefault(source, []).append(index)
    total = sum(sum(c.values()) for c in translations.values())
    corpus.dropped["duplicate source"] += total - len(translations)
    if not translations:
        raise LuongError(
            f"no pairs: {len(files)} catalogs read, {len(corpus.skipped)} skipped; "
            f"dropped: {dict(corpus.dropped) or 'nothing'}"
        )
    split_of_catalog = _deal_catalogs(read, options) if options.split_by == "catalog" else {}
    for info, _ in read:
        info["split"] = split_of_catalog.get(info["path"])
        corpus.catalogs.append(info)
    order = {split: rank for rank, split in enumerate(("devtest", "dev", "train"))}
    for source, counts in translations.items():  # in the order first seen
        if options.split_by == "catalog":
            splits = {split_of_catalog[read[i][0]["path"]] for i in where[source]}
            split = min(splits, key=order.__getitem__)  # a held-out catalog's source: not train
            for other in splits - {split}:  # a catalog of that split held it too
                corpus.dropped[f"held out of {other}"] += 1
        else:
            at = _domain_hash(source)
            split = (
                "devtest"
                if at < options.devtest
                else "dev"
                if at < options.devtest + options.dev
                else "train"
            )
        target = counts.most_common(1)[0][0]  # ties: the first seen (Counter keeps order)
        corpus.splits[split].append((source, target))
    return corpus


def _deal_catalogs(
    read: list[tuple[dict[str, Any], list[tuple[str, str]]]], options: CorpusOptions
) -> dict[str, str]:
    """Each catalog's split: in the order of a hash of its domain, a catalog goes to devtest
    while devtest holds less than ``options.devtest`` of the pairs and the catalog does not
    take it past a quarter above that share (a long list such as ISO 639's names would make
    a test of itself), else to dev likewise, else to train."""
    total = sum(len(pairs) for _, pairs in read)
    ranked = sorted(read, key=lambda item: (_domain_hash(item[0]["domain"]), item[0]["path"]))
    dealt: dict[str, str] = {}
    held = {"devtest": 0, "dev": 0}
    for info, pairs in ranked:
        want = {s: getattr(options, s) * total for s in held}
        split = next(
            (
                s
                for s in ("devtest", "dev")
                if held[s] < want[s] and held[s] + len(pairs) <= 1.25 * want[s]
            ),
            "train",
        )
        if split != "train":
            held[split] += len(pairs)
        dealt[info["path"]] = split
    return dealt


def check_corpus_folder(out: str | os.PathLike[str], force: bool = False) -> None:
    """Check that ``write_corpus`` may write the folder ``out``: new or empty, or with
    ``force`` an earlier corpus that holds nothing else.

    Raises:
        ValueError: ``out`` holds other files, or a file is at its place.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise LuongError(f"{out}: a file, not a folder; --out names a new or empty folder")
    if out.is_dir() and any(out.iterdir()):
        names = sorted(p.name for p in out.iterdir())
        # a translation memory's index of a split (luong.memory_index) goes with the corpus
        own = {*CORPUS_FILES, *(f"{split}.tsv{INDEX_SUFFIX}" for split in SPLITS)}
        earlier = (out / MANIFEST).is_file() and set(names) <= own
        if earlier:  # luong's corpus, holding nothing else
            kept = read_json(out / MANIFEST)
            earlier = isinstance(kept, dict) and kept.get("kind") == KIND
        if not (earlier and force):
            hint = " (an earlier corpus: --force replaces it)" if earlier else ""
            raise LuongError(
                f"{out}: not empty (it holds {shown_names(names)}){hint}; choose a new or "
                "empty folder"
            )


def write_corpus(
    corpus: Corpus,
    out: str | os.PathLike[str],
    src_lang: str,
    tgt_lang: str,
    options: CorpusOptions,
    force: bool = False,
) -> dict[str, Any]:
    """Write ``corpus`` into the folder ``out``, all or nothing: ``train.tsv``, ``dev.tsv``,
    ``devtest.tsv`` (``source<TAB>target`` a line) and ``manifest.json``; returns the
    manifest. ``out`` must be new or empty, or with ``force`` an earlier corpus that holds
    nothing else.

    Raises:
        ValueError: ``out`` holds other files, or a file is at its place.
    """
    out = Path(out)
    check_corpus_folder(out, force)
    manifest = {
        "kind": KIND,
        "src_lang": src_lang,
        "tgt_lang": tgt_lang,
        "options": asdict(options),
        "pairs": {split: len(pairs) for split, pairs in corpus.splits.items()},
        "catalogs_read": len(corpus.catalogs),
        "dropped": dict(sorted(corpus.dropped.items())),
        "skipped_catalogs": corpus.skipped,
        "catalogs": corpus.catalogs,
    }

    def fill(folder: Path) -> None:
        for split, pairs in corpus.splits.items():
            text = "".join(f"{source}\t{target}\n" for source, target in pairs)
            (folder / f"{split}.tsv").write_text(text, encoding="utf-8")
        (folder / MANIFEST).write_text(
            json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )

    write_folder(out, fill)
    return manifest
