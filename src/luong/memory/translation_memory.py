"""A translation memory: a project's earlier translations, recalled for new sources
(``luong po --tm``, ``luong translate --tm``, ``luong serve --tm``).

    memory = TranslationMemory.read(["project.tmx", "de.po"], "en", "de")
    recall = memory.recall("Open the file")   # Recall(exact=Match(...) or None, fuzzy=(...))

What it reads (``read``; each file by its name's suffix):

- a gettext catalog, ``.po`` or ``.mo`` (polib): its translated entries, neither fuzzy nor
  obsolete, the header left out; a plural entry gives two pairs, ``msgid`` -> ``msgstr[0]``
  and ``msgid_plural`` -> ``msgstr[1]`` (as ``luong po`` fills a plural entry). A ``.po``
  is checked first as msgfmt checks it (``luong.catalogs.po_grammar``; a message defined
  twice refused), as ``luong po`` reads a catalog. A catalog
  whose ``Language`` names another language than the target is refused;
- TMX 1.4 (lxml: internal entities expanded, external ones refused, no network): each
  ``<tu>``'s ``<tuv>`` in the source language and the one in the target language, a
  ``<tuv>``'s language read from ``xml:lang`` (or the ``lang`` of TMX 1.1 to 1.3); a
  language matches the model's when the model's code, case and ``_``/``-`` aside, is the
  tuv's or a prefix of its subtags (``de`` takes ``de-DE`` and ``DE``; ``pt-BR`` takes
  ``pt-br``, not ``pt-PT``); the first such tuv wins. The source language is the model's,
  else the header's ``srclang``. A ``<seg>``'s text is all the text inside it, inline
  elements' included (``<bpt>``, ``<ept>``, ``<ph>`` hold the native codes: ``<b>``). A
  ``<tu>`` that lacks one of the two is left out; a file whose ``<tuv>`` name no target
  language at all is an error, as is XML that does not parse (``FILE:LINE: ...``);
- anything else as TSV: ``source<TAB>target`` a line, UTF-8; a blank line is skipped, a line
  without exactly one tab or with an empty side is an error naming its line.

The index (built once, on construction): every source **whitespace-collapsed** (runs of
spaces, tabs and newlines one space, the ends stripped) and **case-sensitive** (a UI's
``Open`` and ``open`` are different strings, often translated with different capitals) is
a key of a dict (the exact lookup, O(1)); the distinct keys are also the choices of the
fuzzy lookup. Several entries of one key keep the order of the files as given, then of
each file: the first that passes the checks below is the one reused.

A memory of more than ``index_from`` keys (default ``EXACT_BAND``, 50,000: a general
corpus's train split) is looked up through a trigram index
(``luong.memory.index.NgramIndex``: a length band, then the keys that share the most
trigrams with the source), so that a source takes milliseconds among half a million keys;
``read`` builds the index of each such file once and caches it beside the file
(``FILE.tm-index.npz``), and builds it again when the file's bytes change. A smaller
memory, or a smaller file of several, is scanned whole.

``recall(source, terms)`` (``Recall``):

- **exact**: the first entry of the source's key whose translation could be an output of
  the source (``unfit_reason``): it keeps the source's placeholders
  (``luong.translation.placeholders.keeps_placeholders``: ``find_placeholders``' spans as a
  multiset, and the arguments taken in order in the same order, as ``msgfmt --check-format`` asks);
  it holds no line break, tab, NUL or other control character beyond those of the source
  (what a model's output never holds, ``luong.common.lines``: a memory's translation that held one
  broke ``luong translate``'s N lines in, N out, and a catalog's msgstr); it holds each
  of ``terms``, the glossary's target terms of the source
  (``luong.memory.glossary.Glossary.targets``). An entry of the key that fails a check is not
  reused: it becomes the first fuzzy match (score 100) with a note saying why, and the model
  translates the source;
- **fuzzy**: the other keys scored with rapidfuzz's ``fuzz.ratio`` (the normalised Indel
  similarity, 100 * (1 - distance / (len(a) + len(b))), on the whitespace-collapsed,
  case-sensitive keys; ``process.extract``, one C loop over the keys, or over those the
  index chooses) at or above ``threshold`` (default ``DEFAULT_THRESHOLD``), best first
  (ties in memory order), at most ``limit`` (default ``DEFAULT_LIMIT``), each key with its
  first entry's translation.

Only the text is compared: a catalog's ``msgctxt`` and a TMX's properties are not.
"""

from __future__ import annotations

import heapq
import os
import struct
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree
from rapidfuzz import fuzz, process

