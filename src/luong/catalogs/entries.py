"""A catalog's entries as ``luong.catalogs.fill.fill_catalog`` fills them, one at a time.

Their messages as the model reads them (``Messages``: each cut at its newlines, its keyboard
accelerator taken out before the translation and put back once after it, ``ACCELERATORS``,
``find_accelerator``, ``detect_accelerator``; every distinct line translated in one call), which
entries are filled (``entries_to_fill``) and which are left for a person and why
(``untranslatable``, ``entry_left_as``), what a filled entry gets (``fill_entry``: its msgstrs,
the ``fuzzy`` flag, luong's translator comments; ``fill_from_memory`` and ``recall_entry``, from
a translation memory; ``suggest_matches``, the memory's fuzzy matches for a person), written as
polib writes it (``rendered``), and msgfmt --check-format's comparison of a msgstr with its
source (``format_placeholders``, ``format_error``). The module docstring of
``luong.catalogs.fill`` says what a filled entry gets.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polib

from luong.catalogs.directives import FORMATS, in_order
from luong.catalogs.header import Header, charset_text, not_held
from luong.catalogs.po_file import Block, render_entry
from luong.common.errors import LuongError, LuongTypeError
from luong.common.lines import json_line
from luong.memory.glossary import Glossary
from luong.memory.translation_memory import Match, Recall, TranslationMemory

__all__ = [
    "ACCELERATORS",
    "CONFIDENCE_COMMENT",
    "LEFT_UNTRANSLATED",
    "MACHINE_COMMENT",
    "MATCH_COMMENT",
    "MATCH_PREFIX",
    "MEMORY_COMMENT",
    "WHITESPACE_COMMENT",
    "MachineText",
    "Messages",
    "Translate",
    "Translated",
    "confidence_shown",
    "detect_accelerator",
    "entries_to_fill",
    "entry_left_as",
    "fill_entry",
    "fill_from_memory",
    "find_accelerator",
    "format_error",
    "format_placeholders",
    "held_in_charset",
    "recall_entry",
    "rendered",
    "suggest_matches",
    "translations",
    "untranslatable",
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


def format_error(source: str, translation: str, flag: str) -> str | None:
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


class Messages:
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


def confidence_shown(value: float) -> str:
    """A confidence as a comment writes it: rounded down to two decimals (so that an entry
    shown ``0.70`` holds at least 0.70), ``nan`` for none."""
    return "nan" if math.isnan(value) else f"{math.floor(value * 100) / 100:.2f}"


LEFT_UNTRANSLATED = "left untranslated"


def entry_left_as(entry: polib.POEntry) -> str:
    """What an entry to fill that is not filled is left as: a fuzzy one that holds a
    translation (``retranslate_fuzzy``) keeps it, flag and all; any other stays
    untranslated."""
    translated = entry.msgstr or any(entry.msgstr_plural.values())
    return "kept its fuzzy translation" if entry.fuzzy and translated else LEFT_UNTRANSLATED


def untranslatable(
    block: Block, messages: Messages, too_long: Callable[[str], str | None] | None
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


def held_in_charset(
    translated: list[Translated], header: Header
) -> tuple[list[Translated], str | None]:
    """An entry's translations as the catalog's charset holds them (``charset_text``), and
    why the entry is left for a person (None when every character is held)."""
    held: list[Translated] = []
    for form, source, translation in translated:
        text, missing = charset_text(translation, header.encoding)
        if missing is not None:
            return translated, not_held(missing, header)
        held.append((form, source, text))
    return held, None


def entries_to_fill(
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


Translated = tuple[int | None, str, str]
"""A msgstr filled: its form (None: ``msgstr``; n: ``msgstr[n]``), source, translation."""


def translations(entry: polib.POEntry, messages: Messages, count: int) -> list[Translated] | None:
    """The translations of ``entry``'s msgstrs to fill: an untranslated entry's empty
    msgstrs, a fuzzy one's all of them; a plural entry's ``msgstr[0]`` translates
    ``msgid``, its other ``count - 1`` ``msgid_plural``. None when a line of one of them
    came out empty (``Messages.of``): a half-filled entry would be worse than none."""
    forms: list[tuple[int | None, str]] = [(None, entry.msgid)]
    if entry.msgid_plural:
        forms = [
            (n, entry.msgid if n == 0 else entry.msgid_plural)
            for n in range(count)
            if entry.fuzzy or not entry.msgstr_plural.get(n)
        ]
    translated: list[Translated] = []
    for form, source in forms:
        translation = messages.of(source)
        if translation is None:
            return None
        translated.append((form, source, translation))
    return translated


def fill_entry(
    entry: polib.POEntry,
    translated: list[Translated],
    comment: str,
    sure: float | None,
    matches: Sequence[Match] = (),
) -> None:
    """Give ``entry`` its ``translated`` msgstrs (``translations``), the ``fuzzy`` flag and
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
        kept.append(CONFIDENCE_COMMENT.format(confidence=confidence_shown(sure)))
    kept += [_match_comment(match) for match in matches]
    entry.tcomment = "\n".join([*kept, comment])


def suggest_matches(entry: polib.POEntry, matches: Sequence[Match]) -> None:
    """Give ``entry``, left for a person, a comment per fuzzy match of a translation memory,
    best first, in place of older ones; its other comments (a kept fuzzy translation's
    machine comment too), msgstrs and flags as they were."""
    kept = [c for c in entry.tcomment.splitlines() if not c.startswith(MATCH_PREFIX)]
    entry.tcomment = "\n".join([*kept, *(_match_comment(match) for match in matches)])


def rendered(entry: polib.POEntry, newline: str) -> str:
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


def recall_entry(
    entry: polib.POEntry,
    memory: TranslationMemory,
    count: int,
    messages: Messages,
    glossary: Glossary | None = None,
) -> tuple[list[tuple[int | None, str, Match]] | None, tuple[Match, ...]]:
    """The msgstrs of ``entry`` to fill (as ``translations`` lists them) from ``memory``,
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


def fill_from_memory(
    entry: polib.POEntry, translated: list[Translated], matches: list[Match]
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


def _complete(entry: polib.POEntry, count: int) -> bool:
    """Every msgstr of the entry is there (a plural entry's ``count`` forms)."""
    if entry.msgid_plural:
        return all(entry.msgstr_plural.get(n) for n in range(count))
    return bool(entry.msgstr)
