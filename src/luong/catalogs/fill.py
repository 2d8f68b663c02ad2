"""Gettext catalogs filled by a model: ``luong po``.

A ``.po`` or ``.pot`` file is read as msgfmt reads it (``luong.catalogs.po_file``: its charset, its
syntax, its header wherever it stands) and cut into its blocks (each entry, the runs of blank
lines and of stray comments), each entry parsed with ``polib``. Only the blocks that are
filled (and the header, where it lacks the target's ``Language`` or ``Plural-Forms``, or its
charset changes) are written anew by polib; every other block (a translated entry, an
obsolete one, a fuzzy one left alone, a stray comment) and every separator is copied byte for
byte, so a translator's diff shows the machine's entries and nothing else, whatever tool wrapped
the file before (polib, msgcat and Poedit wrap long lines differently). A file with CRLF line
ends gets CRLF in what is written anew; the output is in the catalog's own charset
(``FilledCatalog.data``), or UTF-8 with its header saying so (``to_utf8``).

Why polib rather than Translate Toolkit: polib is one small pure-Python module with no
dependencies, and it keeps everything a catalog holds that this job needs (the entries in
their order, obsolete entries, ``msgctxt``, translator and extracted comments, references,
flags, previous ``#|`` fields, plural ``msgstr[n]``, the escapes) and wraps long lines (not
always where msgcat does: hence the untouched blocks are copied, not rewritten).
Translate Toolkit is a large package (lxml and a dozen formats) whose ``po2...`` converters
and own PO store this one file format does not need.

What a filled entry gets:

- every ``msgstr`` it lacks; a plural entry (``msgid_plural``) every ``msgstr[n]`` the header's
  ``Plural-Forms: nplurals=N`` asks for: ``msgstr[0]`` is the translation of ``msgid``,
  ``msgstr[1..N-1]`` that of ``msgid_plural`` (a model translates a sentence, not a number's
  form; languages of three forms get the same plural text in each, which the reviewer fixes).
  A ``.pot`` without ``Plural-Forms`` gets the target language's as msginit writes it
  (gettext's table, ``luong.catalogs.plural_table``; babel's CLDR rules for the languages it lacks);
- the ``fuzzy`` flag and the translator comment ``# luong: machine translation by MODEL,
  review it``, so that msgfmt leaves it out of the ``.mo`` until a person has reviewed it
  (as Weblate and Translate Toolkit mark theirs);
- when the translations carry their confidence (``MachineText``, which
  ``translate_messages`` gives), the comment ``# luong: confidence 0.73`` before it: the
  model's confidence in the entry (``luong.translation.confidence``: the geometric mean of its
  tokens' probabilities), the lowest of its lines' and forms' (an entry is as sure as its weakest
  line), rounded down to two decimals, so that a reviewer can sort or search by it;
- its lines translated one at a time: a message is cut at its real newlines, each line's
  leading and trailing blanks kept and its words translated, and the lines joined again, so
  the translation has exactly the newlines of the source (msgfmt --check-format requires the
  first and last to agree; a sentence-level model would merge or drop them otherwise);
- its keyboard accelerator (``_File``, GTK; ``&File``, Qt and KDE) taken out before the
  translation and put back once after it (``ACCELERATORS``, ``find_accelerator``).

With a translation memory (``fill_catalog``'s ``memory``, ``luong po --tm``,
``luong.memory.translation_memory``), an entry to fill whose msgid (and, for a plural entry,
msgid_plural) the memory holds exactly, whitespace-collapsed and with its placeholders kept
(``TranslationMemory.recall``), is filled from it, whole (the memory's unit is the
message, newlines and accelerator included, not the lines the model reads), with the
comment ``# luong: from memory (project.tmx)``, and **not** marked fuzzy when the memory's
source is the msgid character for character (a translation a person has reviewed, of the
same text: the memory reads no fuzzy entry); where it differs in whitespace, it is marked
fuzzy and the comment says so. Every other entry is translated by the model and gets the
memory's fuzzy matches, best first, one comment each before the machine's:
``# luong: memory 92 (project.tmx): "Open the file" -> "Die Datei öffnen"`` (the score
rounded down; an exact match not reused says why: ``, not reused: its translation lacks
%s``). ``FillSummary.memory_line`` counts the three kinds.

An entry to fill is left untranslated, and named in the summary, when a line of it is longer
than the model reads (``too_long``: a line ``luong translate`` would refuse), when it holds
an escape that polib would write back otherwise (``\\a``, octal, ``\\x``), or when its
confidence is below ``min_confidence`` (``luong po --min-confidence``: left for a person).
An entry left for a person because a line is too long or its confidence is low keeps the
memory's fuzzy matches, as the comments a filled entry gets (its msgstrs and flags as they
were): they are what the person translating it needs.
A filled entry with a format flag (``c-format``, ``python-format``, ``python-brace-format``)
is checked as msgfmt --check-format checks it (its directives, ``luong.catalogs.directives``, as
often and those taken in order in the same order), and each that fails is named in the
summary.

The translation itself is one function, ``translate_messages``; ``fill_catalog`` takes any
function of a list of strings, so tests and other translators plug in there.
"""

from __future__ import annotations

import gettext
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import polib
from babel.core import UnknownLocaleError
from babel.messages.plurals import get_plural

from luong.catalogs.directives import FORMATS, in_order
from luong.catalogs.plural_table import gettext_plural_forms
from luong.catalogs.po_file import (
    BOM,
    Block,
    charset_codec,
    entry_name,
    find_header,
    header_charset,
    header_fields,
    header_text,
    newline_of,
    read_blocks,
    render_entry,
    with_fields,
)
from luong.common.errors import LuongError, LuongTypeError
from luong.common.languages import check_language as check_language_code
from luong.common.languages import locale_rank
from luong.common.lines import json_line
from luong.common.progress import WorkProgress
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.memory.glossary import Glossary
from luong.memory.translation_memory import Match, Recall, TranslationMemory
from luong.translation.confidence import confidence
from luong.translation.translator import Translator

__all__ = [
    "ACCELERATORS",
    "FilledCatalog",
    "FillSummary",
    "MachineText",
    "TYPOGRAPHIC",
    "catalog_language",
    "charset_text",
    "check_language",
    "detect_accelerator",
    "fill_catalog",
    "find_accelerator",
    "format_placeholders",
    "plural_forms",
    "primary_language",
    "too_long",
    "translate_messages",
]

