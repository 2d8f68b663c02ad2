"""Glossaries: a project's terminology held in every translation (``--glossary FILE``).

A glossary lists source terms and the target term each must become (``printer`` ->
``Drucker``). Where a source holds a term, its target term joins that source's constraints,
and lexically constrained beam search (``luong.search.constrained``, Post and Vilar 2018: the
machinery of ``--constraints`` and of the placeholders kept) writes it in every output: an
output may end only when it holds it. ``Translator.translations`` does this for a request's
``RequestOptions.glossary`` (``enforced_terms``), on every face.

**Files** (``read_glossary``), UTF-8, by their extension:

- ``.tsv``, ``.tab``, ``.txt``: tab-separated, nothing quoted (the csv module, ``QUOTE_NONE``);
  ``.csv``: comma-separated, quoted as spreadsheets write it (the csv module's ``excel``
  dialect). A row: the source term, the target term, then any number of other forms of the
  target (its variants: ``printer<TAB>Drucker<TAB>Druckers<TAB>Druckern``), kept
  (``Term.variants``) but not enforced. Empty rows, rows whose first cell starts with ``#``
  (comments) and a first row that reads ``source``, ``target`` (a header) are skipped. A row
  of one cell, or with an empty source or target term, is an error naming its line.
- ``.tbx``: TBX (ISO 30042), TBX-Basic or the 2008 core structure: a ``martif`` whose
  ``termEntry`` elements are concepts, each with a ``langSet`` per language (``xml:lang``)
  holding its terms in ``tig/term`` or ``ntig/termGrp/term``; parsed by translate-toolkit
  (``translate.storage.tbx``, the ``tm`` extra), the terms' text as lxml reads it with the
  internal entities expanded (``<!ENTITY df "Datei">``: ``&df;`` is ``Datei``; an external
  entity is refused, no file or network read). Each term of the source language becomes a
  ``Term`` whose target is the first term of the target language (the others its variants);
  terms marked deprecated or superseded (``termNote type="administrativeStatus"``) are left
  out. A concept without both languages is skipped (a multilingual termbase lacks some); XML
  that does not parse, another root element, a ``langSet`` without ``xml:lang`` and an empty
  term are errors naming their XML line. The languages: the model's pair (``de`` matches a
  ``langSet`` of ``de-DE`` too), else the ``martif``'s ``xml:lang`` as the source and the one
  other language of the file as the target.

A source term listed twice keeps its first target; the later ones become its variants. No
term may hold a placeholder or protected span (``luong.translation.placeholders.find_placeholders``:
those are carried over unchanged, never translated), a line break or another control character.

**Matching** (``Glossary.find``), chosen for software strings:

- whole words: neither the character before an occurrence nor the one after it may be a
  letter, a digit, ``_`` or ``-`` (``file`` matches in ``file.``, ``(file)``, ``user's
  file``; not in ``profile``, ``files`` nor ``file-based``, whose translation is another
  word); a space inside a term matches any run of whitespace;
- case: a term written in lower case matches in any case (``printer`` matches ``Printer`` and
  ``PRINTER``: menu labels and buttons are written in Title Case); a term with a capital
  letter matches only as written (``GNOME``, ``IT``, ``Trash``: names and acronyms are not
  the common words they spell);
- an occurrence inside a placeholder or protected span (``%(printer)s``, ``{file}``,
  ``--file``, a URL, a tag's name) does not count;
- overlapping occurrences: the longest wins, then the leftmost, then the term listed first
  (``print queue`` over ``queue``); a shorter term still counts where it overlaps no
  occurrence kept.

**Enforced** (``enforced_terms``): the target term of each term found, as listed. German
inflects, and what is held is the listed form, the first (``Drucker``, not ``Druckers``),
whatever case the sentence asks for: list the form the strings need most (in software
catalogs, the nominative singular). A sentence holds each distinct target at least once,
however often its source holds the term (an output may rightly name it once: "files and
folders"). A target the model's vocabulary cannot write is an error naming the term
(``Glossary.check_vocab``), before anything is decoded; targets beyond the most one sentence's
constraints may have (``MAX_CONSTRAINT_PIECES`` target symbols, the sentence's own
constraints first) are not enforced in that sentence.
"""

from __future__ import annotations

