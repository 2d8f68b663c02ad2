"""A request's texts as the lines a model translates, and back: each text cut at its line
breaks into sources of their own (``split_lines``), the lines' translations joined into each
text's (``join_lines``), and each text's confidence over all its lines (``text_confidences``).
No transport: the LibreTranslate route calls them, and any other face may."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from luong.common.errors import LuongError
from luong.translation.confidence import joint_confidence
from luong.translation.translations import Translation

__all__ = [
    "LINE_BREAK",
    "TextLines",
    "join_lines",
    "line_groups",
    "split_lines",
    "text_confidences",
]

LINE_BREAK = re.compile(r"(\r?\n)")
"""What splits a text into the lines translated apart: LF, as LibreTranslate splits (argos-
translate's paragraphs), with a CR before it kept as part of the break."""


@dataclass(frozen=True)
class TextLines:
    """The texts of a request cut into their lines (``split_lines``): ``lines`` are the
    sources to decode, every line of every text that is not empty, in order; ``names`` name
    each in messages (``source I``, or ``source I line J`` in a text of several lines);
    ``pieces`` hold each text as its lines and breaks alternating (``re.split`` with the
    break kept), so that ``join_lines`` puts each text back together."""

    lines: list[str]
    names: list[str]
    pieces: list[list[str]]


def split_lines(texts: Sequence[str]) -> TextLines:
    """Cut each text at its line breaks (LF or CRLF). An empty line is not decoded: it stays
    empty in the answer, as LibreTranslate leaves it."""
    lines: list[str] = []
    names: list[str] = []
    pieces = []
    for i, text in enumerate(texts):
        parts = LINE_BREAK.split(text)
        several = len(parts) > 1
        for j, line in enumerate(parts[::2]):
            if line:
                lines.append(line)
                names.append(f"source {i} line {j + 1}" if several else f"source {i}")
        pieces.append(parts)
    return TextLines(lines, names, pieces)


def join_lines(split: TextLines, outputs: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each text's translations, best first, from ``outputs`` (each line's translations,
    best first, in ``split.lines``' order): the k-th joins each line's k-th translation (its
    last where it has fewer, "" where it has none) with the text's own breaks; as many as
    the line with the most has, at least one. A text of one line gets its line's
    translations as they are."""
    if len(outputs) != len(split.lines):
        raise LuongError(f"outputs: expected {len(split.lines)} lists, got {len(outputs)}")
    found = iter(outputs)
    joined = []
    for parts in split.pieces:
        each: list[list[str]] = []  # each piece's translations
        for k, part in enumerate(parts):
            if k % 2:  # a break, as it was sent
                each.append([part])
            elif part:  # a line: its translations, from outputs in order
                each.append(list(next(found)) or [""])
            else:  # an empty line
                each.append([""])
        n = max(len(translations) for translations in each)
        joined.append(["".join(t[min(r, len(t) - 1)] for t in each) for r in range(n)])
    return joined


def line_groups(split: TextLines) -> list[list[int]]:
    """For each text of ``split``, the indices of its lines in ``split.lines`` (none for an
    empty text): what its translation is made of."""
    groups = []
    found = 0
    for parts in split.pieces:
        count = sum(1 for line in parts[::2] if line)
        groups.append(list(range(found, found + count)))
        found += count
    return groups


def text_confidences(split: TextLines, translations: Sequence[Translation]) -> list[float | None]:
    """Each text's confidence: the joint confidence of its lines' best outputs
    (``joint_confidence``: over all their tokens), None for a text with no line decoded."""
    if len(translations) != len(split.lines):
        raise LuongError(
            f"translations: expected {len(split.lines)}, one per line, got {len(translations)}"
        )
    best = [translation.hypotheses[:1] for translation in translations]
    return [joint_confidence([h for i in group for h in best[i]]) for group in line_groups(split)]