ACCELERATORS = ("auto", "_", "&", "none")
"""The keyboard accelerator markers ``fill_catalog`` knows: ``_`` (GTK, GNOME), ``&`` (Qt,
KDE, Windows), ``none`` (leave every ``_`` and ``&`` to the model), ``auto``
(``detect_accelerator``)."""

MACHINE_COMMENT = "luong: machine translation by {model}, review it"
CONFIDENCE_COMMENT = "luong: confidence {confidence}"
MEMORY_COMMENT = "luong: from memory ({origin})"
WHITESPACE_COMMENT = "luong: from memory ({origin}), its source differs in whitespace: review it"
MATCH_COMMENT = "luong: memory {score} ({origin}){note}: {source} -> {target}"
MATCH_PREFIX = MATCH_COMMENT[: MATCH_COMMENT.index("{")]  # "luong: memory "


@dataclass(frozen=True)
class MachineText:
    """A line as a model translated it (``translate_messages``), with the model's
    ``confidence`` in it (``luong.translation.confidence``, in [0, 1])."""

    text: str
    confidence: float


Translate = Callable[[list[str]], Sequence[str | MachineText]]
"""What fills a catalog: its lines in, a list of their translations out, in order."""


@dataclass(frozen=True)
class FillSummary:
    """What ``fill_catalog`` did, entry by entry (the header not counted)."""

    filled: int  # entries given a machine translation
    plural_entries: int  # of which plural entries
    plural_forms: int  # msgstr[n] filled in them
    skipped_translated: int
    skipped_obsolete: int
    skipped_fuzzy: int  # fuzzy entries left alone (without retranslate_fuzzy)
    left_empty: int  # entries left as they were: a line of theirs came out empty
    format_entries: int  # filled entries with a format flag (c-, python-, python-brace-)
    format_matches: int  # of which every msgstr passes the format check
    untranslated: tuple[str, ...] = ()  # entries to fill left untranslated, each named, why
    format_errors: tuple[str, ...] = ()  # filled format entries failing the check, named
    low_confidence: int = 0  # of the untranslated, those below the minimum confidence
    from_memory: int = 0  # of the filled, those filled from a translation memory
    with_matches: int = 0  # of the filled by the model, those with the memory's fuzzy matches
    kept_fuzzy: int = 0  # of the untranslated, fuzzy ones that keep their translation
    # Of the untranslated, those that keep the memory's fuzzy matches as comments.
    left_with_matches: int = 0

    def memory_line(self) -> str:
        """What the translation memory did, as ``luong po --tm`` prints it."""
        left = (
            f"; {self.left_with_matches} left untranslated keep their fuzzy matches"
            if self.left_with_matches
            else ""
        )
        return (
            f"{self.from_memory} from memory, {self.with_matches} with fuzzy matches, "
            f"{self.filled - self.from_memory} by the model{left}"
        )

    def line(self) -> str:
        """The summary as ``luong po`` prints it."""
        low = (
            f", {self.low_confidence} of them below the minimum confidence"
            if self.low_confidence
            else ""
        )
        left = len(self.untranslated) - self.kept_fuzzy
        named = [f"{left} left untranslated"] if left else []
        named += [f"{self.kept_fuzzy} fuzzy kept as they were"] if self.kept_fuzzy else []
        untranslated = f"; {', '.join(named)} (named below{low})" if named else ""
        return (
            f"filled {self.filled} entries ({self.plural_entries} plural, {self.plural_forms} "
            f"plural forms); skipped {self.skipped_translated} translated, "
            f"{self.skipped_obsolete} obsolete, {self.skipped_fuzzy} fuzzy; "
            f"{self.left_empty} left as they were (an empty translation){untranslated}; "
            f"placeholders checked: {self.format_matches} of {self.format_entries} format "
            "entries match"
        )

    def named(self) -> list[str]:
        """A line per entry the summary names: those left untranslated, then the format
        entries that fail the check, each in the catalog's order."""
        return [*self.untranslated, *self.format_errors]


@dataclass(frozen=True)
class FilledCatalog:
    """A catalog's text after ``fill_catalog``, and what was done."""

    text: str
    summary: FillSummary
    language: str  # the header's Language, as written
    nplurals: int  # the plural forms a plural entry has
    accelerator: str  # the marker used ("_", "&" or "none")
    encoding: str = "utf-8"  # Python's codec of the charset the header declares

    @property
    def data(self) -> bytes:
        """The text encoded in the header's charset: the file to write.

        Raises:
            ValueError: a character the charset cannot hold (``line N: ...``; only in text
                given to ``fill_catalog`` that was not decoded from that charset).
        """
        try:
            return self.text.encode(self.encoding)
        except UnicodeEncodeError as error:
            line = self.text.count("\n", 0, error.start) + 1
            raise LuongError(
                f"line {line}: {self.text[error.start]!r} is not a character of the catalog's "
                f"charset ({self.encoding})"
            ) from None


def translate_messages(
    translator: Translator,
    texts: Sequence[str],
    options: SearchOptions,
    placeholders: str = "constrain",
    *,
    glossary: Sequence[tuple[str, str]] = (),
    batch_size: int = 512,
    progress: WorkProgress | None = None,
) -> list[MachineText]:
    """The one place a catalog's messages are translated: ``texts`` (single lines, without
    their accelerators) in, one translation each out, in order, their placeholders kept as
    ``placeholders`` says (``RequestOptions.placeholders``: ``"constrain"``, the better on
    gettext-en-de's dev, docs/results.md; ``"mask"``; ``"off"``: the model's own), through
    ``Translator.translations`` as every face, each with the model's confidence in it
    (``luong.translation.confidence``; that of the first search for an output searched again to keep
    its placeholders; 0.0 for an empty text, which is not translated); with ``glossary``
    (``RequestOptions.glossary``: ``(source term, target term)`` pairs), each translation
    holds the target terms of the terms its text holds (``luong.memory.glossary``). ``batch_size``:
    the texts of one search call (``Translator.translations``'s; ``luong po --batch-size``).
    ``progress``: advanced by each text as its first search is done.

    Raises:
        TypeError: ``translator`` is not a ``Translator``, ``options`` not ``SearchOptions``.
        ValueError: an unknown ``placeholders``, a bad glossary; as
            ``Translator.translations``.
    """
    if not isinstance(translator, Translator):
        raise LuongTypeError(f"translator: expected a Translator, got {type(translator).__name__}")
    if not isinstance(options, SearchOptions):
        raise LuongTypeError(f"options: expected SearchOptions, got {type(options).__name__}")
    request = RequestOptions(placeholders=placeholders, glossary=tuple(glossary))
    return [
        MachineText(t.texts[0], confidence(t.hypotheses[0])) if t.texts else MachineText("", 0.0)
        for t in translator.translations(
            list(texts), options, request, batch_size=batch_size, progress=progress
        )
    ]