import csv
import functools
import io
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import read_bounded
from luong.common.lines import LINE_BREAKS
from luong.config.search import MAX_CONSTRAINT_PIECES, MAX_PHRASE_PIECES
from luong.data.vocab import Vocab
from luong.translation.placeholders import find_placeholders
from luong.version import install_extra

__all__ = [
    "KINDS",
    "MAX_GLOSSARY_BYTES",
    "MAX_TERM_CHARS",
    "Glossary",
    "Term",
    "TermMatch",
    "enforced_terms",
    "glossary_of",
    "parse_glossary",
    "read_glossary",
    "tbx_glossary",
]

MAX_GLOSSARY_BYTES = 64 * 2**20
"""The largest glossary file read (termbases of a whole desktop are a few MB)."""

MAX_TERM_CHARS = 200
"""The longest term, in characters: a term is a word or a phrase, not a sentence."""

KINDS = {".tsv": "tsv", ".tab": "tsv", ".txt": "tsv", ".csv": "csv", ".tbx": "tbx"}
"""A glossary file's extension -> how it is read (the module docstring)."""

_TOKEN = re.compile(r"\w+|\S")  # a word, or one sign: what the glossary's trie is made of
_JOINS = re.compile(r"[\w-]")  # a character that joins a word: no term begins or ends beside it
_END = ""  # the trie key under which a node lists the terms that end there (no token is "")
_Trie = dict[Any, Any]  # (token, spaced) -> node; _END -> [(order, Term)]
_DEPRECATED = ("deprecated", "superseded")  # TBX administrative statuses not to enforce


@dataclass(frozen=True)
class Term:
    """A glossary's entry: where ``source`` occurs in a source, ``target`` is held in the
    output; ``variants``: other forms of the target, not enforced; ``where``: where it is
    written (``FILE:LINE``, ``glossary[I]``), for messages."""

    source: str
    target: str
    variants: tuple[str, ...] = ()
    where: str = "glossary"


@dataclass(frozen=True)
class TermMatch:
    """An occurrence of ``term`` in a text: ``text[start:end]``."""

    start: int
    end: int
    term: Term


