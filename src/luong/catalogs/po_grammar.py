"""msgfmt's grammar of a PO file's lines, without polib (which reads more leniently: it
takes an unterminated string, ``\\q``, ``msgstr[99999]``): ``Grammar`` checks a catalog's
text as msgfmt does and cuts it into blocks, ``check_grammar`` only checks it. The catalog
reader (``luong.catalogs.po_file``) builds on it, and a memory reads a ``.po`` through it
(``luong.memory.translation_memory``) where polib is an extra: this module imports nothing of
it.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from luong.common.errors import LuongError

__all__ = ["EntryMark", "Grammar", "catalog_lines", "check_grammar", "syntax_error"]

_KEYWORD = re.compile(r"(msgctxt|msgid_plural|msgid|msgstr)(?:\[([0-9]+)\])?")
_BLANKS = " \t\r\f\v"
_SIMPLE_ESCAPES = 'nt"\\rbfv'  # the escapes polib reads as msgfmt does
_OTHER_ESCAPES = "a01234567x"  # msgfmt's others: \a, octal, hex (polib keeps them as text)


def check_grammar(text: str) -> None:
    """Raise unless ``text`` (a decoded catalog) is a PO file msgfmt reads.

    Raises:
        ValueError: what msgfmt rejects, naming the line (``line 8: end-of-line within
            string``, ``invalid control sequence \\q``, ``missing 'msgstr' section``, ...).
    """
    Grammar(text).read()


def catalog_lines(text: str) -> list[str]:
    """``text``'s lines, line ends kept, cut at ``\\n`` alone (not at ``\\x85``, ``\\u2028``
    or the other breaks of ``str.splitlines``, which are characters of a string here)."""
    return re.findall(r"[^\n]*\n|[^\n]+", text)


@dataclass(frozen=True)
class _Line:
    """What a line is to msgfmt's grammar."""

    kind: str  # "blank", "comment", "keyword" or "string"
    keyword: str = ""  # msgctxt, msgid, msgid_plural, msgstr (with an index: msgstr[])
    index: int = 0  # msgstr[index]
    obsolete: bool = False  # a #~ line
    escape: str = ""  # an escape polib reads otherwise than msgfmt, or ""


def syntax_error(number: int, message: str) -> LuongError:
    """msgfmt's complaint about line ``number`` (1-based), as luong's error."""
    return LuongError(f"line {number}: {message}")


def _strings(text: str, number: int) -> tuple[int, str]:
    """Check the strings ``text`` holds up to its end or a ``#`` comment, as msgfmt's lexer
    does; return how many and the first escape polib reads otherwise ("" if none)."""
    count, other, i = 0, "", 0
    while i < len(text):
        if text[i] in _BLANKS:
            i += 1
            continue
        if text[i] == "#":
            break
        if text[i] != '"':
            raise syntax_error(number, "syntax error")
        i += 1
        while i < len(text) and text[i] != '"':
            if text[i] == "\\" and i + 1 < len(text):
                escape = text[i + 1]
                hex_digit = text[i + 2 : i + 3]
                if escape not in _SIMPLE_ESCAPES + _OTHER_ESCAPES or (
                    escape == "x" and not (hex_digit and hex_digit in string.hexdigits)
                ):
                    raise syntax_error(number, f"invalid control sequence \\{escape}")
                if escape in _OTHER_ESCAPES and not other:
                    found = re.match(r"\\(?:a|[0-7]{1,3}|x[0-9A-Fa-f]+)", text[i:])
                    other = found.group(0) if found else "\\" + escape
                i += 1
            i += 1
        if i >= len(text):
            raise syntax_error(number, "end-of-line within string")
        i += 1
        count += 1
    return count, other


def _line(text: str, number: int) -> _Line:
    """A line as msgfmt's lexer reads it.

    Raises:
        ValueError: a string msgfmt rejects, a keyword without a string, anything else.
    """
    rest = text.rstrip("\n").strip(_BLANKS)
    obsolete = rest.startswith("#~")
    if obsolete:
        rest = rest[2:].strip(_BLANKS)
        if not rest or rest.startswith("|"):  # #~| previous fields, or a bare #~: comments
            return _Line("comment")
    elif rest.startswith("#|"):  # previous fields: comments to the grammar, strings checked
        previous = rest[2:].lstrip(_BLANKS)
        keyword = _KEYWORD.match(previous)
        _strings(previous[keyword.end() :] if keyword else previous, number)
        return _Line("comment")
    elif rest.startswith("#"):
        return _Line("comment")
    if not rest:
        return _Line("blank")
    keyword = _KEYWORD.match(rest)
    if keyword is not None:
        count, escape = _strings(rest[keyword.end() :], number)
        if count == 0:
            raise syntax_error(number, "syntax error")
        name = keyword.group(1) + ("[]" if keyword.group(2) is not None else "")
        return _Line("keyword", name, int(keyword.group(2) or 0), obsolete, escape)
    if rest.startswith('"'):
        return _Line("string", obsolete=obsolete, escape=_strings(rest, number)[1])
    raise syntax_error(number, "syntax error")


