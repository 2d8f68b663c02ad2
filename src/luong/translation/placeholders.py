"""Placeholders and protected spans of software messages, and translation that keeps them.

A translation that loses or breaks a ``%s`` is worse than none (``msgfmt --check-format``
rejects the catalog). ``find_placeholders`` finds the spans a translation must carry over
unchanged, with one set of patterns:

- ``printf``: printf's directives as msgfmt reads a ``c-format`` string, from the one table
  the catalog's format check reads too (``luong.catalogs.directives``): ``%``, an optional ``N$``,
  flags ``-+#0'I``, width (digits, ``*``, ``*N$``), ``.precision``, a length
  (``hh h ll l L q j z Z t``), a conversion ``d i o u x X e E f F g G a A c s C S p n m``
  (and Python's ``r``) or an ``<inttypes.h>`` macro; ``%%``: ``%s %d %5.2f %1$s %-10s %lu
  %% %m %<PRIu64> %1$*2$d %r``; the space flag only before a signed number's conversion
  that ends its word (``% d files``; ``100% sure``, ``5% a year`` and ``10% i.e.`` are text);
- ``python``: ``%(name)`` then flags, width, precision and a conversion: ``%(name)s``;
- ``braces``: ``{``, a name, index or nothing (``[A-Za-z0-9_.[]]*``), an optional
  conversion ``!r`` ``!s`` ``!a``, an optional ``:spec`` without spaces, ``}``:
  ``{name} {0} {} {0:.2f} {user.name} {0!r}``;
- ``tag``: an HTML/XML start, end or empty tag, attributes quoted or not:
  ``<b> </a> <br/> <a href="...">``; but a bare start tag of a name that is not an HTML
  element (``HTML_ELEMENTS``) and whose end tag the text does not hold is a usage message's
  metavariable, which translators translate (``git add <file>`` is ``git add <Datei>``), not
  a span;
- ``option``: ``--`` and a name of letters, digits, ``-`` and ``_`` (not after a word
  character or ``-``): ``--help --dry-run``; a value after ``=`` is not part of it
  (``--exclude=PAT`` is ``--exclude=MUSTER`` in German).
- ``url``: ``http://``, ``https://`` or ``ftp://`` up to whitespace, quotes or angle
  brackets, a trailing ``.,;:!?)]`` left out: ``https://example.org/a?b=c``;
- ``escape``: the two characters backslash and ``n``, as catalogs write a line break;
- ``newline``: a line break, ``\\r\\n``, ``\\n`` or ``\\r``.

The spans are non-overlapping and leftmost-longest: from the left, at the first position where
any pattern matches, the longest match of any pattern is taken (``%(name)s`` rather than
``%(``; a tag rather than nothing), and the search goes on after it.

**Masking** (``translate_masked``, ``luong translate --placeholders mask``): each span is
replaced by ``mask`` (``%d`` by default, itself a placeholder: of ``{0}``, ``%s``,
``<br/>`` and ``%d``, the one with the best BLEU on the 334 devtest sentences of gettext-en-de
that hold placeholders, beam 5: 37.3, 46.4, 37.3, 47.5; unmasked 55.5, with 298 of 334
outputs keeping their placeholders)
written as a word of its own; the masked sources are decoded with their
attention kept; then every placeholder in the output (the copied masks, and any the model
wrote of its own) is removed, and each source span is put back at the output word that the
attention aligns to its mask (``luong.translation.alignment``; the nearest aligned word when none
is): before that word when it comes from a later source word, after it when from an earlier one,
spans at the same place in source order. A span that touched the word after it in the
source (``<b>Save``) is written against the word after it, one that touched the word before
it (``file</b>``, ``%s.``) against the word before it, unless that makes a different span
(``%`` + ``s``); then it is written as a word of its own. So each source span appears in the
output exactly as often as in the source (counted with ``find_placeholders``), by
construction; and the arguments a format string takes in order (``%s``, ``%d``, ``{}``)
are dealt to their places in the source's order, as ``msgfmt --check-format`` asks
(``keeps_placeholders``).

**Constraints** (``translate_constrained``, ``luong translate --placeholders constrain``):
the source is decoded as it is, by beam search; where an output does not keep the source's
spans (``keeps_placeholders``), the source is decoded again by lexically constrained beam
search with its spans as phrases held exactly as often as the source has them
(``luong.search.constrained``, ``exact``: an output may end only when it holds each span, and
no token may complete one more occurrence), so the model places each span itself, in
context; an output that still differs (a span the target vocabulary cannot spell, one that
contains another, an output cut at its length limit) is masked instead (``kept_or_masked``).
So here too each source span appears exactly as often as in the source, by construction, and
a sentence the model already translates with its spans is left as beam search gave it
(constraining every sentence costs BLEU: the banks share the beam out even where the best
output needs no help; docs/results.md has both).

**A user's phrases too** (``luong translate --constraints`` beside ``--placeholders``): each
search holds them, at least as often as listed: the first, the constrained one beside the
spans (``exact`` per phrase: the spans exactly, the phrases at least), and the masked one,
whose restoring puts no span inside a phrase and strips no character of one
(``restore``'s ``keep``). A phrase may hold no placeholder of its own (``check_phrases``):
the spans an output holds are the source's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from luong.catalogs.directives import BRACE_FIELD, PRINTF, PYTHON_NAMED, in_order
from luong.common.errors import LuongError, LuongTypeError

__all__ = [
    "HTML_ELEMENTS",
    "DEFAULT_MASK",
    "PATTERNS",
    "MaskedSource",
    "Span",
    "check_mask",
    "check_phrases",
    "find_placeholders",
    "holds_phrases",
    "keeps_placeholders",
    "mask_source",
    "restore",
]

PATTERNS: dict[str, re.Pattern[str]] = {
    "printf": PRINTF,
    "python": PYTHON_NAMED,
    "braces": BRACE_FIELD,
    "tag": re.compile(
        r"</?[A-Za-z][A-Za-z0-9:_.-]*"
        r"(?:\s+[A-Za-z_:][A-Za-z0-9:_.-]*(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'=<>`]+))?)*"
        r"\s*/?>"
    ),
    "option": re.compile(r"(?<![\w-])--[A-Za-z0-9][A-Za-z0-9_-]*"),
    "url": re.compile(r"(?:https?|ftp)://[^\s<>\"']*[^\s<>\"'.,;:!?)\]]"),
    "escape": re.compile(r"\\n"),
    "newline": re.compile(r"\r\n|\n|\r"),
}
"""The patterns of the module docstring's table, by kind."""

