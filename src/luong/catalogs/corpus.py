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
  a guess nobody has reviewed), and so is an entry holding an escape polib reads otherwise
  than msgfmt (``\a``, octal, hex: polib keeps them as text);
- plural entries are left out, unless ``plurals``: then the singular msgid pairs with
  ``msgstr[0]`` and the plural msgid with the last form;
- an entry with a context (``msgctxt``) keeps its pair with the context dropped
  (``context="drop"``), or is left out (``"skip"``: its translation depends on a context
  the pair no longer shows);
- a keyboard accelerator (``_File``, ``&Open``: the marker the catalog uses, as
  ``luong po`` detects it) is taken out of both sides;
- whitespace is collapsed (line breaks, tabs and U+2028 included: a TSV line is one pair)
  and the ends stripped; a side left empty, holding a control character (NUL, ESC: a
  ``.mo`` may hold any byte), or longer than ``max_len`` characters drops the pair;
- each source once: where catalogs translate a source differently, the most frequent
  translation wins (ties: the first catalog's, the target's own locale before the
  language's, ``pt_BR`` before ``pt`` for ``pt-BR``, then in path order);
- a source of an ``exclude`` file (a TSV's first column, a catalog's msgids: another
  corpus's dev and test) is in no split;
- a catalog is read as msgfmt reads it: a ``.po`` by ``luong.catalogs.po_file`` (its declared
  charset, msgfmt's syntax, a message defined twice refused), a ``.mo`` checked by
  ``luong.catalogs.mo_file`` as msgunfmt checks it (whole, no string named many times) before polib
  reads it; one that does not read is skipped, with the reason in the manifest;
- a catalog's language is its ``Language`` header's, else its locale folder's
  (``fr/LC_MESSAGES/app.mo``), else its file name's (``fr.po``); one of another language
  than the target (``luong.common.languages.locale_rank``: ``sr`` for ``sr-Latn``, ``pt_PT`` for
  ``pt-BR``) is skipped, named; one that names none is taken as the target's.

The target's catalogs in a locale tree are in the folders gettext names
(``luong.common.languages.locale_folders``: ``sr-Latn`` in ``sr@latin``, ``zh-Hant`` in
``zh_Hant`` and ``zh_TW``).

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
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polib

from luong.catalogs.entries import detect_accelerator, find_accelerator
from luong.catalogs.mo_file import check_mo, mo_header
from luong.catalogs.po_file import decode_catalog, find_header, header_fields, read_blocks
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import read_bounded, read_json, shown_names, write_folder
from luong.common.languages import (
    check_language,
    locale_folders,
    locale_parts,
    locale_rank,
    names_language,
)
from luong.common.progress import WorkProgress
from luong.config.faces import CorpusOptions
from luong.memory.index import INDEX_SUFFIX

__all__ = [
    "CORPUS_FILES",
    "LOCALE_ROOT",
    "MAX_CATALOG_BYTES",
    "SPLITS",
    "Corpus",
    "NoPairs",
    "build_corpus",
    "catalog_files",
    "dropped_counts",
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


class NoPairs(LuongError):
    """No catalog gave a pair (``build_corpus``); ``skipped`` holds each catalog skipped and
    why (``Corpus.skipped``)."""

    def __init__(self, message: str, skipped: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.skipped = skipped


def catalog_files(
    paths: Sequence[str | os.PathLike[str]],
    tgt_lang: str,
    root: str | os.PathLike[str] = LOCALE_ROOT,
) -> list[Path]:
    """The catalogs to read, sorted by path: the ``.po`` and ``.mo`` files of ``paths``
    (files, or folders searched below), or with none the target language's folders of the
    locale tree ``root``, as gettext names them (``luong.common.languages.locale_folders``:
    ``root/de/LC_MESSAGES``; ``sr-Latn``: ``root/sr@latin/LC_MESSAGES``; ``zh-Hant``:
    ``zh_Hant``, then ``zh_TW``), each folder's sorted, in that order.

    Raises:
        ValueError: ``tgt_lang`` is not a language code; a path that does not exist or is
            no catalog; no catalog found.
    """
    check_language(tgt_lang, "tgt_lang")
    if not paths:
        folders = [Path(root) / name / "LC_MESSAGES" for name in locale_folders(tgt_lang)]
        found = [
            file
            for folder in folders
            for file in sorted(folder.glob("*"))
            if file.suffix in CATALOG_SUFFIXES and file.is_file()
        ]
        if not found:
            shown = ", ".join(map(str, folders))
            raise LuongError(f"{shown}: no .po or .mo catalogs in it")
        return found
    chosen: set[Path] = set()
    for given in map(Path, paths):
        if given.is_dir():
            chosen.update(
                p for p in given.rglob("*") if p.suffix in CATALOG_SUFFIXES and p.is_file()
            )
        elif given.is_file():
            if given.suffix not in (*CATALOG_SUFFIXES, ".pot"):
                raise LuongError(f"{given}: expected a .po or .mo catalog, or a folder of them")
            chosen.add(given)
        else:
            raise LuongError(f"{given}: no such file or folder")
    if not chosen:
        where = ", ".join(map(str, paths))
        raise LuongError(f"{where}: no .po or .mo catalogs in it")
    return sorted(chosen)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _unaccelerated(text: str, marker: str) -> str:
    if marker in ("_", "&"):
        at = find_accelerator(text, marker)
        if at is not None:
            return text[:at] + text[at + 1 :]
    return text


@dataclass(frozen=True)
class _Catalog:
    """A catalog as msgfmt reads it: its header's Language, and its entries (the header
    left out), each with the escape polib reads otherwise than msgfmt ("" for none); read
    once asked for (``entries``), so that a catalog of another language is skipped unread."""

    language: str
    data: bytes  # a .mo's bytes, checked (b"" for a .po, whose entries are read already)
    read: list[tuple[polib.POEntry, str]] | None = None

    @property
    def entries(self) -> list[tuple[polib.POEntry, str]]:
        """The entries, a ``.mo``'s read by polib now (a message defined twice refused).

        Raises:
            ValueError: a message defined twice, bytes not in the header's charset.
        """
        if self.read is not None:
            return self.read
        mo = polib.mofile(self.data)  # polib reads a .mo's bytes as well as its path
        seen: set[tuple[str | None, str]] = set()
        for entry in mo:
            key = (entry.msgctxt, entry.msgid)
            if key in seen:
                raise LuongError(
                    f"duplicate message definition (msgid {polib.escape(entry.msgid)!r})"
                )
            seen.add(key)
        return [(entry, "") for entry in mo]


def _read(path: Path) -> _Catalog:
    """A catalog read as msgfmt reads it (at most ``MAX_CATALOG_BYTES``): a ``.po`` by
    ``luong.catalogs.po_file`` (its charset, msgfmt's syntax, a message defined twice refused, the
    escapes polib reads otherwise noted), a ``.mo`` checked by ``luong.catalogs.mo_file`` (whole, no
    string named many times) and its header read; its entries by polib when asked for.

    Raises:
        ValueError: what msgfmt or msgunfmt refuses, and what polib cannot read.
    """
    data = read_bounded(path, MAX_CATALOG_BYTES)
    if path.suffix == ".mo":
        check_mo(data)
        return _Catalog(mo_header(data).get("Language", ""), data)
    blocks = read_blocks(decode_catalog(data))
    at = find_header(blocks)
    language = header_fields(blocks[at]).get("Language", "") if at is not None else ""
    entries = [
        (block.entry, block.escape)
        for i, block in enumerate(blocks)
        if block.entry is not None and i != at
    ]
    return _Catalog(language.strip(), b"", entries)


def _catalog_language(path: Path, catalog: _Catalog) -> tuple[str, str]:
    """A catalog's language and where it says so: its ``Language`` header's, else the locale
    folder it is in (``fr/LC_MESSAGES/app.mo``), else its file name's when that is a locale
    (``fr.po``, ``pt_BR.po``); ``("", "")`` when none says."""
    if catalog.language:
        return catalog.language, "its Language header"
    if path.parent.name.startswith("LC_") and path.parent.parent.name:
        return path.parent.parent.name, "its locale folder"
    if locale_parts(path.stem) is not None:
        return path.stem, "its file name"
    return "", ""


def _catalog_pairs(
    entries: Iterable[tuple[polib.POEntry, str]], options: CorpusOptions, dropped: Counter[str]
) -> list[tuple[str, str]]:
    """The pairs of one catalog's entries, by the rules; what is left out counted in
    ``dropped``."""
    kept: list[tuple[str, str]] = []
    for entry, escape in entries:
        if entry.msgid == "" or entry.obsolete:
            continue  # the header, an obsolete entry: no message
        if escape:  # \a, octal, hex: polib keeps them as text, msgfmt reads them as bytes
            dropped["escape"] += 1
        elif "fuzzy" in entry.flags:
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
        elif _control(source) or _control(target):
            dropped["control character"] += 1  # NUL, ESC...: no text of a message
        elif max(len(source), len(target)) > options.max_len:
            dropped["too long"] += 1
        else:
            pairs.append((source, target))
    return pairs


def _control(text: str) -> bool:
    """Whether ``text`` holds a control character (NUL, BEL, ESC, DEL...: Unicode's Cc,
    whitespace aside, which ``_collapse`` has made spaces)."""
    return any(unicodedata.category(char) == "Cc" for char in text)


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
                texts = [entry.msgid for entry, _ in _read(path).entries if entry.msgid]
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
    progress: WorkProgress | None = None,
) -> Corpus:
    """The corpus of ``files`` (``catalog_files``) into ``tgt_lang``, by ``options`` (the
    module's docstring has the rules), no source of ``exclude`` in any split; ``progress``
    advanced by each catalog read (or skipped).

    Raises:
        ValueError: no catalog gave a pair.
    """
    if not isinstance(options, CorpusOptions):
        raise LuongTypeError(f"options: expected CorpusOptions, got {type(options).__name__}")
    corpus = Corpus(splits={split: [] for split in SPLITS})
    exclude = exclude or set()
    if progress is not None and not isinstance(progress, WorkProgress):
        raise LuongTypeError(f"progress: expected WorkProgress, got {type(progress).__name__}")
    ranked: list[tuple[int, dict[str, Any], list[tuple[str, str]]]] = []
    for path in files if progress is None else progress.each(files):
        try:
            catalog = _read(path)
        except Exception as error:  # noqa: BLE001 - a catalog that does not read is skipped
            corpus.skipped.append({"path": str(path), "reason": str(error) or type(error).__name__})
            continue
        language, said = _catalog_language(path, catalog)
        rank = locale_rank(language, tgt_lang) if language else 0  # none says: the target's
        if rank is None and said == "its Language header" and names_language(language, tgt_lang):
            rank = 0  # "Language: French", the language in words
        if rank is None:
            reason = f"{said} says {language!r}, not {tgt_lang}"
            corpus.skipped.append({"path": str(path), "reason": reason})
            continue
        try:
            found = catalog.entries
        except Exception as error:  # noqa: BLE001 - a catalog that does not read is skipped
            corpus.skipped.append({"path": str(path), "reason": str(error) or type(error).__name__})
            continue
        pairs = _catalog_pairs(found, options, corpus.dropped)
        entries = sum(1 for entry, _ in found if entry.msgid and not entry.obsolete)
        info: dict[str, Any] = {"path": str(path), "domain": path.stem}
        info.update(entries=entries, pairs=len(pairs), language=language or None)
        info["language_from"] = said.removeprefix("its ") or None
        ranked.append((rank, info, pairs))
    # The target's own locale first (pt_BR's catalogs before pt's for pt-BR), then by path:
    # where the translations of a source tie, the first catalog's wins.
    read = [(info, pairs) for _, info, pairs in sorted(ranked, key=lambda item: item[0])]
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
        skipped = [f"{skip['path']}: {skip['reason']}" for skip in corpus.skipped]
        why = "; ".join(skipped[:3]) + (f"; and {len(skipped) - 3} more" if skipped[3:] else "")
        raise NoPairs(
            f"no pairs: {len(files)} catalogs read, {len(skipped)} skipped"
            + (f" ({why})" if why else "")
            + f"; dropped: {dropped_counts(corpus.dropped)}",
            corpus.skipped,
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


def dropped_counts(dropped: Counter[str]) -> str:
    """What was dropped, as one line says it: ``3 fuzzy, 1 untranslated`` (``nothing``)."""
    return ", ".join(f"{count} {why}" for why, count in sorted(dropped.items()) if count) or (
        "nothing"
    )


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
        # a translation memory's index of a split (luong.memory.index) goes with the corpus
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