def too_long(
    translator: Translator, placeholders: str = "constrain"
) -> Callable[[str], str | None]:
    """``fill_catalog``'s ``too_long`` for ``translator``: a line's reason to be left
    untranslated when the model does not take it as ``placeholders`` decodes it
    (``Translator.admit``: more symbols than its ``max_src_len``, masked ones counted), the
    line ``luong translate`` refuses; None for a line it reads.

    Raises:
        TypeError: ``translator`` is not a ``Translator``.
        ValueError: an unknown ``placeholders``.
    """
    if not isinstance(translator, Translator):
        raise LuongTypeError(f"translator: expected a Translator, got {type(translator).__name__}")
    request = RequestOptions(placeholders=placeholders)  # an unknown one raises here

    def reason(line: str) -> str | None:
        (verdict,) = translator.admit([line], request)
        if verdict is None or not verdict.refused:
            return None
        if verdict.kind != "too_long":
            return verdict.detail
        length, limit = verdict.length, verdict.limit
        return f"{length} symbols, above the model's maximum source length {limit}"

    return reason


def primary_language(language: str) -> str:
    """``de_AT.UTF-8@euro`` -> ``de``: the language without region, script, charset."""
    return re.split(r"[_\-.@]", language.strip())[0].lower()


def check_language(catalog: str, target: str) -> None:
    """Raise unless a catalog's ``Language`` (``de``, ``de_DE``, ``pt_BR``, ``sr@latin``) is
    the model's target language (``de``, ``sr-Latn``) as ``luong.common.languages.locale_rank``
    reads both: the same language and script; a region the model does not name is accepted,
    and the language's own catalog for a model that names one (``pt`` for ``pt-BR``), but
    not another region's (``pt_PT``) nor another script's (``sr``, Cyrillic, for
    ``sr-Latn``).

    Raises:
        ValueError: they name different languages.
    """
    if not target.strip():
        raise LuongError(f"target: expected a language code such as 'de', got {target!r}")
    if catalog.strip() and locale_rank(catalog.strip(), target.strip()) is None:
        raise LuongError(
            f"the catalog's Language is {catalog.strip()}, the model translates into {target}"
        )