_ANY = re.compile("|".join(f"(?:{p.pattern})" for p in PATTERNS.values()))

DEFAULT_MASK = "%d"
"""What each span becomes before decoding (chosen on gettext-en-de: the module docstring)."""


@dataclass(frozen=True)
class Span:
    """A placeholder found in a text: ``text[start:end]``, and the pattern that found it."""

    start: int
    end: int
    text: str
    kind: str


def find_placeholders(text: str) -> list[Span]:
    """The placeholders and protected spans of ``text`` (the module docstring's table),
    non-overlapping, leftmost-longest, in order.

    Raises:
        TypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
    spans = []
    position = 0
    while (first := _ANY.search(text, position)) is not None:
        start = first.start()
        best: tuple[int, str] | None = None
        for kind, pattern in PATTERNS.items():
            match = pattern.match(text, start)
            if match is not None and match.end() > max(start, best[0] if best else 0):
                best = (match.end(), kind)
        if best is None or (best[1] == "tag" and _metavariable(text, text[start : best[0]])):
            position = start + 1  # no span here: step on
            continue
        spans.append(Span(start, best[0], text[start : best[0]], best[1]))
        position = best[0]
    return spans


HTML_ELEMENTS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "big",
        "blockquote",
        "body",
        "br",
        "caption",
        "cite",
        "code",
        "dd",
        "del",
        "dfn",
        "div",
        "dl",
        "dt",
        "em",
        "font",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "hr",
        "html",
        "i",
        "img",
        "ins",
        "kbd",
        "label",
        "li",
        "ol",
        "p",
        "pre",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "title",
        "tr",
        "tt",
        "u",
        "ul",
        "var",
    ]
)
"""The HTML elements whose bare start tag (``<b>``) is a tag; see ``_metavariable``."""

_START_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9:_.-]*)\s*>")


def _metavariable(text: str, tag: str) -> bool:
    """Whether ``tag``, found in ``text``, is a usage message's metavariable (``git add
    <file>``, which translators translate: ``<Datei>``) rather than a tag: a bare start tag
    (no attributes, not ``/>``) of a name that is not an HTML element and whose end tag
    ``text`` does not hold."""
    bare = _START_TAG.fullmatch(tag)
    if bare is None:
        return False
    name = bare.group(1)
    return name.lower() not in HTML_ELEMENTS and f"</{name}>" not in text


@dataclass(frozen=True)
class MaskedSource:
    """A source with its placeholders masked (``mask_source``).

    text: the source with each span replaced by the mask, as a word of its own; spans: the
    spans of the original, in order; words: the 0-based word of ``text.split()`` that masks
    each span; glue_before, glue_after: whether each span touched the text before (after)
    it in the original (no whitespace between).
    """

    text: str
    spans: list[Span]
    words: list[int]
    glue_before: list[bool]
    glue_after: list[bool]


def mask_source(text: str, mask: str = DEFAULT_MASK) -> MaskedSource:
    """``text`` with each placeholder replaced by ``mask``, a word of its own.

    Raises:
        TypeError: ``text`` or ``mask`` is not a str.
        ValueError: ``mask`` is not one placeholder (``find_placeholders`` must find it
            whole, so that a copy of it in the output is found and removed) or holds a space.
    """
    check_mask(mask)
    spans = find_placeholders(text)
    out = ""
    words: list[int] = []
    glue_before: list[bool] = []
    glue_after: list[bool] = []
    position = 0
    for span in spans:
        out += text[position : span.start]
        glue_before.append(span.start > 0 and not text[span.start - 1].isspace())
        glue_after.append(span.end < len(text) and not text[span.end].isspace())
        if out and not out[-1].isspace():
            out += " "  # the mask is a word of its own
        words.append(len(out.split()))
        out += mask + (" " if glue_after[-1] else "")
        position = span.end
    out += text[position:]
    return MaskedSource(out, spans, words, glue_before, glue_after)


def check_mask(mask: object) -> None:
    """Raise unless ``mask`` is one placeholder without spaces (what a span becomes)."""
    if not isinstance(mask, str):
        raise LuongTypeError(f"mask: expected a str, got {type(mask).__name__}")
    found = find_placeholders(mask)
    if len(found) != 1 or found[0].text != mask or mask != mask.strip() or " " in mask:
        raise LuongError(
            f"mask: expected one placeholder without spaces (such as {DEFAULT_MASK!r}), "
            f"got {mask!r}"
        )


def _without_placeholders(word: str, kept: list[bool]) -> tuple[str, list[bool]]:
    """``word`` with every placeholder removed, again until none is left (a removal can make
    a new one: ``%%%s``), and ``kept`` (a flag per character: part of a phrase to keep) for
    what is left. A placeholder that takes characters of a kept phrase loses only its own
    (``%`` of ``%icon`` where ``icon`` is kept); one made of kept characters alone goes
    whole."""
    while spans := find_placeholders(word):
        for span in reversed(spans):
            gone = {i for i in range(span.start, span.end) if not kept[i]}
            if not gone:
                gone = set(range(span.start, span.end))
            word = "".join(c for i, c in enumerate(word) if i not in gone)
            kept = [f for i, f in enumerate(kept) if i not in gone]
    return word, kept


# The characters every pattern needs: a word without them can neither make a placeholder
# nor lengthen one beside it.
_STARTERS = frozenset("%{}<>-:/\\=")


def _clean(words: list[str], marks: list[list[bool]]) -> list[str]:
    """The output's words with every placeholder removed, inside a word or across words (a
    tag ``<a href="x">`` spans several): the words such a placeholder touches are dropped
    (""); with characters of a kept phrase (``marks``: a flag per character of each word)
    they lose only the placeholder's characters that are not of the phrase."""
    pairs = [_without_placeholders(word, kept) for word, kept in zip(words, marks, strict=True)]
    cleaned = [word for word, _ in pairs]
    kept = [flags for _, flags in pairs]
    while True:
        starts, position = [], 0
        for word in cleaned:
            starts.append(position)
            position += len(word) + 1
        spans = find_placeholders(" ".join(cleaned))
        if not spans:
            return cleaned
        if not any(any(flags) for flags in kept):
            for span in spans:
                for j, start in enumerate(starts):
                    if start < span.end and span.start < start + len(cleaned[j]):
                        cleaned[j] = ""
            continue
        span = spans[0]  # one at a time: each removal moves the characters after it
        touched = [
            j
            for j, start in enumerate(starts)
            if start < span.end and span.start < start + len(cleaned[j])
        ]
        for j in touched:
            inside = [i for i in range(len(cleaned[j])) if span.start <= starts[j] + i < span.end]
            gone = {i for i in inside if not kept[j][i]}
            if not any(kept[j]) or not gone:
                gone = set(range(len(cleaned[j])))  # no phrase in it, or nothing else: drop
            cleaned[j] = "".join(c for i, c in enumerate(cleaned[j]) if i not in gone)
            kept[j] = [f for i, f in enumerate(kept[j]) if i not in gone]


