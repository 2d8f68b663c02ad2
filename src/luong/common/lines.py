"""What breaks one line of text: the characters that a decoded output never holds and a
target prefix may not hold, so that N lines in give N lines out and an output is one field
of a tab-separated line; and the one character no line can be written with, a lone
surrogate (``lone_surrogate``: the place that each check of valid Unicode names).

``json_line``: a JSON value as one line that stays one line for every reader, those that
split at Unicode's own line breaks too (``str.splitlines``: U+0085, U+2028, U+2029, which
JSON may hold raw): a jsonl record, a catalog's comment.

Its own module on the lowest floor, because two plain modules read it that neither may
import the other for it: ``vocab`` (``one_line`` writes each as a space) and
``search_options`` (a prefix is refused with one). The ONNX runtime keeps a copy (it imports
nothing of luong); ``tests/test_export.py`` checks they agree.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["LINE_BREAKS", "json_line", "lone_surrogate"]

LINE_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00")
"""Characters that would split one output into several lines or fields (``str.splitlines``'
breaks, the tab that separates n-best outputs, NUL): never in a prefix."""

# The line breaks json.dumps(ensure_ascii=False) leaves raw (it escapes those below U+0020).
_RAW_IN_JSON = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})


def json_line(value: Any) -> str:
    """``value`` as JSON on one line (``json.dumps``, UTF-8 text kept, no NaN), with every
    character of ``LINE_BREAKS`` escaped, U+0085, U+2028 and U+2029 too, which JSON allows
    raw in a string but ``str.splitlines`` breaks a line at.

    Raises:
        ValueError: a number that is not finite; TypeError: a value JSON cannot hold.
    """
    return json.dumps(value, ensure_ascii=False, allow_nan=False).translate(_RAW_IN_JSON)


def lone_surrogate(text: str) -> int | None:
    """The place of ``text``'s first lone surrogate (JSON's ``"\\ud800"``, a file read with
    ``surrogateescape``), which UTF-8 cannot write, or None when it has none.

    >>> lone_surrogate("caf\\u00e9"), lone_surrogate("ab\\ud800")
    (None, 2)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None