from luong.catalogs.mo_file import check_mo
from luong.catalogs.po_grammar import check_grammar
from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import read_bounded, read_text_lines
from luong.common.lines import LINE_BREAKS
from luong.config.faces import TM_MATCHES, TM_THRESHOLD
from luong.memory.index import EXACT_BAND, NgramIndex
from luong.translation.placeholders import find_placeholders, keeps_placeholders
from luong.version import install_extra

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_THRESHOLD",
    "MAX_MEMORY_BYTES",
    "Match",
    "MemoryEntry",
    "Recall",
    "TranslationMemory",
    "collapse",
    "memory_keys",
    "read_entries",
    "unfit_reason",
]

DEFAULT_THRESHOLD = TM_THRESHOLD
"""The lowest ``fuzz.ratio`` score a fuzzy match is shown with (``--tm-threshold``)."""

DEFAULT_LIMIT = TM_MATCHES
"""The most fuzzy matches a source gets."""

MAX_MEMORY_BYTES = 512 << 20
"""The largest memory file read (a TMX export of a large project is tens of MB)."""

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

_KINDS = {"\t": "a tab", "\x00": "a NUL"}  # the other characters no output holds: breaks


@dataclass(frozen=True)
class MemoryEntry:
    """A pair of the memory as read: ``source`` and ``target`` as written, the file's name
    (``origin``) and the line it starts on (0 where the format gives none: a ``.mo``)."""

    source: str
    target: str
    origin: str
    line: int = 0


@dataclass(frozen=True)
class Match:
    """An entry of the memory recalled for a source: its ``source`` and ``target`` as
    written, its ``score`` (``fuzz.ratio`` on whitespace-collapsed text, 0 to 100: 100 is
    the source's own key), the file it came from (``origin``, the file's name) and, for
    an exact match that is not reused, ``note``: why (its placeholders differ)."""

    source: str
    target: str
    score: float
    origin: str
    note: str = ""

    def record(self) -> dict[str, object]:
        """As JSON-ready data: ``source``, ``target``, ``score`` (2 decimals), ``origin``,
        and ``note`` where there is one."""
        record: dict[str, object] = {
            "source": self.source,
            "target": self.target,
            "score": round(self.score, 2),
            "origin": self.origin,
        }
        if self.note:
            record["note"] = self.note
        return record


@dataclass(frozen=True)
class Recall:
    """What the memory holds for one source: the translation to reuse (``exact``; None when
    there is none that keeps the source's placeholders) and the fuzzy matches, best first
    (an exact one that failed a check of ``unfit_reason`` first of them, with its note)."""

    exact: Match | None
    fuzzy: tuple[Match, ...] = ()


def collapse(text: str) -> str:
    """``text`` as the index keys it: whitespace runs one space, the ends stripped."""
    return " ".join(text.split())


def memory_keys(entries: Iterable[MemoryEntry]) -> list[str]:
    """The distinct keys of ``entries`` in their order: each source collapsed, those of an
    empty key or an empty translation left out (as the memory leaves them out)."""
    keys: dict[str, None] = {}
    for entry in entries:
        key = collapse(entry.source)
        if key and entry.target:
            keys.setdefault(key)
    return list(keys)