def _kept_characters(output: str, keep: Sequence[str]) -> list[list[bool]]:
    """Per word of ``output.split()``, a flag per character: whether an occurrence of a
    phrase of ``keep`` covers it."""
    words = list(re.finditer(r"\S+", output))
    marks = [[False] * len(word.group()) for word in words]
    for phrase in keep:
        if not phrase:
            continue
        for found in re.finditer(f"(?={re.escape(phrase)})", output):
            begin, end = found.start(), found.start() + len(phrase)
            for j, word in enumerate(words):
                for i in range(max(begin, word.start()), min(end, word.end())):
                    marks[j][i - word.start()] = True
    return marks


def restore(
    masked: MaskedSource,
    output: str,
    links: Sequence[tuple[int, int]],
    keep: Sequence[str] = (),
) -> str:
    """The output of a masked source with the source's spans put back (the module
    docstring): each span exactly as often as in the source.

    Args:
        masked: what ``mask_source`` made of the source.
        output: the output text decoded from ``masked.text``.
        links: its word alignment, ``(source word, output word)`` pairs
            (``hypothesis_alignment``).
        keep: phrases of the output (a user's constraints, as written) that no span is put
            inside of: a span aligned between two words of one is put before or after it.

    Raises:
        TypeError: ``masked`` is not a ``MaskedSource``, ``output`` not a str.
        ValueError: a link names an output word beyond the output's.
    """
    if not isinstance(masked, MaskedSource):
        raise LuongTypeError(f"masked: expected a MaskedSource, got {type(masked).__name__}")
    if not isinstance(output, str):
        raise LuongTypeError(f"output: expected a str, got {type(output).__name__}")
    words = output.split()
    whole = _phrase_words(output, keep)
    aligned: dict[int, int] = {}
    for i, j in links:
        if not 0 <= j < len(words):
            raise LuongError(f"links: output word {j} is beyond the output's {len(words)} words")
        aligned.setdefault(j, i)
    cleaned = _clean(words, _kept_characters(output, keep))
    # slots[j] = (spans before output word j, spans after it); spans with no output word at all
    # go at the end.
    before: dict[int, list[int]] = {}
    after: dict[int, list[int]] = {}
    tail: list[int] = []
    for k, source_word in enumerate(masked.words):
        if not aligned:
            tail.append(k)
            continue
        # The output word aligned to the mask, or the one aligned nearest to it (ties: a copy
        # of a mask, as a run of spans goes together, then the earlier source word, then the
        # earlier output word).
        j = min(
            aligned,
            key=lambda j: (abs(aligned[j] - source_word), cleaned[j] != "", aligned[j], j),
        )
        if aligned[j] < source_word:  # after word j: after the phrase it is inside of
            after.setdefault(whole.get(j, (j, j))[1], []).append(k)
        else:
            before.setdefault(whole.get(j, (j, j))[0], []).append(k)
    items: list[tuple[str, int | None]] = []  # (text, the span it is, or None)
    for j, word in enumerate(cleaned):
        items.extend((masked.spans[k].text, k) for k in before.get(j, []))
        if word:
            items.append((word, None))
        items.extend((masked.spans[k].text, k) for k in after.get(j, []))
    items.extend((masked.spans[k].text, k) for k in tail)
    # Arguments taken in order (%s, %d, {}) go back in the source's order, whatever places
    # the attention gave them: the places are kept, the spans dealt to them in order.
    places = {n: s for n, (_, s) in enumerate(items) if s is not None}
    places = {n: s for n, s in places.items() if _in_order(masked.spans[s])}
    for n, s in zip(places, sorted(places.values()), strict=True):
        items[n] = (masked.spans[s].text, s)
    expected = Counter(span.text for span in masked.spans)
    glued = _join(items, masked, glue=True)
    if Counter(span.text for span in find_placeholders(glued)) == expected:
        return glued
    # A glued span made another placeholder with its neighbour: every span a word of its own.
    spaced = _join(items, masked, glue=False)
    if Counter(span.text for span in find_placeholders(spaced)) == expected:
        return spaced
    # A span and the words beside it still make another one: keep only the words that hold
    # none of the characters a placeholder starts or goes on with.
    plain = [(t, k) for t, k in items if k is not None or not _STARTERS.intersection(t)]
    if keep:  # first with the words that hold a kept phrase
        phrases = [phrase for phrase in keep if phrase]
        held = [(t, k) for t, k in items if k is not None or not _STARTERS.intersection(t)
                or any(phrase in t or t in phrase for phrase in phrases)]  # fmt: skip
        text = _join(held, masked, glue=False)
        if Counter(span.text for span in find_placeholders(text)) == expected:
            return text
    return _join(plain, masked, glue=False)


