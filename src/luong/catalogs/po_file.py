"""A gettext PO file as msgfmt reads it: its bytes decoded in the charset its header
declares, its lines checked as msgfmt checks them, cut into blocks, and its header's fields
read and set through polib's parsed metadata. ``luong.catalogs.fill`` fills the blocks.

Read as msgfmt reads it, because polib alone reads more leniently than msgfmt does: polib
takes an unterminated string, ``\\q`` and ``msgstr[99999]`` (as ``msgstr[9]``) without a word,
and a catalog written back from that would not be the one given. Here a catalog msgfmt
rejects is refused with the line and msgfmt's words (``line 8: end-of-line within string``,
``invalid control sequence \\q``, ``plural form has wrong index``, ``missing 'msgstr'
section``, ``inconsistent use of #~``, ``duplicate message definition``), and every layout it
accepts is read: CRLF line ends, entries without a blank line between them, blank lines
inside an entry, the header anywhere in the file (the entry whose msgid is empty and that has
no msgctxt), on one line or its values wrapped over several strings.

The charset (``decode_catalog``): a ``.mo`` file is refused (it is compiled; ``msgunfmt``
gives its ``.po``); a UTF-8 byte-order mark at the start is dropped; the header is found with
every byte above 127 read as a stand-in (charsets gettext reads are ASCII where the header's
fields are), its ``Content-Type`` read by polib, and the file decoded in the charset named
there with Python's codec of that name (``ISO-8859-1``, ``KOI8-R``, ``EUC-JP``, ``utf8``...);
none, or xgettext's placeholder ``CHARSET``, is UTF-8.

The blocks (``read_blocks``): each entry (its comments, then its keyword lines) is one block,
each run of blank lines one, each run of comments that no entry follows before a blank line
one; ``"".join(block.text for block in blocks)`` is the text. An entry's block is parsed by
polib alone (``_polib_entries``); a header stays an entry, its fields read by polib as the
metadata of a file of its own (``header_fields``). Where a header changes (``with_fields``),
only its msgid and msgstr lines are written anew, one field a line; its comments stay.

What polib cannot read in a layout msgfmt accepts (two strings on one line, a ``#`` comment
after a string) is refused naming the line; what it reads otherwise than msgfmt (the escapes
``\\a``, octal ``\\101``, hex ``\\x41``) is recorded on the block (``Block.escape``), so that
its entry is not written back by polib.
"""

from __future__ import annotations

import codecs
import re
import string
from dataclasses import dataclass

import polib

from luong.catalogs.po_grammar import Grammar, catalog_lines, check_grammar, syntax_error
from luong.common.errors import LuongError, LuongTypeError

__all__ = [
    "BOM",
    "Block",
    "charset_codec",
    "decode_catalog",
    "entry_name",
    "find_header",
    "header_charset",
    "header_fields",
    "header_text",
    "newline_of",
    "read_blocks",
    "render_entry",
    "with_fields",
]