def plural_forms(language: str) -> str:
    """The gettext ``Plural-Forms`` value of a language as msginit writes it, from gettext's
    own table (``luong.catalogs.plural_table``: ``plural_forms("fr")`` is ``"nplurals=2; plural=(n >
    1);"``), else from babel's CLDR data (``plural_forms("ar")``: six forms).

    Raises:
        ValueError: neither knows the language.
    """
    if not isinstance(language, str):
        raise LuongTypeError(f"language: expected a language code, got {language!r}")
    gettext = gettext_plural_forms(language)
    if gettext is not None:
        return gettext
    try:
        rule = get_plural(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        raise LuongError(f"language: babel knows no plural forms for {language!r}") from None
    return f"nplurals={rule.num_plurals}; plural={rule.plural_expr};"


def format_placeholders(text: str, flag: str) -> Counter[str]:
    """The format directives msgfmt --check-format compares in a ``c-format``,
    ``python-format`` or ``python-brace-format`` string (``luong.catalogs.directives.FORMATS``),
    counted (``%%``, ``{{`` and ``}}`` included: they must stay what they are).

    Raises:
        ValueError: an unknown flag.
    """
    if flag not in FORMATS:
        raise LuongError(f"flag: expected one of {', '.join(FORMATS)}, got {flag!r}")
    return Counter(FORMATS[flag].findall(text))


def _format_error(source: str, translation: str, flag: str) -> str | None:
    """Why ``translation`` fails msgfmt --check-format against ``source`` for ``flag``: its
    directives differ (``lacks %d``, ``adds %D``) or those taken in order come in another
    order; None when it passes."""
    found = [FORMATS[flag].findall(text) for text in (source, translation)]
    wanted, got = Counter(found[0]), Counter(found[1])
    if wanted != got:
        lacks, adds = wanted - got, got - wanted
        parts = [f"lacks {' '.join(lacks.elements())}"] if lacks else []
        parts += [f"adds {' '.join(adds.elements())}"] if adds else []
        return ", ".join(parts)
    ordered = [[d for d in directives if in_order(d)] for directives in found]
    if ordered[0] != ordered[1]:
        return f"takes {' '.join(ordered[0])} in another order"
    return None


def _accelerator_pattern(marker: str) -> re.Pattern[str]:
    # The marker before a letter or digit, not doubled (``__``, ``&&`` are a literal marker),
    # not inside a word (``file_name``), and for ``&`` not an entity (``&amp;``, ``&#38;``).
    m = re.escape(marker)
    entity = r"(?!#?\w+;)" if marker == "&" else ""
    return re.compile(rf"(?<![\w{m}]){m}{entity}(?=[^\W_])")


def find_accelerator(text: str, marker: str) -> int | None:
    """The index of the one keyboard accelerator ``marker`` in ``text`` (``"_Open"`` -> 0),
    or None when there is none or more than one (then it is not an accelerator).

    Raises:
        ValueError: ``marker`` is not ``_`` or ``&``.
    """
    if marker not in ("_", "&"):
        raise LuongError(f"marker: expected '_' or '&', got {marker!r}")
    found = [match.start() for match in _accelerator_pattern(marker).finditer(text)]
    return found[0] if len(found) == 1 else None


def detect_accelerator(msgids: Sequence[str]) -> str:
    """``auto``'s choice for a catalog: the marker (``_`` or ``&``) that more of its messages
    carry as exactly one accelerator (``find_accelerator``), at least two messages; ``none``
    when neither does (a catalog of a command-line program, where ``_`` and ``&`` are text)."""
    counts = {m: sum(find_accelerator(t, m) is not None for t in msgids) for m in ("_", "&")}
    best = max(counts, key=lambda m: counts[m])
    if counts[best] < 2 or counts["_"] == counts["&"]:
        return "none"
    return best


def _put_accelerator(translation: str, marker: str, source: str, at: int) -> str:
    """``translation`` with ``marker`` once: before the first letter that starts a word and is
    the source's accelerated letter (case aside), else before its first letter or digit."""
    letter = source[at + 1].lower()
    starts = [m.start() for m in re.finditer(r"(?<!\w)[^\W_]", translation)]
    same = [i for i in starts if translation[i].lower() == letter]
    anywhere = re.search(r"[^\W_]", translation)
    if same:
        i = same[0]
    elif anywhere is not None:
        i = anywhere.start()
    else:  # nothing to press: no accelerator (msgfmt --check-accelerators asks for one)
        return translation
    return translation[:i] + marker + translation[i:]


def _lines(text: str) -> list[tuple[str, str, str]]:
    """A message cut at its newlines, each line as (leading blanks, words, trailing blanks)."""
    out = []
    for line in text.split("\n"):
        words = line.strip()
        if not words:
            out.append((line, "", ""))
            continue
        start = line.index(words)
        out.append((line[:start], words, line[start + len(words) :]))
    return out


class _Messages:
    """The lines of many messages, translated in one call (each distinct line once)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.pending: dict[str, str | None] = {}
        self.confidences: dict[str, float | None] = {}  # None: the translation carries none

    def words(self, text: str) -> list[str]:
        """The lines of ``text`` that hold words, as they are translated (without the
        accelerator, their blanks stripped)."""
        return [words for _, words, _ in _lines(self._strip(text)[0]) if words]

    def add(self, text: str) -> None:
        for words in self.words(text):
            self.pending.setdefault(words, None)

    def plain(self, text: str) -> str:
        """``text`` without its accelerator, as the model reads it."""
        return self._strip(text)[0]

    def _strip(self, text: str) -> tuple[str, int | None]:
        if self.marker == "none":
            return text, None
        at = find_accelerator(text, self.marker)
        return (text, None) if at is None else (text[:at] + text[at + 1 :], at)

    def translate(self, translate: Translate) -> None:
        sources = list(self.pending)
        outputs = translate(sources) if sources else []
        if not isinstance(outputs, list) or len(outputs) != len(sources):
            got = len(outputs) if isinstance(outputs, list) else type(outputs).__name__
            raise LuongError(f"translate: expected {len(sources)} translations, got {got}")
        for source, output in zip(sources, outputs, strict=True):
            if isinstance(output, MachineText):
                self.pending[source] = output.text
                self.confidences[source] = output.confidence
            elif isinstance(output, str):
                self.pending[source] = output
                self.confidences[source] = None
            else:
                raise LuongTypeError(
                    f"translate: expected strings or MachineText, got {type(output).__name__}"
                )

    def confidence(self, texts: Sequence[str]) -> float | None:
        """The lowest confidence of the lines of ``texts`` that hold words (NaN if one is);
        None when a translation carries none (or no line holds words)."""
        values = [self.confidences[words] for text in texts for words in self.words(text)]
        if not values or any(value is None for value in values):
            return None
        known = [value for value in values if value is not None]
        return math.nan if any(math.isnan(value) for value in known) else min(known)

    def of(self, text: str) -> str | None:
        """The translation of ``text``; None when a line with words came out empty."""
        stripped, at = self._strip(text)
        lines = []
        for lead, words, trail in _lines(stripped):
            translated = (self.pending[words] or "").strip() if words else ""
            if words and not translated:
                return None
            lines.append(lead + translated + trail)
        out = "\n".join(lines)
        return out if at is None else _put_accelerator(out, self.marker, text, at)


def catalog_language(text: str) -> str:
    """The ``Language`` of a catalog's header ("" for a ``.pot``'s or none), as polib's
    parsed metadata reads it.

    Raises:
        ValueError: what msgfmt rejects (``luong.catalogs.po_file.read_blocks``).
    """
    blocks = read_blocks(text.removeprefix(BOM))
    at = find_header(blocks)
    return "" if at is None else header_fields(blocks[at]).get("Language", "").strip()


def fill_catalog(
    text: str,
    translate: Translate,
    *,
    target: str,
    model: str,
    retranslate_fuzzy: bool = False,
    accelerator: str = "auto",
    to_utf8: bool = False,
    too_long: Callable[[str], str | None] | None = None,
    min_confidence: float | None = None,
    memory: TranslationMemory | None = None,
    glossary: Glossary | None = None,
) -> FilledCatalog:
    """Fill a catalog's untranslated entries (and its fuzzy ones with ``retranslate_fuzzy``)
    with ``translate``'s translations; every other byte is kept (the module's docstring).

    Args:
        text: the ``.po`` or ``.pot`` file's text, decoded
        (``luong.catalogs.po_file.decode_catalog``:
            in the charset its header declares).
        translate: the messages' lines (``translate_messages``) -> their translations:
            strings, or ``MachineText`` (each entry filled then gets its confidence in a
            comment).
        target: the target language, a code babel knows (``de``, ``pt-BR``); the header's
            ``Language`` must name the same language (``check_language``), and is set to it
            when empty.
        model: the model's name in the translator comment (its folder's name).
        retranslate_fuzzy: translate fuzzy entries again (their msgstr replaced).
        accelerator: ``ACCELERATORS``: the keyboard accelerator marker, or ``auto``.
        to_utf8: write the catalog in UTF-8, its header's charset set to UTF-8; by default it
            stays in the charset its header declares (``FilledCatalog.data``).
        too_long: a line's reason not to be translated (the module docstring: the function
            ``too_long(translator)`` makes), or None when it is; its entry is left
            untranslated and named in the summary. None: every line is translated.
        min_confidence: an entry whose confidence (the lowest of its lines', the module
            docstring) is below it, a number in [0, 1], is left untranslated, for a person,
            and named in the summary; ``translate`` must then give ``MachineText``. None:
            every entry translated is filled.
        memory: a translation memory (``luong.memory.translation_memory``; the module docstring): an
        entry
            whose msgid (and msgid_plural) it holds exactly is filled from it; the others
            filled by ``translate``, and those left for a person (too long, below
            ``min_confidence``), get its fuzzy matches in comments.
        glossary: the glossary ``translate`` holds (``luong.memory.glossary``): a translation from
            ``memory`` is reused only where it holds the target terms of the terms its
            source holds (``Glossary.targets``), else it is a fuzzy match and the model
            translates the entry.

    Returns:
        the ``FilledCatalog``: the new text, its ``FillSummary``, language, plural count,
        accelerator and the codec its ``data`` is encoded with.

    Raises:
        TypeError: ``text`` not a string, ``translate`` or ``too_long`` not callable,
            ``translate`` returning neither strings nor ``MachineText``.
        ValueError: an unknown ``accelerator``, a ``target`` that is no language code, a
            ``min_confidence`` that is not a number in [0, 1] (or with translations that
            carry no confidence), a catalog msgfmt rejects or polib cannot read (``line N:
            ...``), a header in another language, a charset Python cannot decode, a
            ``Plural-Forms`` msgfmt or Python's gettext cannot read, a translation the
            header's charset cannot hold (naming the entry).
    """
    _check_fill_arguments(text, translate, model, accelerator, too_long)
    _check_min_confidence(min_confidence)
    if memory is not None and not isinstance(memory, TranslationMemory):
        raise LuongTypeError(f"memory: expected a TranslationMemory, got {type(memory).__name__}")
    if glossary is not None and not isinstance(glossary, Glossary):
        raise LuongTypeError(f"glossary: expected a Glossary, got {type(glossary).__name__}")
    check_language_code(target, "target")
    text = text.removeprefix(BOM)
    blocks = read_blocks(text)
    newline = newline_of(text)
    header_at = find_header(blocks)
    header = _read_header(
        blocks[header_at] if header_at is not None else None, target, to_utf8, newline
    )
    entries = {
        i: block.entry
        for i, block in enumerate(blocks)
        if block.entry is not None and i != header_at
    }
    if accelerator == "auto":
        accelerator = detect_accelerator([e.msgid for e in entries.values() if not e.obsolete])
    todo, skipped = _entries_to_fill(entries, header.nplurals, retranslate_fuzzy)
    messages = _Messages(accelerator)
    untranslated: dict[int, str] = {}  # block -> why, named in the catalog's order
    recalled: dict[int, list[_Translated]] = {}  # block -> its msgstrs from the memory
    suggested: dict[int, tuple[Match, ...]] = {}  # block -> the memory's fuzzy matches
    origins: dict[int, list[Match]] = {}  # block -> the matches its msgstrs came from
    for i in list(todo):
        if memory is not None and not blocks[i].escape:
            reused, matches = _recall(entries[i], memory, header.nplurals, messages, glossary)
            if reused:
                recalled[i] = [(form, source, match.target) for form, source, match in reused]
                origins[i] = [match for _, _, match in reused]
                continue
            suggested[i] = matches
        why = _untranslatable(blocks[i], messages, too_long)
        if why is not None:
            untranslated[i] = f"{entry_name(blocks[i])}: {_left_as(entries[i])}: {why}"
            todo.remove(i)
            continue
        messages.add(entries[i].msgid)
        if entries[i].msgid_plural:
            messages.add(entries[i].msgid_plural)
    messages.translate(translate)  # every line of every entry to fill, in one call

    comment = MACHINE_COMMENT.format(model=model)
    out = [block.text for block in blocks]
    filled: list[tuple[Block, polib.POEntry, list[_Translated]]] = []
    low = with_matches = 0
    kept = charset_left = 0
    suggesting: list[int] = []  # left for a person, with the memory's fuzzy matches

    def suggest(i: int) -> None:
        """An entry left for a person keeps the memory's fuzzy matches as comments, where the
        catalog's charset holds them (its msgstrs and flags as they were)."""
        if not suggested.get(i):
            return
        _suggest(entries[i], suggested[i])
        text = _rendered(entries[i], newline)
        if _charset_trouble(text, header) is None:
            out[i] = text
            suggesting.append(i)

    for i in list(untranslated):  # too long for the model
        suggest(i)

    def leave(i: int, left_as: str, why: str) -> None:
        nonlocal kept
        untranslated[i] = f"{entry_name(blocks[i])}: {left_as}: {why}"
        kept += left_as != LEFT_UNTRANSLATED

    for i in todo:
        left_as = _left_as(entries[i])  # before the entry is filled
        if i in recalled:
            texts, why = _held(recalled[i], header)
            if why is None:
                _fill_from_memory(entries[i], texts, origins[i])
                out[i] = _rendered(entries[i], newline)
                why = _charset_trouble(out[i], header)  # a memory's match in a comment
            if why is not None:
                out[i] = blocks[i].text
                leave(i, left_as, why)
                charset_left += 1
                continue
            filled.append((blocks[i], entries[i], texts))
            continue
        translated = _translations(entries[i], messages, header.nplurals)
        if translated is None:  # the block stays as it was
            continue
        sure = messages.confidence([source for _, source, _ in translated])
        if min_confidence is not None:
            if sure is None:
                raise LuongError(
                    "min_confidence: the translations carry no confidence (translate gave "
                    "strings, not MachineText)"
                )
            if not sure >= min_confidence:  # NaN too: no number to trust
                leave(
                    i, left_as, f"confidence {_shown(sure)}, below the minimum {min_confidence:g}"
                )
                suggest(i)
                low += 1
                continue
        translated, why = _held(translated, header)
        if why is None:
            _fill_entry(entries[i], translated, comment, sure, suggested.get(i, ()))
            out[i] = _rendered(entries[i], newline)
            why = _charset_trouble(out[i], header)  # a memory's match, the model's name
        if why is not None:
            out[i] = blocks[i].text
            leave(i, left_as, why)
            charset_left += 1
            continue
        with_matches += bool(suggested.get(i))
        filled.append((blocks[i], entries[i], translated))
    if header_at is not None:
        out[header_at] = header.text
    else:  # a file without a header gets one in front, as msginit writes it
        out[:0] = [header.text, newline]
    named = [untranslated[i] for i in sorted(untranslated)]
    left_empty = len(todo) - len(filled) - low - charset_left
    summary = _summary(filled, skipped, left_empty, named, low)
    summary = replace(
        summary,
        from_memory=len(recalled),
        with_matches=with_matches,
        kept_fuzzy=kept,
        left_with_matches=len(suggesting),
    )
    language = header.language or target
    encoding = header.encoding
    return FilledCatalog("".join(out), summary, language, header.nplurals, accelerator, encoding)