class TranslationMemory:
    """Earlier translations, indexed once for exact and fuzzy recall (the module docstring).

    Args:
        entries: the pairs (``read_entries``), in order of precedence.
        threshold: the lowest fuzzy score shown, in (0, 100].
        limit: the most fuzzy matches a source gets, >= 1.
        index_from: a memory of more keys than this is looked up through a trigram index
            (built here, unless ``indexes`` are given).
        indexes: the indexes of some of the memory's files (``read``): each file's keys
            (``memory_keys``) and their index; the keys of no index are scanned whole.

    Raises:
        TypeError: an entry that is not a ``MemoryEntry``.
        ValueError: a ``threshold`` or ``limit`` out of bounds.
    """

    def __init__(
        self,
        entries: Iterable[MemoryEntry],
        threshold: float = DEFAULT_THRESHOLD,
        limit: int = DEFAULT_LIMIT,
        *,
        index_from: int = EXACT_BAND,
        indexes: Sequence[tuple[Sequence[str], NgramIndex]] = (),
    ) -> None:
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 < threshold <= 100.0
        ):
            raise LuongError(f"threshold: expected a number in (0, 100], got {threshold!r}")
        check_positive_int("limit", limit)
        self.threshold = float(threshold)
        self.limit = limit
        self.entries: list[MemoryEntry] = []
        self.by_key: dict[str, list[MemoryEntry]] = {}
        for entry in entries:
            if not isinstance(entry, MemoryEntry):
                raise LuongTypeError(f"entries: expected MemoryEntry, got {type(entry).__name__}")
            key = collapse(entry.source)
            if key and entry.target:
                self.entries.append(entry)
                self.by_key.setdefault(key, []).append(entry)
        self.keys = list(self.by_key)  # the fuzzy lookup's choices, in memory order
        self.position = {key: at for at, key in enumerate(self.keys)}  # memory order
        if not indexes and len(self.keys) > index_from:
            indexes = [(self.keys, NgramIndex.build(self.keys))]
        # Each index with its keys in its ids' order (by length): a band is a slice.
        self.indexes = [
            ([keys[at] for at in index.by_length.tolist()], index) for keys, index in indexes
        ]
        indexed = {key for keys, _ in self.indexes for key in keys}
        self.unindexed = [key for key in self.keys if key not in indexed] if indexed else []

    @classmethod
    def read(
        cls,
        paths: Sequence[str | os.PathLike[str]],
        src_lang: str | None,
        tgt_lang: str | None,
        threshold: float = DEFAULT_THRESHOLD,
        limit: int = DEFAULT_LIMIT,
        index_from: int = EXACT_BAND,
    ) -> TranslationMemory:
        """The memory of ``paths`` (``read_entries``), indexed; a file of more than
        ``index_from`` keys through its trigram index, cached beside it.

        Raises:
            ValueError: as ``read_entries`` and the constructor.
        """
        entries: list[MemoryEntry] = []
        indexes: list[tuple[Sequence[str], NgramIndex]] = []
        for path in paths:
            read = read_entries(path, src_lang, tgt_lang)
            entries += read
            keys = memory_keys(read) if len(read) > index_from else []
            if len(keys) > index_from:
                indexes.append((keys, NgramIndex.cached(path, keys)))
        return cls(entries, threshold, limit, index_from=index_from, indexes=indexes)

    def __len__(self) -> int:
        return len(self.entries)

    def recall(self, source: str, terms: Sequence[str] = ()) -> Recall:
        """What the memory holds for ``source`` (the module docstring: exact, then fuzzy);
        ``terms``: the glossary's target terms a translation of ``source`` must hold
        (``luong.memory.glossary.Glossary.targets``), which an exact match is reused only with.

        Raises:
            TypeError: ``source`` is not a str, ``terms`` not strings.
        """
        if not isinstance(source, str):
            raise LuongTypeError(f"source: expected a str, got {type(source).__name__}")
        if isinstance(terms, str) or not all(isinstance(term, str) for term in terms):
            raise LuongTypeError("terms: expected a sequence of target terms (strings)")
        key = collapse(source)
        if not key:
            return Recall(None)
        exact = None
        refused: list[Match] = []
        for entry in self.by_key.get(key, []):
            why = unfit_reason(source, entry.target, terms)
            if why is None:
                exact = Match(entry.source, entry.target, 100.0, entry.origin)
                break
            if not refused:
                note = f"not reused: {why}"
                refused.append(Match(entry.source, entry.target, 100.0, entry.origin, note))
        scored = process.extract(
            key, self.choices(key), scorer=fuzz.ratio, limit=None, score_cutoff=self.threshold
        )
        found = heapq.nsmallest(  # the key itself may be among them: one more
            self.limit + 1, scored, key=lambda match: (-match[1], self.position[match[0]])
        )
        fuzzy = [
            Match(first.source, first.target, score, first.origin)
            for choice, score, _ in found
            if choice != key
            for first in self.by_key[choice][:1]
        ]
        return Recall(exact, tuple([*refused, *fuzzy][: self.limit]))

    def choices(self, key: str) -> list[str]:
        """The keys the fuzzy lookup of ``key`` (collapsed) scores: every key, or with
        indexes the keys of no index and those each index chooses (in no order: ties are
        put in memory order after scoring)."""
        if not self.indexes:
            return self.keys
        chosen = list(self.unindexed)
        for ranked, index in self.indexes:
            ids = index.candidates(key, self.threshold)
            chosen += ranked[ids] if isinstance(ids, slice) else [ranked[i] for i in ids.tolist()]
        return chosen if len(self.indexes) == 1 else list(dict.fromkeys(chosen))


