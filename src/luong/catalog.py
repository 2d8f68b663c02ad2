"""Gettext catalogs filled by a model: ``luong po``.

A ``.po`` or ``.pot`` file is read as text, cut into its blocks (the entries and the header,
separated by blank lines), and each block parsed on its own with ``polib``. Only the blocks
that are filled (and the header, where it lacks the target's ``Language`` or
``Plural-Forms``) are written anew by polib; every other block (a translated entry, an
obsolete one, a fuzzy one left alone, a stray comment) and every separator is copied byte for
byte, so a translator's diff shows the machine's entries and nothing else, whatever tool wrapped
the file before (polib, msgcat and Poedit wrap long lines differently).

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
  A ``.pot`` without ``Plural-Forms`` gets the target language's from babel's gettext data;
- the ``fuzzy`` flag and the translator comment ``# luong: machine translation by MODEL,
  review it``, so that msgfmt leaves it out of the ``.mo`` until a person has reviewed it
  (as Weblate and Translate Toolkit mark theirs);
- its lines translated one at a time: a message is cut at its real newlines, each line's
  leading and trailing blanks kept and its words translated, and the lines joined again, so
  the translation has exactly the newlines of the source (msgfmt --check-format requires the
  first and last to agree; a sentence-level model would merge or drop them otherwise);
- its keyboard accelerator (``_File``, GTK; ``&File``, Qt and KDE) taken out before the
  translation and put back once after it (``ACCELERATORS``, ``find_accelerator``).

The translation itself is one function, ``translate_messages``; ``fill_catalog`` takes any
function of a list of strings, so tests and other translators plug in there.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polib
from babel.core import UnknownLocaleError
from babel.messages.plurals import get_plural

from luong.config.faces import PLACEHOLDER_MODES
from luong.errors import LuongError, LuongTypeError
from luong.placeholders import translate_constrained, translate_masked
from luong.search_options import SearchOptions
from luong.translator import Translator

__all__ = [
    "ACCELERATORS",
    "FilledCatalog",
    "FillSummary",
    "catalog_language",
    "check_language",
    "detect_accelerator",
    "fill_catalog",
    "find_accelerator",
    "format_placeholders",
    "plural_forms",
    "translate_messages",
]

ACCELERATORS = ("auto", "_", "&", "none")
"""The keyboard accelerator markers ``fill_catalog`` knows: ``_`` (GTK, GNOME), ``&`` (Qt,
KDE, Windows), ``none`` (leave every ``_`` and ``&`` to the model), ``auto``
(``detect_accelerator``)."""

MACHINE_COMMENT = "luong: machine translation by {model}, review it"

# printf's conversions as msgfmt --check-format reads a c-format string (C99's, glibc's %m, the
# <inttypes.h> macros xgettext writes as %<PRId64>), and Python's %-formats with their
# optional (name).
_C_FORMAT = re.compile(
    r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*(?:\d+\$)?)?(?:\.(?:\d+|\*(?:\d+\$)?))?"
    r"(?:hh|h|ll|l|L|q|j|z|Z|t|I)?(?:[diouxXeEfFgGaAcspnm%]|<PRI\w+>)"
)
_PYTHON_FORMAT = re.compile(
    r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlL]?[diouxXeEfFgGcrsa%]"
)
_FORMATS = {"c-format": _C_FORMAT, "python-format": _PYTHON_FORMAT}


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
    format_entries: int  # filled entries with a c-format or python-format flag
    format_matches: int  # of which every msgstr has its source's placeholders, as often

    def line(self) -> str:
        """The summary as ``luong po`` prints it."""
        return (
            f"filled {self.filled} entries ({self.plural_entries} plural, {self.plural_forms} "
            f"plural forms); skipped {self.skipped_translated} translated, "
            f"{self.skipped_obsolete} obsolete, {self.skipped_fuzzy} fuzzy; "
            f"{self.left_empty} left as they were (an empty translation); placeholders "
            f"checked: {self.format_matches} of {self.format_entries} format entries match"
        )


@dataclass(frozen=True)
class FilledCatalog:
    """A catalog's text after ``fill_catalog``, and what was done."""

    text: str
    summary: FillSummary
    language: str  # the header's Language, as written
    nplurals: int  # the plural forms a plural entry has
    accelerator: str  # the marker used ("_", "&" or "none")