def _check_fill_arguments(
    text: object, translate: object, model: str, accelerator: object, too_long: object
) -> None:
    """Refuse ``fill_catalog``'s bad arguments before the catalog is read."""
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected str, got {type(text).__name__}")
    if not callable(translate):
        raise LuongTypeError(f"translate: expected a function, got {type(translate).__name__}")
    if too_long is not None and not callable(too_long):
        raise LuongTypeError(f"too_long: expected a function, got {type(too_long).__name__}")
    if accelerator not in ACCELERATORS:
        raise LuongError(
            f"accelerator: expected one of {', '.join(ACCELERATORS)}, got {accelerator!r}"
        )
    if not model.strip():
        raise LuongError(f"model: expected the model's name, got {model!r}")


def _check_min_confidence(value: object) -> None:
    """Refuse a ``min_confidence`` that is not a number in [0, 1] (or None)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise LuongError(f"min_confidence: expected a number in [0, 1], got {value!r}")


def _shown(value: float) -> str:
    """A confidence as a comment writes it: rounded down to two decimals (so that an entry
    shown ``0.70`` holds at least 0.70), ``nan`` for none."""
    return "nan" if math.isnan(value) else f"{math.floor(value * 100) / 100:.2f}"


LEFT_UNTRANSLATED = "left untranslated"


def _left_as(entry: polib.POEntry) -> str:
    """What an entry to fill that is not filled is left as: a fuzzy one that holds a
    translation (``retranslate_fuzzy``) keeps it, flag and all; any other stays
    untranslated."""
    translated = entry.msgstr or any(entry.msgstr_plural.values())
    return "kept its fuzzy translation" if entry.fuzzy and translated else LEFT_UNTRANSLATED


def _untranslatable(
    block: Block, messages: _Messages, too_long: Callable[[str], str | None] | None
) -> str | None:
    """Why the entry of ``block`` is left untranslated: it holds an escape polib would write
    back otherwise, or a line of it is too long (``too_long``); None when it is translated."""
    if block.escape:
        return (
            f"it holds the escape {block.escape}, which polib would write back as another "
            "text (write the character itself)"
        )
    entry = block.entry
    assert entry is not None
    if too_long is not None:
        for line in messages.words(entry.msgid) + messages.words(entry.msgid_plural or ""):
            why = too_long(line)
            if why is not None:
                return why
    return None


TYPOGRAPHIC = {
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2039\u203a", "'"),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2212", "-"),
    **dict.fromkeys("\u2014\u2015", "--"),
    **dict.fromkeys("\u202f\u2007", "\u00a0"),  # a narrow or figure no-break space
    **dict.fromkeys("\u00a0\u2009\u200a", " "),
    "\u2026": "...",
    "\u2022": "*",
}
"""Typographic characters a catalog's charset may lack (German quotes in ISO-8859-1), each
with what stands for it there: a quote, a hyphen, a space of the charset's own, ASCII at
last. ``charset_text`` tries it, then Unicode's compatibility form (NFKC: a ligature's
letters, a full-width character's ASCII)."""


