"""Glossary files: a project's terminology read from TSV, CSV and TBX (``--glossary FILE``),
each error naming its line; the terms a ``Glossary`` (``luong.memory.glossary``).

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

A file's terms are checked as every glossary's are (``luong.memory.glossary``: a source term
listed twice, no placeholder, line break or control character in a term).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lxml import etree

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import read_bounded
from luong.memory.glossary import Glossary, Term
from luong.version import install_extra

__all__ = [
    "KINDS",
    "MAX_GLOSSARY_BYTES",
    "parse_glossary",
    "read_glossary",
    "tbx_glossary",
]

MAX_GLOSSARY_BYTES = 64 * 2**20
"""The largest glossary file read (termbases of a whole desktop are a few MB)."""

KINDS = {".tsv": "tsv", ".tab": "tsv", ".txt": "tsv", ".csv": "csv", ".tbx": "tbx"}
"""A glossary file's extension -> how it is read (the module docstring)."""

_DEPRECATED = ("deprecated", "superseded")  # TBX administrative statuses not to enforce


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
