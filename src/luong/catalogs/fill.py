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
function of a list of strings, so tests and other translators plug in there. The header is
read and completed by ``luong.catalogs.header``, each entry filled by ``luong.catalogs.entries``
(its accelerators, its memory's matches, its format check).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import polib

from luong.catalogs.directives import FORMATS
from luong.catalogs.entries import (
    ACCELERATORS,
    LEFT_UNTRANSLATED,
    MACHINE_COMMENT,
    MachineText,
    Messages,
    Translate,
    Translated,
    confidence_shown,
    detect_accelerator,
    entries_to_fill,
    entry_left_as,
    fill_entry,
    fill_from_memory,
    format_error,
    held_in_charset,
    recall_entry,
    rendered,
    suggest_matches,
    translations,
    untranslatable,
)
from luong.catalogs.header import charset_trouble, read_header
from luong.catalogs.po_file import BOM, Block, entry_name, find_header, newline_of, read_blocks
from luong.common.errors import LuongError, LuongTypeError
from luong.common.languages import check_language as check_language_code
from luong.common.progress import WorkProgress
from luong.config.request import RequestOptions
from luong.config.translation_request import TranslationRequest
from luong.memory.glossary import Glossary
from luong.memory.translation_memory import Match, TranslationMemory
from luong.translation.confidence import confidence
from luong.translation.translator import Translator

__all__ = [
    "FilledCatalog",
    "FillSummary",
    "fill_catalog",
    "too_long",
    "translate_messages",
]


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
    request: TranslationRequest,
    *,
    progress: WorkProgress | None = None,
) -> list[MachineText]:
    """The one place a catalog's messages are translated: ``texts`` (single lines, without
    their accelerators) in, one translation each out, in order, through
    ``Translator.answer`` as every face, for ``request`` (``luong po`` builds it from its
    flags: the search, ``--placeholders`` (``"constrain"``, the better on gettext-en-de's
    dev, docs/results.md; ``"mask"``; ``"off"``: the model's own), the glossary's pairs, so
    that each translation holds the target terms of the terms its text holds
    (``luong.memory.glossary``), and ``--batch-size``). Each comes with the model's
    confidence in it (``luong.translation.confidence``; that of the first search for an output
    searched again to keep its placeholders; 0.0 for an empty text, which is not
    translated). ``progress``: advanced by each text as its first search is done.

    Raises:
        TypeError: ``translator`` is not a ``Translator``, ``request`` not a
            ``TranslationRequest``.
        ValueError: as ``Translator.answer``.
    """
    if not isinstance(translator, Translator):
        raise LuongTypeError(f"translator: expected a Translator, got {type(translator).__name__}")
    if not isinstance(request, TranslationRequest):
        raise LuongTypeError(
            f"request: expected a TranslationRequest, got {type(request).__name__}"
        )
    return [
        MachineText(t.texts[0], confidence(t.hypotheses[0])) if t.texts else MachineText("", 0.0)
        for t in translator.answer(list(texts), request, progress=progress)
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
            (``luong.catalogs.po_file.decode_catalog``: in the charset its header declares).
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
        memory: a translation memory (``luong.memory.translation_memory``; the module
            docstring): an entry whose msgid (and msgid_plural) it holds exactly is filled
            from it; the others filled by ``translate``, and those left for a person (too
            long, below ``min_confidence``), get its fuzzy matches in comments.
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
    header = read_header(
        blocks[header_at] if header_at is not None else None, target, to_utf8, newline
    )
    entries = {
        i: block.entry
        for i, block in enumerate(blocks)
        if block.entry is not None and i != header_at
    }
    if accelerator == "auto":
        accelerator = detect_accelerator([e.msgid for e in entries.values() if not e.obsolete])
    todo, skipped = entries_to_fill(entries, header.nplurals, retranslate_fuzzy)
    messages = Messages(accelerator)
    untranslated: dict[int, str] = {}  # block -> why, named in the catalog's order
    recalled: dict[int, list[Translated]] = {}  # block -> its msgstrs from the memory
    suggested: dict[int, tuple[Match, ...]] = {}  # block -> the memory's fuzzy matches
    origins: dict[int, list[Match]] = {}  # block -> the matches its msgstrs came from
    for i in list(todo):
        if memory is not None and not blocks[i].escape:
            reused, matches = recall_entry(entries[i], memory, header.nplurals, messages, glossary)
            if reused:
                recalled[i] = [(form, source, match.target) for form, source, match in reused]
                origins[i] = [match for _, _, match in reused]
                continue
            suggested[i] = matches
        why = untranslatable(blocks[i], messages, too_long)
        if why is not None:
            untranslated[i] = f"{entry_name(blocks[i])}: {entry_left_as(entries[i])}: {why}"
            todo.remove(i)
            continue
        messages.add(entries[i].msgid)
        if entries[i].msgid_plural:
            messages.add(entries[i].msgid_plural)
    messages.translate(translate)  # every line of every entry to fill, in one call

    comment = MACHINE_COMMENT.format(model=model)
    out = [block.text for block in blocks]
    filled: list[tuple[Block, polib.POEntry, list[Translated]]] = []
    low = with_matches = 0
    kept = charset_left = 0
    suggesting: list[int] = []  # left for a person, with the memory's fuzzy matches

    def suggest(i: int) -> None:
        """An entry left for a person keeps the memory's fuzzy matches as comments, where the
        catalog's charset holds them (its msgstrs and flags as they were)."""
        if not suggested.get(i):
            return
        suggest_matches(entries[i], suggested[i])
        text = rendered(entries[i], newline)
        if charset_trouble(text, header) is None:
            out[i] = text
            suggesting.append(i)

    for i in list(untranslated):  # too long for the model
        suggest(i)

    def leave(i: int, left_as: str, why: str) -> None:
        nonlocal kept
        untranslated[i] = f"{entry_name(blocks[i])}: {left_as}: {why}"
        kept += left_as != LEFT_UNTRANSLATED

    for i in todo:
        left_as = entry_left_as(entries[i])  # before the entry is filled
        if i in recalled:
            texts, why = held_in_charset(recalled[i], header)
            if why is None:
                fill_from_memory(entries[i], texts, origins[i])
                out[i] = rendered(entries[i], newline)
                why = charset_trouble(out[i], header)  # a memory's match in a comment
            if why is not None:
                out[i] = blocks[i].text
                leave(i, left_as, why)
                charset_left += 1
                continue
            filled.append((blocks[i], entries[i], texts))
            continue
        translated = translations(entries[i], messages, header.nplurals)
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
                    i,
                    left_as,
                    f"confidence {confidence_shown(sure)}, below the minimum {min_confidence:g}",
                )
                suggest(i)
                low += 1
                continue
        translated, why = held_in_charset(translated, header)
        if why is None:
            fill_entry(entries[i], translated, comment, sure, suggested.get(i, ()))
            out[i] = rendered(entries[i], newline)
            why = charset_trouble(out[i], header)  # a memory's match, the model's name
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


def _summary(
    filled: list[tuple[Block, polib.POEntry, list[Translated]]],
    skipped: Counter[str],
    left_empty: int,
    untranslated: list[str],
    low_confidence: int = 0,
) -> FillSummary:
    """The ``FillSummary`` of the entries ``filled`` (each with its block and what
    ``fill_entry`` filled), those ``skipped`` (``entries_to_fill``), ``left_empty`` and
    ``untranslated`` (named; ``low_confidence`` of them below the minimum confidence). A
    filled entry with a format flag passes when each msgstr passes msgfmt --check-format's
    comparison with its source (``format_error``); each that fails is named."""
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
            if (why := format_error(source, translation, flag)) is not None
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