def charset_text(text: str, encoding: str) -> tuple[str, str | None]:
    """``text`` as the codec ``encoding`` can write it: each character it lacks replaced by
    its stand-in (``TYPOGRAPHIC``, then NFKC, each tried in turn), and the first character
    with none (``"€"`` in ISO-8859-1), or None when every one is held.

    Raises:
        LookupError: no such codec.
    """
    if _encodes(text, encoding):
        return text, None
    out = []
    for char in text:
        held = char
        for _ in range(3):  # a stand-in's own stand-in: U+202F, U+00A0, a space
            if _encodes(held, encoding):
                break
            compatible = unicodedata.normalize("NFKC", held)
            held = TYPOGRAPHIC.get(held) or (compatible if compatible != held else "")
            if not held:
                return text, char
        if not _encodes(held, encoding):
            return text, char
        out.append(held)
    return "".join(out), None


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _not_held(char: str, header: _Header) -> str:
    """Why an entry holding ``char`` is left for a person in a catalog of ``header``."""
    return (
        f"its translation holds {char!r} (U+{ord(char):04X}), which the catalog's charset "
        f"{header.charset} cannot hold (luong po --to-utf8 writes the catalog in UTF-8, which "
        "can)"
    )


def _held(translated: list[_Translated], header: _Header) -> tuple[list[_Translated], str | None]:
    """An entry's translations as the catalog's charset holds them (``charset_text``), and
    why the entry is left for a person (None when every character is held)."""
    held: list[_Translated] = []
    for form, source, translation in translated:
        text, missing = charset_text(translation, header.encoding)
        if missing is not None:
            return translated, _not_held(missing, header)
        held.append((form, source, text))
    return held, None


def _charset_trouble(text: str, header: _Header) -> str | None:
    """Why an entry as written (``text``: its comments too) is left for a person: a
    character the catalog's charset cannot hold; None when it holds them all."""
    try:
        text.encode(header.encoding)
    except UnicodeEncodeError as error:
        return _not_held(error.object[error.start], header)
    return None


@dataclass(frozen=True)
class _Header:
    """A catalog's header as ``fill_catalog`` writes it back, and what it says."""

    text: str  # the header block, with what it lacked set (Language, charset, Plural-Forms)
    language: str  # its Language as written ("" when empty or missing)
    nplurals: int  # the plural forms a plural entry has
    charset: str  # the charset it declares once written ("UTF-8" for none)
    encoding: str  # Python's codec of that charset