BOM = "\ufeff"
MO_MAGIC = (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde")  # a .mo file, little or big endian
_ASCII = string.printable
_EMPTY_HEADER = 'msgid ""\nmsgstr ""\n\n'


@dataclass(frozen=True)
class Block:
    """A run of a catalog's lines: one entry, blank lines, or comments alone."""

    text: str  # its lines, line ends included
    line: int  # the 1-based number of its first line in the file
    entry: polib.POEntry | None = None  # the entry it holds (None: blank lines, comments)
    body: int = 0  # the index, among its lines, of the entry's first keyword line
    msgid_line: int = 0  # the 1-based line of the entry's msgid
    escape: str = ""  # an escape the entry holds that polib reads otherwise ("\\a"), or ""


def decode_catalog(data: bytes) -> str:
    """A PO file's bytes as text, decoded as msgfmt decodes them (the module docstring):
    a byte-order mark dropped, the charset the header declares; its syntax checked as
    msgfmt checks it (``read_blocks`` reads the entries).

    Raises:
        TypeError: ``data`` is not bytes.
        ValueError: a ``.mo`` file, a charset Python has no codec for or that is not ASCII
            where ASCII is (UTF-16), bytes that are not the charset, what msgfmt rejects
            (``line N: ...``).
    """
    if not isinstance(data, bytes):
        raise LuongTypeError(f"data: expected bytes, got {type(data).__name__}")
    if data[:4] in MO_MAGIC:
        raise LuongError(
            "a compiled catalog (.mo), not a .po: give the .po or .pot it was made from "
            "(msgunfmt writes one from a .mo)"
        )
    data = data.removeprefix(BOM.encode("utf-8"))
    charset = header_charset(_lenient_header(data.decode("ascii", errors="replace")))
    name = charset_codec(charset)
    try:
        text = data.decode(name)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        declared = (
            f"{charset}, the charset the header declares"
            if charset
            else "UTF-8 (the header declares no charset)"
        )
        raise LuongError(f"line {line}: byte 0x{data[error.start]:02x} is not {declared}") from None
    check_grammar(text)  # msgfmt's syntax, checked before anything else reads the text
    return text


def _lenient_header(text: str) -> dict[str, str]:
    """The header's fields, found as leniently as can be: in each run of lines between blank
    lines that polib reads, the first entry with an empty msgid and no msgctxt."""
    for chunk in re.split(r"\n[ \t\r\f\v]*\n", text):
        try:
            entries = _polib_entries(chunk)
        except (OSError, ValueError):
            continue
        for entry in entries:
            if entry.msgid == "" and entry.msgctxt is None and not entry.obsolete:
                return _fields(entry)
    return {}


def header_charset(fields: dict[str, str]) -> str:
    """The charset a header's ``Content-Type`` declares (``charset=`` up to a blank, as
    gettext reads it); "" when it declares none or xgettext's placeholder ``CHARSET``."""
    found = re.search(r"charset=([^ \t\n;]*)", fields.get("Content-Type", ""))
    charset = found.group(1) if found else ""
    return "" if charset.upper() == "CHARSET" else charset


def charset_codec(charset: str) -> str:
    """Python's codec for a declared charset (``header_charset``; "" is UTF-8).

    Raises:
        ValueError: Python has no codec of that name, or its ASCII is not ASCII (UTF-16).
    """
    if not charset:
        return "utf-8"
    try:
        name = codecs.lookup(charset).name
        ascii_compatible = _ASCII.encode(name) == _ASCII.encode("ascii")
    except LookupError:  # no such codec, or one that is not a text encoding (base64)
        raise LuongError(
            f"charset={charset}: not a charset Python can decode; convert the catalog first "
            "(msgconv --to-code=UTF-8)"
        ) from None
    if not ascii_compatible:
        raise LuongError(
            f"charset={charset}: gettext reads catalogs only in charsets whose ASCII "
            "characters are ASCII bytes; convert the catalog first (msgconv --to-code=UTF-8)"
        )
    return name


def newline_of(text: str) -> str:
    """The line end a catalog uses: ``"\\r\\n"`` when its first line ends so, else ``"\\n"``."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def read_blocks(text: str) -> list[Block]:
    """A catalog's text (decoded: ``decode_catalog``) cut into blocks (the module
    docstring), each entry parsed by polib, after msgfmt's checks.

    Raises:
        TypeError: ``text`` is not a str.
        ValueError: what msgfmt rejects (``line N: ...``), an entry polib cannot read (two
            strings on one line, a comment after a string).
    """
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected str, got {type(text).__name__}")
    reader = Grammar(text)
    spans = reader.read()
    entries = {entry.block: entry for entry in reader.entries}
    blocks: list[Block] = []
    seen: dict[tuple[str | None, str], int] = {}
    for k, (start, end, kind) in enumerate(spans):
        chunk = "".join(reader.lines[start:end])
        if kind != "entry":
            blocks.append(Block(chunk, start + 1))
            continue
        met = entries[k]
        entry = _parse_entry(chunk, start + 1)
        key = (entry.msgctxt, entry.msgid)
        if key in seen:
            raise syntax_error(
                met.msgid_line, f"duplicate message definition (the first is at line {seen[key]})"
            )
        seen[key] = met.msgid_line
        blocks.append(Block(chunk, start + 1, entry, met.body, met.msgid_line, met.escape))
    return blocks


def _polib_entries(chunk: str) -> list[polib.POEntry]:
    """The entries polib reads in ``chunk``, a header among them. The chunk is read between
    two empty headers: after the first, so that polib does not take its comments for the
    file's; before the second, which polib takes for the file's header (the last one it
    finds), so that a header in the chunk stays an entry.

    Raises:
        OSError: polib's syntax error, naming the line of ``_EMPTY_HEADER + chunk``.
    """
    lines = len(catalog_lines(chunk))
    text = _EMPTY_HEADER + chunk + ("" if chunk.endswith("\n") else "\n") + "\n" + _EMPTY_HEADER
    return [entry for entry in _polib_file(text) if 3 < entry.linenum <= 3 + lines]


# What str.splitlines breaks a line at, besides \n and \r\n: polib reads a file by it,
# msgfmt's lines end at \n alone, so inside a string these are characters (U+2028 among them).
_SPLITLINES_ONLY = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]|\r(?!\n)")
_STAND_INS = [chr(code) for code in range(0xFDD0, 0xFDF0)]  # noncharacters: no text's


def _polib_file(text: str) -> polib.POFile:
    """polib's reading of ``text``, its lines msgfmt's: each character ``str.splitlines``
    breaks at but msgfmt does not (``\v``, ``\f``, U+2028, a lone ``\r``...) stands in
    as a noncharacter (U+FDD0...) the text does not hold while polib reads, and is put back
    in every field of every entry after.

    Raises:
        ValueError: the text holds every noncharacter that could stand in.
        OSError: polib's syntax error.
    """
    found = sorted(set(_SPLITLINES_ONLY.findall(text)))
    if not found:
        return polib.pofile(text)
    free = [char for char in _STAND_INS if char not in text]
    if len(free) < len(found):
        raise LuongError("the catalog holds the noncharacters U+FDD0 to U+FDEF; no text holds them")
    into = dict(zip(found, free, strict=False))
    back = str.maketrans({stand_in: char for char, stand_in in into.items()})
    po = polib.pofile(_SPLITLINES_ONLY.sub(lambda match: into[match.group(0)], text))

    def restored(value: object) -> object:
        if isinstance(value, str):
            return value.translate(back)
        if isinstance(value, list | tuple):
            return type(value)(restored(item) for item in value)
        if isinstance(value, dict):
            return {key: restored(item) for key, item in value.items()}
        return value

    for entry in po:
        for name in _TEXT_FIELDS:
            setattr(entry, name, restored(getattr(entry, name)))
    po.metadata = restored(po.metadata)
    return po


_TEXT_FIELDS = (
    *("msgid", "msgstr", "msgid_plural", "msgstr_plural", "msgctxt", "comment", "tcomment"),
    *("occurrences", "flags", "previous_msgctxt", "previous_msgid", "previous_msgid_plural"),
)


def _parse_entry(chunk: str, line: int) -> polib.POEntry:
    """The one entry of an entry's block (its first line ``line`` in the file), by polib."""
    try:
        entries = _polib_entries(chunk)
    except (OSError, ValueError) as error:
        found = re.search(r"\(line (\d+)\): (.*)", str(error))
        where, why = (int(found.group(1)) - 4 + line, found.group(2)) if found else (line, error)
        raise syntax_error(where, f"polib cannot read this entry: {why}") from None
    if len(entries) != 1:
        raise syntax_error(line, f"polib reads {len(entries)} entries here, expected one")
    return entries[0]