def _phrase_words(output: str, keep: Sequence[str]) -> dict[int, tuple[int, int]]:
    """Each word of ``output.split()`` that an occurrence of a phrase of ``keep`` covers,
    with the first and the last word of that occurrence (the widest, where occurrences
    overlap)."""
    starts = [m.start() for m in re.finditer(r"\S+", output)]
    ends = [m.end() for m in re.finditer(r"\S+", output)]
    whole: dict[int, tuple[int, int]] = {}
    for phrase in keep:
        if not phrase:
            continue
        for found in re.finditer(f"(?={re.escape(phrase)})", output):
            begin, end = found.start(), found.start() + len(phrase)
            covered = [j for j, (a, b) in enumerate(zip(starts, ends, strict=True))
                       if a < end and begin < b]  # fmt: skip
            if len(covered) < 2:
                continue
            first, last = covered[0], covered[-1]
            for j in range(first, last + 1):
                known = whole.get(j, (first, last))
                first, last = min(first, known[0]), max(last, known[1])
            for j in range(first, last + 1):
                whole[j] = (first, last)
    return whole


def _join(items: list[tuple[str, int | None]], masked: MaskedSource, glue: bool) -> str:
    text = ""
    previous: int | None = None
    for n, (item, k) in enumerate(items):
        if n == 0:
            text = item
        elif glue and (
            (k is not None and masked.glue_before[k])
            or (previous is not None and masked.glue_after[previous])
        ):
            text += item
        else:
            text += " " + item
        previous = k
    return text