def _read_header(block: Block | None, target: str, to_utf8: bool, newline: str) -> _Header:
    """Check the header's fields (polib's parsed metadata; None: a catalog without a header)
    against the model's ``target`` language, and complete them as msginit would: the
    target's ``Language`` when it has none, ``charset=UTF-8`` for xgettext's placeholder
    ``CHARSET`` (or none, or with ``to_utf8``), and the language's ``Plural-Forms``
    (``plural_forms``: msginit's) for xgettext's placeholder ``nplurals=INTEGER;
    plural=EXPRESSION`` (or none). A header
    that lacks nothing is kept byte for byte.

    Raises:
        ValueError: another language, a charset Python cannot decode, a ``Plural-Forms`` that
            msgfmt or Python's gettext cannot read (``_plural_count``), a language babel does
            not know (no ``Plural-Forms`` to add).
    """
    fields = header_fields(block) if block is not None else {}
    language = fields.get("Language", "").strip()
    check_language(language, target)
    charset = header_charset(fields)
    encoding = charset_codec(charset)
    changes: dict[str, str] = {}
    if not language:
        changes["Language"] = target
    if not charset or (to_utf8 and encoding != "utf-8"):
        content_type = fields.get("Content-Type", "")
        if "charset=" in content_type:
            content_type = re.sub(r"charset=[^ \t\n;]*", "charset=UTF-8", content_type)
        else:
            content_type = "text/plain; charset=UTF-8"
        changes["Content-Type"] = content_type
        charset, encoding = "UTF-8", "utf-8"
    added, count = _plural_count(fields.get("Plural-Forms", ""), language or target)
    if added is not None:
        changes["Plural-Forms"] = added
    if block is None:
        text = header_text("", "".join(f"{k}: {v}\n" for k, v in changes.items()), newline)
    else:
        text = with_fields(block, changes, newline) if changes else block.text
    return _Header(text, language, count, charset, encoding)


def _plural_count(forms: str, language: str) -> tuple[str | None, int]:
    """The ``nplurals`` of a header's ``Plural-Forms`` value ``forms``, and the value to
    write in its place: None when it is the catalog's own, else ``language``'s
    (``plural_forms``), for xgettext's placeholders (``nplurals=INTEGER``,
    ``plural=EXPRESSION``) or no value.
    The catalog's own expression must be one Python's gettext reads (``gettext.c2py``) and
    give a form below ``nplurals`` for every n (0 to 999 tried), as msgfmt checks it.

    Raises:
        ValueError: a value without ``nplurals`` or ``plural``, an ``nplurals`` outside 1 to
            6, an expression Python's gettext cannot read or that gives a form past
            ``nplurals``, a ``language`` babel does not know.
    """
    forms = forms.strip()
    if not forms or "INTEGER" in forms or "EXPRESSION" in forms:
        added = plural_forms(language)
        return added, int(re.findall(r"\d+", added)[0])
    nplurals = re.search(r"nplurals\s*=\s*(\d+)", forms)
    plural = re.search(r"(?<![A-Za-z])plural\s*=\s*([^;]+)", forms)
    if nplurals is None or plural is None:
        raise LuongError(f"Plural-Forms: expected nplurals=N; plural=EXPRESSION;, got {forms!r}")
    count = int(nplurals.group(1))
    if not 1 <= count <= 6:
        raise LuongError(f"Plural-Forms: expected nplurals between 1 and 6, got {count}")
    expression = plural.group(1).strip()
    try:
        form = gettext.c2py(expression)
        bad = next((n for n in range(1000) if not 0 <= form(n) < count), None)
    except (ValueError, SyntaxError, RecursionError, ZeroDivisionError):
        raise LuongError(
            f"Plural-Forms: plural={expression} is not an expression Python's gettext reads"
        ) from None
    if bad is not None:
        raise LuongError(
            f"Plural-Forms: plural={expression} gives form {form(bad)} for n = {bad}, "
            f"past nplurals={count}"
        )
    return None, count


def _entries_to_fill(
    entries: dict[int, polib.POEntry], count: int, retranslate_fuzzy: bool
) -> tuple[list[int], Counter[str]]:
    """The blocks whose entries are filled, in the catalog's order: the untranslated ones
    (a plural entry lacking one of its ``count`` forms too) and, with ``retranslate_fuzzy``,
    the fuzzy ones. The others are counted by why they are left alone: ``"obsolete"``,
    ``"fuzzy"`` or ``"translated"``."""
    todo: list[int] = []
    skipped: Counter[str] = Counter()
    for i, entry in entries.items():
        if entry.obsolete:
            skipped["obsolete"] += 1
        elif entry.fuzzy and not retranslate_fuzzy:
            skipped["fuzzy"] += 1
        elif not entry.fuzzy and _complete(entry, count):
            skipped["translated"] += 1
        else:
            todo.append(i)
    return todo, skipped


_Translated = tuple[int | None, str, str]
"""A msgstr filled: its form (None: ``msgstr``; n: ``msgstr[n]``), source, translation."""


def _translations(
    entry: polib.POEntry, messages: _Messages, count: int
) -> list[_Translated] | None:
    """The translations of ``entry``'s msgstrs to fill: an untranslated entry's empty
    msgstrs, a fuzzy one's all of them; a plural entry's ``msgstr[0]`` translates
    ``msgid``, its other ``count - 1`` ``msgid_plural``. None when a line of one of them
    came out empty (``_Messages.of``): a half-filled entry would be worse than none."""
    forms: list[tuple[int | None, str]] = [(None, entry.msgid)]
    if entry.msgid_plural:
        forms = [
            (n, entry.msgid if n == 0 else entry.msgid_plural)
            for n in range(count)
            if entry.fuzzy or not entry.msgstr_plural.get(n)
        ]
    translated: list[_Translated] = []
    for form, source in forms:
        translation = messages.of(source)
        if translation is None:
            return None
        translated.append((form, source, translation))
    return translated


def _fill_entry(
    entry: polib.POEntry,
    translated: list[_Translated],
    comment: str,
    sure: float | None,
    matches: Sequence[Match] = (),
) -> None:
    """Give ``entry`` its ``translated`` msgstrs (``_translations``), the ``fuzzy`` flag and
    the machine's translator ``comment``, after the comment of its confidence ``sure`` where
    known and a comment per fuzzy match of a translation memory, best first (all in place
    of older ones of luong's)."""
    for form, _, translation in translated:
        if form is None:
            entry.msgstr = translation
        else:
            entry.msgstr_plural[form] = translation
    if "fuzzy" not in entry.flags:
        entry.flags.insert(0, "fuzzy")
    kept = [c for c in entry.tcomment.splitlines() if not c.startswith("luong: ")]
    if sure is not None:
        kept.append(CONFIDENCE_COMMENT.format(confidence=_shown(sure)))
    kept += [_match_comment(match) for match in matches]
    entry.tcomment = "\n".join([*kept, comment])