def find_header(blocks: list[Block]) -> int | None:
    """The index of the header's block: the entry whose msgid is empty and that has no
    msgctxt, not obsolete (``read_blocks`` refuses two); None when there is none."""
    for i, block in enumerate(blocks):
        entry = block.entry
        if entry and entry.msgid == "" and entry.msgctxt is None and not entry.obsolete:
            return i
    return None


def _fields(entry: polib.POEntry) -> dict[str, str]:
    """A header entry's fields, as polib's parsed metadata reads them."""
    po = _polib_file(polib.POEntry(msgid="", msgstr=entry.msgstr).__unicode__(wrapwidth=0))
    return {str(key): str(value) for key, value in po.metadata.items()}


def header_fields(block: Block) -> dict[str, str]:
    """The fields of a header's block (``find_header``): polib's parsed metadata, so values
    wrapped over several strings, CRLF line ends and a one-line header read as msgfmt reads
    them."""
    if block.entry is None:
        raise LuongError(f"line {block.line}: expected the header entry, got no entry")
    return _fields(block.entry)


def header_text(prefix: str, msgstr: str, newline: str) -> str:
    """A header block: ``prefix`` (its comments, as they were), then ``msgid ""`` and the
    ``msgstr`` one field a line, as gettext's tools write it, with the file's line end."""
    fields = catalog_lines(msgstr)
    text = 'msgid ""\nmsgstr ""\n' + "".join(f'"{polib.escape(field)}"\n' for field in fields)
    return prefix + text.replace("\n", newline)


def with_fields(block: Block, fields: dict[str, str], newline: str) -> str:
    """A header's block with ``fields`` set: each replaces the line of its name (and the
    lines polib reads as that value's continuation), or is appended; the comments before it
    are kept as they were.

    Raises:
        ValueError: the block holds no entry.
    """
    if block.entry is None:
        raise LuongError(f"line {block.line}: expected the header entry, got no entry")
    lines = catalog_lines(block.entry.msgstr)
    for key, value in fields.items():
        at = next((i for i, line in enumerate(lines) if line.split(":", 1)[0] == key), None)
        field = f"{key}: {value}\n"
        if at is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append(field)
            continue
        end = at + 1
        while end < len(lines) and ":" not in lines[end] and lines[end].strip():
            end += 1  # polib reads a line without a colon as the value going on
        lines[at:end] = [field]
    prefix = "".join(catalog_lines(block.text)[: block.body])
    return header_text(prefix, "".join(lines), newline)


def render_entry(entry: polib.POEntry, newline: str) -> str:
    """An entry as polib writes it (lines wrapped at 78), with the file's line end."""
    return str(entry.__unicode__(wrapwidth=78)).replace("\n", newline)


def entry_name(block: Block) -> str:
    """An entry named in a message: ``line 12 (msgid "Save _As...")``."""
    msgid = polib.escape(block.entry.msgid if block.entry is not None else "")
    short = msgid if len(msgid) <= 40 else msgid[:37] + "..."
    return f'line {block.msgid_line} (msgid "{short}")'