def unfit_reason(source: str, target: str, terms: Sequence[str] = ()) -> str | None:
    """Why ``target``, a memory's translation of ``source``, cannot stand as an output of
    it, in words; None when it can. An output keeps the source's placeholders
    (``luong.translation.placeholders.keeps_placeholders``); it never holds a line break, a tab, a
    NUL or another control character (``luong.common.lines.LINE_BREAKS``, Unicode's ``Cc``;
    ``luong.data.vocab.one_line``) but those its source holds, as often (a catalog's message of
    two lines is translated line by line); it holds each of ``terms``, the glossary's
    target terms of the source, as written."""
    if not keeps_placeholders(source, target):
        return _placeholder_difference(source, target)
    for char in dict.fromkeys(target):
        if (char in LINE_BREAKS or unicodedata.category(char) == "Cc") and target.count(
            char
        ) > source.count(char):
            kind = _KINDS.get(
                char, "a line break" if char in LINE_BREAKS else "a control character"
            )
            return f"its translation holds U+{ord(char):04X} ({kind}), which its source does not"
    for term in terms:
        if term not in target:
            return f"its translation lacks the glossary's term {term!r}"
    return None


def _placeholder_difference(source: str, target: str) -> str:
    """Why ``target`` does not keep ``source``'s placeholders, in words."""
    wanted, got = (Counter(span.text for span in find_placeholders(t)) for t in (source, target))
    lacks, adds = wanted - got, got - wanted
    # a line break written as \n, so that the note stays one line (a catalog's comment)
    parts = [f"lacks {_spans(lacks)}"] if lacks else []
    parts += [f"adds {_spans(adds)}"] if adds else []
    if not parts:
        parts = ["takes its placeholders in another order"]
    return f"its translation {', '.join(parts)}"


def _spans(counts: Counter[str]) -> str:
    return " ".join(span.replace("\r", "\\r").replace("\n", "\\n") for span in counts.elements())