def translate_messages(
    translator: Translator,
    texts: Sequence[str],
    options: SearchOptions,
    placeholders: str = "constrain",
) -> list[str]:
    """The one place a catalog's messages are translated: ``texts`` (single lines, without
    their accelerators) in, one translation each out, in order, their placeholders kept as
    ``placeholders`` says (``luong.config.PLACEHOLDER_MODES``: ``"constrain"``, the better
    on gettext-en-de's dev, docs/results.md; ``"mask"``; ``"off"``: the model's own).

    Raises:
        TypeError: ``translator`` is not a ``Translator``, ``options`` not ``SearchOptions``.
        ValueError: an unknown ``placeholders``; as ``luong.search.decode``.
    """
    if not isinstance(translator, Translator):
        raise LuongTypeError(f"translator: expected a Translator, got {type(translator).__name__}")
    if not isinstance(options, SearchOptions):
        raise LuongTypeError(f"options: expected SearchOptions, got {type(options).__name__}")
    if placeholders not in PLACEHOLDER_MODES:
        raise LuongError(
            f"placeholders: expected one of {', '.join(PLACEHOLDER_MODES)}, got {placeholders!r}"
        )
    if placeholders == "off":
        return translator.translate(list(texts), options)
    keep = translate_masked if placeholders == "mask" else translate_constrained
    return [outputs[0] if outputs else "" for outputs in keep(translator.model, texts, options)]


def _primary(language: str) -> str:
    """``de_AT.UTF-8@euro`` -> ``de``: the language without region, script, charset."""
    return re.split(r"[_\-.@]", language.strip())[0].lower()


def check_language(catalog: str, target: str) -> None:
    """Raise unless a catalog's ``Language`` (``de``, ``de_DE``, ``pt-BR``) is the model's
    target language (``de``); a region the model does not name is accepted.

    Raises:
        ValueError: they name different languages.
    """
    if not target.strip():
        raise LuongError(f"target: expected a language code such as 'de', got {target!r}")
    if catalog.strip() and _primary(catalog) != _primary(target):
        raise LuongError(
            f"the catalog's Language is {catalog.strip()}, the model translates into {target}"
        )