class Glossary:
    """Terms, checked (the module docstring's rules), indexed once in a trie of their tokens
    (``_TOKEN``: a run of word characters, or one other character that is not a space) so that
    ``find`` matches every term in one pass over a text's tokens, whatever the number of
    terms or how they start (a term starting with a sign, ``.NET``, was a regular expression
    searched through every text: 10k of them made 1,000 lines take 62 s instead of 3).

    Args:
        terms: the entries, in order (a source term listed again adds its targets to the
            first entry's variants).
        name: the glossary's name in messages (its file).

    Raises:
        TypeError: an entry is not a ``Term``, a term not a str.
        ValueError: an empty term, one longer than ``MAX_TERM_CHARS``, one holding a
            placeholder, a line break or a control character (named by ``Term.where``).
    """

    def __init__(self, terms: Iterable[Term], name: str = "glossary") -> None:
        merged: dict[str, Term] = {}
        for term in terms:
            if not isinstance(term, Term):
                raise LuongTypeError(f"{name}: expected Term entries, got {type(term).__name__}")
            term = _checked(term)
            first = merged.get(term.source)
            if first is None:
                merged[term.source] = term
                continue
            known = {first.target, *first.variants}
            more = [t for t in (term.target, *term.variants) if t not in known]
            merged[term.source] = Term(
                first.source, first.target, (*first.variants, *dict.fromkeys(more)), first.where
            )
        self.name = name
        self.terms = tuple(merged.values())
        self._spelled: list[Vocab] = []  # the vocabularies check_vocab found to write it all
        # Two tries of tokens: the terms in lower case, matched in any case (their text's
        # tokens lowered), and the others, matched as written.
        self._any_case: _Trie = {}
        self._as_written: _Trie = {}
        for order, term in enumerate(self.terms):
            lower = term.source == term.source.lower()
            node = self._any_case if lower else self._as_written
            for key in _keys(term.source):
                node = node.setdefault(key, {})
            ends = node.setdefault(_END, [])
            ends.append((order, term))

    @classmethod
    def of(cls, pairs: Sequence[Sequence[str]], name: str = "glossary") -> Glossary:
        """A glossary of ``(source term, target term)`` pairs (a request's), entry ``i``
        named ``NAME[i]`` in messages.

        Raises:
            TypeError: not a list of pairs of strings.
            ValueError: as ``Glossary``.
        """
        if isinstance(pairs, str) or not isinstance(pairs, Sequence):
            raise LuongTypeError(
                f"{name}: expected a list of [source term, target term] pairs, "
                f"got {type(pairs).__name__}"
            )
        terms = []
        for i, pair in enumerate(pairs):
            if (
                isinstance(pair, str)
                or not isinstance(pair, Sequence)
                or len(pair) != 2
                or not all(isinstance(t, str) for t in pair)
            ):
                raise LuongTypeError(
                    f"{name}[{i}]: expected a [source term, target term] pair of strings, "
                    f"got {pair!r:.60}"
                )
            terms.append(Term(pair[0].strip(), pair[1].strip(), (), f"{name}[{i}]"))
        return cls(terms, name)

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        return f"Glossary({self.name!r}, {len(self.terms)} terms)"

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The ``(source term, target term)`` pairs, in order: what a request carries
        (``RequestOptions.glossary``)."""
        return tuple((term.source, term.target) for term in self.terms)

    def find(self, text: str) -> list[TermMatch]:
        """The occurrences of the terms in ``text`` (the module docstring's rules: whole
        words, the case rule, none inside a placeholder span, overlaps to the longest, then
        the leftmost), in the text's order.

        Raises:
            TypeError: ``text`` is not a str.
        """
        if not isinstance(text, str):
            raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
        # Each span's characters become NUL: no term matches across or inside one, and a
        # span bounds a word as a space does.
        clean = list(text)
        for span in find_placeholders(text):
            clean[span.start : span.end] = "\0" * (span.end - span.start)
        plain = "".join(clean)
        tokens = [(t.start(), t.end(), t.group()) for t in _TOKEN.finditer(plain)]
        found: list[tuple[int, int, int, Term]] = []
        for i, (start, _, _) in enumerate(tokens):
            if start and _JOINS.match(plain, start - 1):
                continue  # inside a word: no term starts here
            for trie, lower in ((self._any_case, True), (self._as_written, False)):
                node = trie
                for j in range(i, len(tokens)):
                    at, end, token = tokens[j]
                    spaced = j > i and at > tokens[j - 1][1]  # whitespace before it
                    child = node.get((token.lower() if lower else token, spaced))
                    if child is None:
                        break
                    node = child
                    if _END in node and not _JOINS.match(plain, end):
                        found.extend((start, end, order, t) for order, t in node[_END])
        found.sort(key=lambda f: (f[0] - f[1], f[0], f[2]))  # longest, leftmost, first listed
        kept: list[TermMatch] = []
        for start, end, _, term in found:
            if all(end <= k.start or k.end <= start for k in kept):
                kept.append(TermMatch(start, end, term))
        return sorted(kept, key=lambda k: k.start)

    def targets(self, text: str) -> tuple[str, ...]:
        """The target terms of the terms ``find`` finds in ``text``, each once, in the
        text's order: what a translation of ``text`` must hold (a translation memory's is
        reused only so, ``luong.memory.translation_memory.TranslationMemory.recall``)."""
        return tuple(dict.fromkeys(match.term.target for match in self.find(text)))

    def check_vocab(self, vocab: Vocab) -> None:
        """Raise unless ``vocab`` (a model's target vocabulary) can write every target term
        within the constrained search's bound on a phrase (``MAX_PHRASE_PIECES``).

        Raises:
            ValueError: ``WHERE: the target term 'X' has symbols the target vocabulary
                cannot produce: [...]`` or is too long.
        """
        if any(known is vocab for known in self._spelled):
            return  # a server checks each request's glossary: once per vocabulary is enough
        for term in self.terms:
            unknown = vocab.unknown(term.target)
            if unknown:
                raise LuongError(
                    f"{term.where}: the target term {term.target!r:.80} has symbols the "
                    f"model's target vocabulary cannot produce: {unknown[:5]}; correct the "
                    "term or leave it out"
                )
            pieces = len(vocab.encode(term.target, eos=False))
            if pieces > MAX_PHRASE_PIECES:
                raise LuongError(
                    f"{term.where}: the target term {term.target!r:.40} is {pieces} target "
                    f"symbols, above the most a constraint may have ({MAX_PHRASE_PIECES})"
                )
        self._spelled.append(vocab)


def _checked(term: Term) -> Term:
    """``term`` with its texts stripped, or an error naming ``term.where``."""
    if not isinstance(term.source, str) or not isinstance(term.target, str):
        raise LuongTypeError(f"{term.where}: expected terms as strings, got {term!r:.80}")
    if isinstance(term.variants, str) or not all(isinstance(v, str) for v in term.variants):
        raise LuongTypeError(f"{term.where}: expected variants as a tuple of strings")
    source, target = term.source.strip(), term.target.strip()
    variants = tuple(dict.fromkeys(v.strip() for v in term.variants if v.strip()))
    for side, text in (("source", source), ("target", target)):
        if not text:
            raise LuongError(f"{term.where}: the {side} term is empty")
    for side, text in (("source", source), ("target", target), *(("variant", v) for v in variants)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise LuongError(
                f"{term.where}: the {side} term is not valid Unicode (a lone surrogate at "
                f"character {error.start})"
            ) from None
        if len(text) > MAX_TERM_CHARS:
            raise LuongError(
                f"{term.where}: the {side} term has {len(text)} characters, above the "
                f"most a term may have ({MAX_TERM_CHARS})"
            )
        if any(c in LINE_BREAKS or unicodedata.category(c) == "Cc" for c in text):
            raise LuongError(
                f"{term.where}: the {side} term {text!r:.60} holds a line break or a "
                "control character"
            )
        spans = find_placeholders(text)
        if spans:
            raise LuongError(
                f"{term.where}: the {side} term {text!r:.60} holds the placeholder "
                f"{spans[0].text!r:.40}; placeholders are carried over as they are, never "
                "terms"
            )
    return Term(source, target, variants, term.where)


def _keys(source: str) -> list[tuple[str, bool]]:
    """The trie keys of the term ``source``: each token (``_TOKEN``) with whether whitespace
    comes before it (any run of it in a text; never before the first)."""
    keys = []
    for w, word in enumerate(source.split()):
        keys += [(t, w > 0 and k == 0) for k, t in enumerate(_TOKEN.findall(word))]
    return keys


@functools.lru_cache(maxsize=16)
def glossary_of(pairs: tuple[tuple[str, str], ...]) -> Glossary:
    """``Glossary.of(pairs)``, built once for the same pairs (a server's requests and a
    command's windows carry the same glossary again and again)."""
    return Glossary.of(pairs)


def enforced_terms(
    glossary: Glossary, source: str, vocab: Vocab, given: Sequence[str] = ()
) -> list[Term]:
    """The terms whose targets ``source``'s outputs must hold: those ``glossary.find``s in
    it, each distinct target once, in the source's order, none already among ``given`` (the
    sentence's own constraint phrases), as many as fit beside ``given`` within
    ``MAX_CONSTRAINT_PIECES`` target symbols (a target that does not fit is left out, a
    shorter one after it may still fit).

    Raises:
        TypeError: ``glossary`` is not a ``Glossary``, ``source`` not a str.
    """
    if not isinstance(glossary, Glossary):
        raise LuongTypeError(f"glossary: expected a Glossary, got {type(glossary).__name__}")
    phrases = [phrase for phrase in given if isinstance(phrase, str)]
    room = MAX_CONSTRAINT_PIECES - sum(len(vocab.encode(p, eos=False)) for p in phrases)
    held = set(phrases)
    terms = []
    for match in glossary.find(source):
        target = match.term.target
        if target in held:
            continue
        pieces = len(vocab.encode(target, eos=False))
        if pieces <= room:
            held.add(target)
            room -= pieces
            terms.append(match.term)
    return terms


def read_glossary(
    path: str | os.PathLike[str],
    source_lang: str | None = None,
    target_lang: str | None = None,
) -> Glossary:
    """A glossary file, read as its extension says (``KINDS``: the module docstring):
    TSV, CSV or TBX; ``source_lang`` and ``target_lang`` choose a TBX file's languages.

    Raises:
        FileNotFoundError: no such file.
        ValueError: another extension, a file above ``MAX_GLOSSARY_BYTES``, text that is not
            UTF-8, a malformed row or TBX element (``FILE:LINE: ...``), no term at all.
    """
    name = os.fspath(path)
    suffix = Path(name).suffix.lower()
    kind = KINDS.get(suffix)
    if kind is None:
        raise LuongError(
            f"{name}: expected a glossary file named .tsv, .tab, .txt, .csv or .tbx, got "
            f"{suffix or 'no extension'}"
        )
    data = read_bounded(path, MAX_GLOSSARY_BYTES)
    if kind == "tbx":
        return tbx_glossary(data, name, source_lang, target_lang)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise LuongError(f"{name}:{line}: not valid UTF-8 ({error.reason})") from None
    return parse_glossary(text, kind, name)


def parse_glossary(text: str, kind: str = "tsv", name: str = "glossary") -> Glossary:
    """A glossary from the text of a TSV (``kind="tsv"``) or CSV (``"csv"``) file (the
    module docstring's rows), its terms named ``NAME:LINE`` (the line a row starts on).

    Raises:
        ValueError: an unknown ``kind``; a row of one cell, an empty term, a CSV quote left
            open (``NAME:LINE: ...``); no term at all.
    """
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
    if kind == "tsv":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
        what = "tab-separated"
    elif kind == "csv":
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        what = "comma-separated"
    else:
        raise LuongError(f"kind: expected tsv or csv, got {kind!r:.40}")
    terms = []
    start = 1
    first_row = True
    try:
        for row in reader:
            line, start = start, reader.line_num + 1
            cells = [cell.strip() for cell in row]
            if not any(cells) or cells[0].startswith("#"):
                continue
            if first_row and [c.lower() for c in cells[:2]] == ["source", "target"]:
                first_row = False
                continue  # a header
            first_row = False
            if len(cells) < 2 or not cells[1]:
                got = f"one cell {cells[0]!r:.60}" if len(cells) < 2 else "an empty one"
                raise LuongError(
                    f"{name}:{line}: expected a source term and a target term, {what}; "
                    f"the target term is missing ({got})"
                )
            if not cells[0]:
                raise LuongError(f"{name}:{line}: the source term is empty")
            terms.append(Term(cells[0], cells[1], tuple(cells[2:]), f"{name}:{line}"))
    except csv.Error as error:
        raise LuongError(f"{name}:{reader.line_num}: {error}") from None
    if not terms:
        raise LuongError(f"{name}: holds no term (a row: source term, target term)")
    return Glossary(terms, name)


def tbx_glossary(
    data: bytes,
    name: str = "glossary.tbx",
    source_lang: str | None = None,
    target_lang: str | None = None,
) -> Glossary:
    """A glossary from the bytes of a TBX file (the module docstring), parsed by
    translate-toolkit (``translate.storage.tbx``); its terms named ``NAME:LINE``, the XML
    line of their ``term`` element.

    Raises:
        ValueError: translate-toolkit missing; XML that does not parse, a root other than
            ``martif``, a ``langSet`` without ``xml:lang``, an empty term
            (``NAME:LINE: ...``); languages that cannot be told; no term for the pair.
    """
    try:  # the tm extra: only a TBX file needs it
        from translate.misc.xml_helpers import getXMLlang, parse_xml
        from translate.storage.tbx import tbxfile
    except ImportError:
        raise LuongError(
            f"{name}: reading TBX needs translate-toolkit, the tm extra ({install_extra('tm')})"
        ) from None
    try:
        root = parse_xml(data)
    except SyntaxError as error:  # lxml's XMLSyntaxError
        raise LuongError(f"{name}:{error.lineno or 1}: not XML ({error.msg})") from None
    local = str(root.tag).rpartition("}")[2]
    if local != "martif":
        raise LuongError(
            f"{name}:{root.sourceline}: expected TBX (a martif root element: TBX-Basic or the "
            f"2008 core structure), got <{local}>"
        )
    # The terms' text from lxml's own reading with the internal entities expanded, as XML
    # parsers do (translate-toolkit's parser keeps them unexpanded: "&df;"); an external
    # entity is refused there (undefined), and an expansion past libxml2's amplification
    # bound (billion laughs) too.
    try:
        resolved = etree.fromstring(data, _entity_parser())
    except etree.XMLSyntaxError as error:
        raise LuongError(f"{name}:{error.lineno or 1}: not XML ({error.msg})") from None
    store = tbxfile(io.BytesIO(data))
    tree = store.document

    def text_of(element: Any) -> str:
        same = resolved.getroottree().xpath(tree.getpath(element))
        return "".join((same[0] if same else element).itertext())

    units = list(store.units)
    languages: dict[str, str] = {}  # primary subtag -> the first code of it
    for unit in units:
        for node in unit.getlanguageNodes():
            code = getXMLlang(node)
            if not code:
                raise LuongError(f"{name}:{node.sourceline}: a langSet without xml:lang")
            languages.setdefault(_primary(code), code)
    source = source_lang or getXMLlang(root)
    if not source:
        raise LuongError(
            f"{name}: the martif names no source language (xml:lang) and none was given"
        )
    target = target_lang
    if not target:
        others = [code for primary, code in languages.items() if primary != _primary(source)]
        if len(others) != 1:
            raise LuongError(
                f"{name}: cannot tell the target language among "
                f"{', '.join(sorted(languages)) or 'none'}: give the model's (luong pair)"
            )
        target = others[0]
    terms = []
    for unit in units:
        nodes = unit.getlanguageNodes()
        source_node = _langset(nodes, source, getXMLlang)
        target_node = _langset(nodes, target, getXMLlang)
        if source_node is None or target_node is None or source_node is target_node:
            continue
        targets = _terms(unit, target_node, name, text_of)
        if not targets:
            continue  # only deprecated terms
        for text, line in _terms(unit, source_node, name, text_of):
            terms.append(Term(text, targets[0][0], tuple(t for t, _ in targets[1:]), line))
    if not terms:
        raise LuongError(
            f"{name}: holds no term from {source} to {target} (its languages: "
            f"{', '.join(sorted(languages)) or 'none'})"
        )
    return Glossary(terms, name)


def _primary(code: str) -> str:
    """A language code's primary subtag, lower case (``de-DE``, ``de_DE`` -> ``de``)."""
    return code.replace("_", "-").split("-")[0].lower()


def _langset(nodes: list[Any], code: str, lang_of: Any) -> Any:
    """Of ``nodes`` (a concept's ``langSet`` elements), the one of ``code``: the same
    code, else the same primary subtag; None when there is none."""
    wanted = code.replace("_", "-").lower()
    same = [n for n in nodes if (lang_of(n) or "").replace("_", "-").lower() == wanted]
    if same:
        return same[0]
    primary = [n for n in nodes if _primary(lang_of(n) or "") == _primary(code)]
    return primary[0] if primary else None


def _entity_parser() -> etree.XMLParser:
    """lxml's parser for a TBX file's text: internal entities expanded, external ones
    refused (undefined), no network, libxml2's bounds on a tree and on entity expansion
    kept (``luong.memory.translation_memory`` reads TMX so)."""
    return etree.XMLParser(resolve_entities="internal", no_network=True, huge_tree=False)


def _terms(
    unit: Any, langset: Any, name: str, text_of: Callable[[Any], str]
) -> list[tuple[str, str]]:
    """The terms of a ``langSet`` in order (``tig/term``, ``ntig/termGrp/term``), each with
    ``NAME:LINE``, those marked deprecated or superseded left out.

    Raises:
        ValueError: an empty term.
    """
    found = []
    for element in langset.iterdescendants(unit.namespaced("term")):
        text = " ".join(text_of(element).split())
        where = f"{name}:{element.sourceline}"
        if not text:
            raise LuongError(f"{where}: an empty term")
        holder = element  # its tig or ntig, whose termNotes are the term's
        parent = element.getparent()
        while parent is not None and parent is not langset:
            if parent.tag in (unit.namespaced("tig"), unit.namespaced("ntig")):
                holder = parent
                break
            parent = parent.getparent()
        statuses = [
            " ".join(note.itertext()).strip().lower()
            for note in holder.iter(unit.namespaced("termNote"))
            if note.get("type") == "administrativeStatus"
        ]
        if any(status.startswith(_DEPRECATED) for status in statuses):
            continue
        found.append((text, where))
    return found