def read_entries(
    path: str | os.PathLike[str], src_lang: str | None, tgt_lang: str | None
) -> list[MemoryEntry]:
    """The pairs of one memory file, in its order (the module docstring: ``.po``, ``.mo``,
    ``.tmx``, else TSV). ``src_lang`` and ``tgt_lang`` are the model's pair (None where
    it records none): a TMX's ``<tuv>`` are chosen by them, a catalog's ``Language`` is
    checked against ``tgt_lang``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file that does not read (``FILE:LINE: ...`` where the format has
            lines), a TMX without the target language (or without the source language,
            and none given), a catalog in another language.
    """
    if not isinstance(path, str | os.PathLike):
        raise LuongTypeError(f"path: expected a file name, got {type(path).__name__}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".po", ".mo"):
        return _catalog_entries(path, tgt_lang)
    if suffix == ".tmx":
        return _tmx_entries(path, src_lang, tgt_lang)
    return _tsv_entries(path)


def _tsv_entries(path: Path) -> list[MemoryEntry]:
    entries = []
    for number, line in enumerate(read_text_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            what = "no tab" if len(fields) == 1 else f"{len(fields) - 1} tabs"
            raise LuongError(f"{path}:{number}: expected source<TAB>target, got a line with {what}")
        source, target = fields
        if not source.strip() or not target.strip():
            side = "source" if not source.strip() else "target"
            raise LuongError(f"{path}:{number}: an empty {side}")
        entries.append(MemoryEntry(source, target, path.name, number))
    return entries


def _language_matches(wanted: str, given: str) -> bool:
    """Whether a file's language tag ``given`` is the model's ``wanted`` or one of its
    variants (``de`` -> ``de-DE``), case and ``_``/``-`` aside."""
    wanted_tags = wanted.replace("_", "-").lower().split("-")
    given_tags = given.strip().replace("_", "-").lower().split("-")
    return given_tags[: len(wanted_tags)] == wanted_tags


def _tuv_language(tuv: etree._Element) -> str:
    return str(tuv.get(XML_LANG) or tuv.get("lang") or "")


def _tmx_entries(path: Path, src_lang: str | None, tgt_lang: str | None) -> list[MemoryEntry]:
    data = read_bounded(path, MAX_MEMORY_BYTES)
    # Internal entities expanded as XML parsers do (a <seg> read "&df;" literally, and it was
    # reused); an external one is refused (undefined: no file or network is read), and an
    # expansion past libxml2's amplification bound (billion laughs) too.
    parser = etree.XMLParser(
        resolve_entities="internal", no_network=True, remove_comments=True, huge_tree=False
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as error:
        line = error.lineno if error.lineno else 1
        raise LuongError(f"{path}:{line}: not well-formed XML ({error.msg})") from None
    if root.tag != "tmx":
        raise LuongError(f"{path}:{root.sourceline}: expected a <tmx> document, got <{root.tag}>")
    header = root.find("header")
    if src_lang is None:
        given = header.get("srclang") if header is not None else None
        if not given or given == "*all*":
            raise LuongError(
                f"{path}: the model records no source language and the header no srclang "
                "(luong pair DIR --src-lang ..)"
            )
        src_lang = str(given)
    if tgt_lang is None:
        raise LuongError(
            f"{path}: a TMX memory needs the target language: the model records none "
            "(luong pair DIR --tgt-lang ..)"
        )
    entries = []
    languages: dict[str, None] = {}
    for tu in root.iter("tu"):
        source = target = None
        for tuv in tu.iter("tuv"):
            language = _tuv_language(tuv)
            languages.setdefault(language)
            seg = tuv.find("seg")
            if seg is None:
                continue
            text = "".join(seg.itertext())
            if source is None and _language_matches(src_lang, language):
                source = text
            elif target is None and _language_matches(tgt_lang, language):
                target = text
        if source is not None and target is not None:
            entries.append(MemoryEntry(source, target, path.name, tu.sourceline or 0))
    for wanted, role in ((tgt_lang, "target"), (src_lang, "source")):
        if not any(_language_matches(wanted, language) for language in languages):
            found = ", ".join(language or "(none)" for language in languages) or "no <tuv>"
            raise LuongError(
                f"{path}: no <tuv> in the {role} language {wanted} (its languages: {found})"
            )
    return entries


def _catalog_entries(path: Path, tgt_lang: str | None) -> list[MemoryEntry]:
    try:
        # Here, not at the top: the po extra, needed by catalogs alone, so that luong
        # translate --tm with a TSV or TMX memory runs without it.
        import polib
    except ImportError:
        raise LuongError(
            f"{path}: a gettext catalog as a memory needs the po extra ({install_extra('po')})"
        ) from None
    data = read_bounded(path, MAX_MEMORY_BYTES)
    if path.suffix.lower() == ".mo":
        try:
            check_mo(data)  # whole, as msgunfmt reads it, and no string named many times
        except LuongError as error:
            raise LuongError(f"{path}: {error}") from None
    try:
        if path.suffix.lower() == ".mo":
            catalog: polib.POFile | polib.MOFile = polib.mofile(data)
        else:
            text = data.removeprefix(b"\xef\xbb\xbf").decode("latin-1")
            # the charset the header declares (polib's reading of it; UTF-8 for none)
            text = data.removeprefix(b"\xef\xbb\xbf").decode(polib.detect_encoding(text))
            # msgfmt's grammar first, as luong po reads a catalog: polib alone took a string
            # without its closing quote, its last letter lost, and reused it unmarked.
            check_grammar(text)
            catalog = polib.pofile(text)
    except (OSError, ValueError, LookupError, struct.error) as error:  # struct: a cut .mo
        if isinstance(error, LuongError):  # the grammar's: line N, msgfmt's words
            raise LuongError(f"{path}: {error}") from None
        raise LuongError(f"{path}: not a gettext catalog polib reads ({error})") from None
    language = str(catalog.metadata.get("Language", "")).strip()
    _check_unique(catalog, path)
    if (
        language
        and tgt_lang is not None
        and not _language_matches(tgt_lang.split("-")[0], language)
    ):
        raise LuongError(
            f"{path}: its Language is {language}, the model translates into {tgt_lang}"
        )
    entries = []
    for entry in catalog:
        if not entry.msgid or entry.obsolete or "fuzzy" in entry.flags:
            continue
        line = int(getattr(entry, "linenum", 0) or 0)
        if entry.msgid_plural:
            forms = entry.msgstr_plural
            if forms.get(0):
                entries.append(MemoryEntry(entry.msgid, forms[0], path.name, line))
            if forms.get(1):
                entries.append(MemoryEntry(entry.msgid_plural, forms[1], path.name, line))
        elif entry.msgstr:
            entries.append(MemoryEntry(entry.msgid, entry.msgstr, path.name, line))
    return entries


def _check_unique(catalog: Iterable[Any], path: Path) -> None:
    """Raise at a message defined twice (the same msgctxt and msgid, not obsolete), as
    msgfmt does: which of the two a memory would reuse is no choice to make."""
    seen: set[tuple[str | None, str]] = set()
    for entry in catalog:
        if entry.obsolete:
            continue
        key = (entry.msgctxt, entry.msgid)
        if key in seen:
            raise LuongError(f"{path}: duplicate message definition (msgid {entry.msgid!r:.60})")
        seen.add(key)