@dataclass
class EntryMark:
    """An entry met by ``Grammar``: its block's index, where its keywords start, its
    msgid's line, an escape polib reads otherwise."""

    block: int
    body: int
    msgid_line: int = 0
    escape: str = ""


class Grammar:
    """msgfmt's grammar over a catalog's lines, cutting them into blocks: ``read`` gives each
    block's (first line, end, kind), ``entries`` the entries' ``EntryMark``."""

    def __init__(self, text: str) -> None:
        self.lines = catalog_lines(text)
        self.kinds = [_line(line, n + 1) for n, line in enumerate(self.lines)]
        self.spans: list[tuple[int, int, str]] = []
        self.entries: list[EntryMark] = []
        self.start = 0  # the current block's first line
        self.kind = ""  # the current block's kind: "blank", "comment", "entry" ("": none)
        self.state = ""  # in an entry: its last keyword
        self.obsolete = False  # in an entry: whether its keywords are #~ lines
        self.next_form = 0  # in a plural entry: the n of the msgstr[n] expected next

    def read(self) -> list[tuple[int, int, str]]:
        for i, line in enumerate(self.kinds):
            if line.kind == "blank":
                if self.kind == "entry":
                    if not self.complete() or self.goes_on(i):
                        continue  # a blank line inside an entry: msgfmt reads on
                    self.end_entry(i)
                self.begin(i, "blank")
            elif line.kind == "comment":
                if self.kind == "entry":
                    self.end_entry(i)
                self.begin(i, "comment")
            elif line.kind == "keyword":
                self.keyword(i, line)
            else:
                self.string(i, line)
        if self.kind == "entry":
            self.end_entry(len(self.lines))
        self.close(len(self.lines))
        return self.spans

    def close(self, end: int) -> None:
        if self.kind and end > self.start:
            self.spans.append((self.start, end, self.kind))
        self.kind = ""

    def begin(self, i: int, kind: str) -> None:
        if kind != self.kind:
            self.close(i)
            self.start, self.kind = i, kind

    def complete(self) -> bool:
        return self.state in ("msgstr", "msgstr[]")

    def goes_on(self, i: int) -> bool:
        """Whether the next line after blank line ``i`` that is not blank continues the entry
        (a string, or the next msgstr[n] of a plural entry)."""
        after = next((line for line in self.kinds[i:] if line.kind != "blank"), None)
        return after is not None and (
            after.kind == "string" or (after.keyword == "msgstr[]" and self.state == "msgstr[]")
        )

    def end_entry(self, end: int) -> None:
        if not self.complete():
            raise syntax_error(
                self.entries[-1].msgid_line or self.start + 1, "missing 'msgstr' section"
            )
        self.close(end)
        self.state = ""

    def keyword(self, i: int, line: _Line) -> None:
        number, word, state = i + 1, line.keyword, self.state
        in_entry = self.kind == "entry"
        if word in ("msgctxt", "msgid") and not (word == "msgid" and state == "msgctxt"):
            if in_entry:
                self.end_entry(i)  # missing 'msgstr' section, unless it is complete
            if self.kind == "comment":  # the comments before it are the entry's
                self.kind = "entry"
            else:
                self.begin(i, "entry")
            self.entries.append(EntryMark(len(self.spans), i - self.start))
            self.obsolete, state = line.obsolete, ""
        elif not in_entry:
            raise syntax_error(number, "syntax error")
        elif line.obsolete != self.obsolete:
            raise syntax_error(number, "inconsistent use of #~")
        if word == "msgstr[]" and state == "msgid":
            raise syntax_error(number, "missing 'msgid_plural' section")
        follows = {
            "msgid_plural": ("msgid",),
            "msgstr": ("msgid",),
            "msgstr[]": ("msgid_plural", "msgstr[]"),
        }
        if word in follows and state not in follows[word]:
            raise syntax_error(number, "syntax error")
        if word == "msgstr[]":
            expected = 0 if state == "msgid_plural" else self.next_form
            if line.index != expected:
                raise syntax_error(number, "plural form has wrong index")
            self.next_form = expected + 1
        if word == "msgid":
            self.entries[-1].msgid_line = number
        self.entries[-1].escape = self.entries[-1].escape or line.escape
        self.state = word

    def string(self, i: int, line: _Line) -> None:
        if self.kind != "entry" or not self.state:
            raise syntax_error(i + 1, "syntax error")
        if line.obsolete != self.obsolete:
            raise syntax_error(i + 1, "inconsistent use of #~")
        self.entries[-1].escape = self.entries[-1].escape or line.escape