def check_phrases(constraints: Sequence[Sequence[str]]) -> None:
    """Raise unless no phrase of ``constraints`` (per source, its phrases) holds a
    placeholder or protected span (``find_placeholders``): with placeholders kept, the
    source's spans are what an output holds, each as often as the source (a phrase's own
    span would be one more, or taken out again where the spans are put back).

    Raises:
        ValueError: ``constraints[i]: the phrase ... holds the placeholder ...``.
    """
    for i, phrases in enumerate(constraints):
        for phrase in phrases:
            if not isinstance(phrase, str):
                continue  # the search names it
            spans = find_placeholders(phrase)
            if spans:
                raise LuongError(
                    f"constraints[{i}]: the phrase {phrase!r:.60} holds the placeholder "
                    f"{spans[0].text!r:.40}; with placeholders kept, an output holds the "
                    "source's own, as often as the source: leave it out of the phrase"
                )


def holds_phrases(output: str, phrases: Sequence[str]) -> bool:
    """Whether ``output`` holds each of ``phrases`` (as ``written_phrases`` gives them) at
    least as often as listed, overlapping occurrences counted."""
    for phrase, listed in Counter(phrases).items():
        if phrase and len(re.findall(f"(?={re.escape(phrase)})", output)) < listed:
            return False
    return True


def keeps_placeholders(source: str, output: str) -> bool:
    """Whether ``output`` holds exactly the spans of ``source``, each as often
    (``find_placeholders``' texts), and the arguments taken in order (``%s``, ``%d``,
    ``{}``: not ``%1$s``, ``%(name)s``, ``{0}``, nor ``%%``) in the source's order, as
    ``msgfmt --check-format`` asks; other spans may move.

    Raises:
        TypeError: ``source`` or ``output`` is not a str.
    """
    found = [find_placeholders(t) for t in (source, output)]
    counts = [Counter(span.text for span in spans) for spans in found]
    ordered = [[span.text for span in spans if _in_order(span)] for spans in found]
    return counts[0] == counts[1] and ordered[0] == ordered[1]


def _in_order(span: Span) -> bool:
    """Whether ``span`` is an argument taken in order: a printf conversion without ``N$``
    (``%%`` is none), or an empty or format-only brace field (``{}``, ``{:.2f}``)."""
    return span.kind in ("printf", "braces") and in_order(span.text)