def plural_forms(language: str) -> str:
    """The gettext ``Plural-Forms`` value of a language, from babel's data:
    ``plural_forms("de")`` is ``"nplurals=2; plural=(n != 1);"``.

    Raises:
        ValueError: babel knows no such language.
    """
    try:
        rule = get_plural(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        raise LuongError(f"language: babel knows no plural forms for {language!r}") from None
    return f"nplurals={rule.num_plurals}; plural={rule.plural_expr};"


def format_placeholders(text: str, flag: str) -> Counter[str]:
    """The format directives msgfmt --check-format compares in a ``c-format`` or
    ``python-format`` string, counted (``%%`` included: it must stay ``%%``).

    Raises:
        ValueError: an unknown flag.
    """
    if flag not in _FORMATS:
        raise LuongError(f"flag: expected one of {', '.join(_FORMATS)}, got {flag!r}")
    return Counter(_FORMATS[flag].findall(text))


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

    def add(self, text: str) -> None:
        for _, words, _ in _lines(self._strip(text)[0]):
            if words:
                self.pending.setdefault(words, None)

    def _strip(self, text: str) -> tuple[str, int | None]:
        if self.marker == "none":
            return text, None
        at = find_accelerator(text, self.marker)
        return (text, None) if at is None else (text[:at] + text[at + 1 :], at)

    def translate(self, translate: Callable[[list[str]], list[str]]) -> None:
        sources = list(self.pending)
        outputs = translate(sources) if sources else []
        if not isinstance(outputs, list) or len(outputs) != len(sources):
            got = len(outputs) if isinstance(outputs, list) else type(outputs).__name__
            raise LuongError(f"translate: expected {len(sources)} translations, got {got}")
        for source, output in zip(sources, outputs, strict=True):
            if not isinstance(output, str):
                raise LuongTypeError(f"translate: expected strings, got {type(output).__name__}")
            self.pending[source] = output

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


def _blocks(text: str) -> list[str]:
    """``text`` cut into blocks of non-blank lines and runs of blank lines, in order
    (``"".join(_blocks(text)) == text``)."""
    parts: list[str] = []
    for line in text.splitlines(keepends=True):
        blank = not line.strip()
        if parts and (not parts[-1].strip()) == blank:
            parts[-1] += line
        else:
            parts.append(line)
    return parts


def _parse_block(block: str) -> polib.POFile:
    """A block parsed alone: the header (no entries, its metadata), or one entry. polib reads
    the comments of a file's first entry as the file's own, so an entry is read after an
    empty header."""
    text = block if block.endswith("\n") else block + "\n"
    try:
        po = polib.pofile(text, wrapwidth=78)
        if len(po) and po.header:
            po = polib.pofile('msgid ""\nmsgstr ""\n\n' + text, wrapwidth=78)
    except (OSError, ValueError) as error:
        first = block.splitlines()[0] if block.strip() else ""
        raise LuongError(f"not a gettext catalog entry ({error}): {first[:80]!r}") from None
    return po


def _header_value(header: str, key: str) -> str | None:
    """A header field's value in the header block's text (``"Language: de\\n"``)."""
    match = re.search(rf'^"{re.escape(key)}:[ \t]*([^"\n]*?)(?:\\n)?"$', header, re.MULTILINE)
    return match.group(1).strip() if match else None


def _set_header(header: str, key: str, value: str) -> str:
    """The header block with ``key``'s line set to ``value`` (replaced, or appended)."""
    line = f'"{key}: {value}\\n"'
    pattern = re.compile(rf'^"{re.escape(key)}:[^\n]*"$', re.MULTILINE)
    if pattern.search(header):
        return pattern.sub(lambda _: line, header, count=1)
    ends = header.endswith("\n")
    return (header[:-1] if ends else header) + "\n" + line + ("\n" if ends else "")


def catalog_language(text: str) -> str:
    """The ``Language`` of a catalog's header ("" for a ``.pot``'s or none)."""
    for block in _blocks(text):
        if block.strip():
            po = _parse_block(block)
            if len(po) == 0 and po.metadata:
                return str(po.metadata.get("Language", "")).strip()
            if len(po):  # the first entry is not the header: there is none
                return ""
    return ""


def fill_catalog(
    text: str,
    translate: Callable[[list[str]], list[str]],
    *,
    target: str,
    model: str,
    retranslate_fuzzy: bool = False,
    accelerator: str = "auto",
) -> FilledCatalog:
    """Fill a catalog's untranslated entries (and its fuzzy ones with ``retranslate_fuzzy``)
    with ``translate``'s translations; every other byte is kept (the module's docstring).

    Args:
        text: the ``.po`` or ``.pot`` file's text (UTF-8, decoded).
        translate: the messages' lines (``translate_messages``) -> their translations.
        target: the target language (``de``); the header's ``Language`` must name the same
            language (``check_language``), and is set to it when empty.
        model: the model's name in the translator comment (its folder's name).
        retranslate_fuzzy: translate fuzzy entries again (their msgstr replaced).
        accelerator: ``ACCELERATORS``: the keyboard accelerator marker, or ``auto``.

    Returns:
        the ``FilledCatalog``: the new text, its ``FillSummary``, language, plural count and
        accelerator.

    Raises:
        TypeError: ``text`` not a string, ``translate`` not callable or returning non-strings.
        ValueError: an unknown ``accelerator``, a header in another language or charset, a
            ``Plural-Forms`` without ``nplurals``, a block polib cannot read.
    """
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected str, got {type(text).__name__}")
    if not callable(translate):
        raise LuongTypeError(f"translate: expected a function, got {type(translate).__name__}")
    if accelerator not in ACCELERATORS:
        raise LuongError(
            f"accelerator: expected one of {', '.join(ACCELERATORS)}, got {accelerator!r}"
        )
    if not model.strip():
        raise LuongError(f"model: expected the model's name, got {model!r}")
    blocks = _blocks(text)
    parsed: dict[int, polib.POEntry] = {}
    header_at: int | None = None
    for i, block in enumerate(blocks):
        if not block.strip():
            continue
        po = _parse_block(block)
        if len(po) == 0 and po.metadata and header_at is None and not parsed:
            header_at = i
        elif len(po) == 1:
            parsed[i] = po[0]
        elif len(po) > 1:  # cannot happen without a blank line between entries
            raise LuongError(f"expected one entry per block, got {len(po)}: {block[:80]!r}")

    # A file without a header gets one in front, as msginit writes it.
    header = blocks[header_at] if header_at is not None else 'msgid ""\nmsgstr ""\n'
    language = _header_value(header, "Language") or ""
    check_language(language, target)
    charset = re.search(r"charset=([\w-]+)", _header_value(header, "Content-Type") or "")
    if charset and charset.group(1).upper() not in ("UTF-8", "CHARSET"):
        raise LuongError(
            f"expected a UTF-8 catalog, got charset={charset.group(1)} (convert it first: "
            "msgconv --to-code=UTF-8)"
        )
    new_header = header
    if not language:
        new_header = _set_header(new_header, "Language", target)
    if charset is None or charset.group(1).upper() == "CHARSET":
        new_header = _set_header(new_header, "Content-Type", "text/plain; charset=UTF-8")
    forms = _header_value(header, "Plural-Forms") or ""
    nplurals = re.search(r"nplurals\s*=\s*(\d+)", forms)
    if nplurals is None:
        if forms and "INTEGER" not in forms:
            raise LuongError(f"Plural-Forms: expected nplurals=N, got {forms!r}")
        forms = plural_forms(language or target)
        nplurals = re.search(r"nplurals\s*=\s*(\d+)", forms)
        new_header = _set_header(new_header, "Plural-Forms", forms)
    assert nplurals is not None
    count = int(nplurals.group(1))
    if not 1 <= count <= 6:
        raise LuongError(f"Plural-Forms: expected nplurals between 1 and 6, got {count}")

    if accelerator == "auto":
        accelerator = detect_accelerator([e.msgid for e in parsed.values() if not e.obsolete])
    messages = _Messages(accelerator)
    todo: list[int] = []
    translated = obsolete = fuzzy = 0
    for i, entry in parsed.items():
        if entry.obsolete:
            obsolete += 1
        elif entry.fuzzy and not retranslate_fuzzy:
            fuzzy += 1
        elif not entry.fuzzy and _complete(entry, count):
            translated += 1
        else:
            todo.append(i)
            messages.add(entry.msgid)
            if entry.msgid_plural:
                messages.add(entry.msgid_plural)
    messages.translate(translate)

    plural_entries = plural_filled = format_entries = format_matches = empty = 0
    comment = MACHINE_COMMENT.format(model=model)
    out = list(blocks)
    filled: list[int] = []
    for i in todo:
        entry = parsed[i]
        retranslate = entry.fuzzy
        pairs: list[tuple[int | None, str, str | None]] = []  # (form, source, translation)
        if entry.msgid_plural:
            for n in range(count):
                if retranslate or not entry.msgstr_plural.get(n):
                    source = entry.msgid if n == 0 else entry.msgid_plural
                    pairs.append((n, source, messages.of(source)))
        else:
            pairs.append((None, entry.msgid, messages.of(entry.msgid)))
        done = [(form, s, t) for form, s, t in pairs if t is not None]
        if len(done) < len(pairs):  # the block stays as it was
            empty += 1
            continue
        filled.append(i)
        for form, _, translation in done:
            if form is None:
                entry.msgstr = translation
            else:
                entry.msgstr_plural[form] = translation
        if entry.msgid_plural:
            plural_entries += 1
            plural_filled += len(done)
        if "fuzzy" not in entry.flags:
            entry.flags.insert(0, "fuzzy")
        kept = [c for c in entry.tcomment.splitlines() if not c.startswith("luong: ")]
        entry.tcomment = "\n".join([*kept, comment])
        flag = next((f for f in entry.flags if f in _FORMATS), None)
        if flag is not None:
            format_entries += 1
            format_matches += all(
                format_placeholders(s, flag) == format_placeholders(t or "", flag)
                for _, s, t in done
            )
        out[i] = entry.__unicode__(wrapwidth=78)
    if header_at is not None:
        out[header_at] = new_header
    else:
        out[:0] = [new_header, "\n"]
    summary = FillSummary(
        filled=len(filled),
        plural_entries=plural_entries,
        plural_forms=plural_filled,
        skipped_translated=translated,
        skipped_obsolete=obsolete,
        skipped_fuzzy=fuzzy,
        left_empty=empty,
        format_entries=format_entries,
        format_matches=format_matches,
    )
    return FilledCatalog("".join(out), summary, language or target, count, accelerator)


def _complete(entry: polib.POEntry, count: int) -> bool:
    """Every msgstr of the entry is there (a plural entry's ``count`` forms)."""
    if entry.msgid_plural:
        return all(entry.msgstr_plural.get(n) for n in range(count))
    return bool(entry.msgstr)