def _suggest(entry: polib.POEntry, matches: Sequence[Match]) -> None:
    """Give ``entry``, left for a person, a comment per fuzzy match of a translation memory,
    best first, in place of older ones; its other comments (a kept fuzzy translation's
    machine comment too), msgstrs and flags as they were."""
    kept = [c for c in entry.tcomment.splitlines() if not c.startswith(MATCH_PREFIX)]
    entry.tcomment = "\n".join([*kept, *(_match_comment(match) for match in matches)])


def _rendered(entry: polib.POEntry, newline: str) -> str:
    """The entry as polib writes it (``render_entry``), luong's translator comments each
    on one line, never wrapped at 78 as polib wraps comments: a wrapped line would not
    start with ``luong: `` and so would stay behind when the entry is filled again (a long
    model name, a memory's match). polib writes the translator comments first, so luong's
    go after the others."""
    lines = entry.tcomment.split("\n") if entry.tcomment else []
    ours = [line for line in lines if line.startswith("luong: ")]
    entry.tcomment = "\n".join(line for line in lines if not line.startswith("luong: "))
    try:
        rendered = render_entry(entry, newline).split(newline)
    finally:
        entry.tcomment = "\n".join(lines)
    at = 0
    while at < len(rendered) and rendered[at].startswith("# "):
        at += 1
    rendered[at:at] = [f"# {line}" for line in ours]
    return newline.join(rendered)


def _match_comment(match: Match) -> str:
    """A fuzzy match as its translator comment: its score rounded down (an entry shown
    ``92`` scored at least 92), its file, why an exact one was not reused, and its source and
    target as JSON strings (quoted, a newline written ``\\n``)."""
    return MATCH_COMMENT.format(
        score=math.floor(match.score),
        origin=match.origin,
        note=f", {match.note}" if match.note else "",
        source=json_line(match.source),
        target=json_line(match.target),
    )


def _recall(
    entry: polib.POEntry,
    memory: TranslationMemory,
    count: int,
    messages: _Messages,
    glossary: Glossary | None = None,
) -> tuple[list[tuple[int | None, str, Match]] | None, tuple[Match, ...]]:
    """The msgstrs of ``entry`` to fill (as ``_translations`` lists them) from ``memory``,
    each with the exact match it comes from, when the memory holds every one of their
    sources (``TranslationMemory.recall``, with the target terms ``glossary`` finds in the
    source, its accelerator taken out as the model reads it); else None, and the fuzzy
    matches to show: those of the msgid (its exact match first, where only the plural lacks
    one)."""

    def recall(source: str) -> Recall:
        if glossary is None:
            return memory.recall(source)
        return memory.recall(source, glossary.targets(messages.plain(source)))

    forms: list[tuple[int | None, str]] = [(None, entry.msgid)]
    if entry.msgid_plural:
        forms = [
            (n, entry.msgid if n == 0 else entry.msgid_plural)
            for n in range(count)
            if entry.fuzzy or not entry.msgstr_plural.get(n)
        ]
    recalls = {source: recall(source) for _, source in forms}
    reused = []
    for form, source in forms:
        exact = recalls[source].exact
        if exact is None:
            first = recalls.get(entry.msgid) or recall(entry.msgid)
            shown = (first.exact, *first.fuzzy) if first.exact is not None else first.fuzzy
            return None, shown
        reused.append((form, source, exact))
    return reused, ()


def _fill_from_memory(
    entry: polib.POEntry, translated: list[_Translated], matches: list[Match]
) -> None:
    """Give ``entry`` its ``translated`` msgstrs from a translation memory and the comment
    naming the files they come from. Not marked fuzzy where every match's source is the
    entry's own, character for character (a translation reviewed before, of the same
    text); marked fuzzy, its comment saying why, where one differs in whitespace."""
    for form, _, translation in translated:
        if form is None:
            entry.msgstr = translation
        else:
            entry.msgstr_plural[form] = translation
    origin = ", ".join(dict.fromkeys(match.origin for match in matches))
    same = all(
        match.source == source for match, (_, source, _) in zip(matches, translated, strict=True)
    )
    if same:
        if "fuzzy" in entry.flags:
            entry.flags.remove("fuzzy")
        comment = MEMORY_COMMENT.format(origin=origin)
    else:
        if "fuzzy" not in entry.flags:
            entry.flags.insert(0, "fuzzy")
        comment = WHITESPACE_COMMENT.format(origin=origin)
    kept = [c for c in entry.tcomment.splitlines() if not c.startswith("luong: ")]
    entry.tcomment = "\n".join([*kept, comment])


def _summary(
    filled: list[tuple[Block, polib.POEntry, list[_Translated]]],
    skipped: Counter[str],
    left_empty: int,
    untranslated: list[str],
    low_confidence: int = 0,
) -> FillSummary:
    """The ``FillSummary`` of the entries ``filled`` (each with its block and what
    ``_fill_entry`` filled), those ``skipped`` (``_entries_to_fill``), ``left_empty`` and
    ``untranslated`` (named; ``low_confidence`` of them below the minimum confidence). A
    filled entry with a format flag passes when each msgstr passes msgfmt --check-format's
    comparison with its source (``_format_error``); each that fails is named."""
    plural = [translated for _, entry, translated in filled if entry.msgid_plural]
    checked = 0
    errors: list[str] = []
    for block, entry, translated in filled:
        flag = next((f for f in entry.flags if f in FORMATS), None)
        if flag is None:
            continue
        checked += 1
        failed = [
            f"{'msgstr' if form is None else f'msgstr[{form}]'} {why}"
            for form, source, translation in translated
            if (why := _format_error(source, translation, flag)) is not None
        ]
        if failed:
            errors.append(f"{entry_name(block)}: {flag} check fails: {'; '.join(failed)}")
    return FillSummary(
        filled=len(filled),
        plural_entries=len(plural),
        plural_forms=sum(len(translated) for translated in plural),
        skipped_translated=skipped["translated"],
        skipped_obsolete=skipped["obsolete"],
        skipped_fuzzy=skipped["fuzzy"],
        left_empty=left_empty,
        format_entries=checked,
        format_matches=checked - len(errors),
        untranslated=tuple(untranslated),
        format_errors=tuple(errors),
        low_confidence=low_confidence,
    )


def _complete(entry: polib.POEntry, count: int) -> bool:
    """Every msgstr of the entry is there (a plural entry's ``count`` forms)."""
    if entry.msgid_plural:
        return all(entry.msgstr_plural.get(n) for n in range(count))
    return bool(entry.msgstr)
