"""A compiled gettext catalog (``.mo``) checked as msgunfmt checks it, before polib reads it.

polib reads a ``.mo`` by seeking to each string its tables name and reading as many bytes as
they give, without a word where the file ends first: a catalog cut 12 bytes short gives
``Nachric`` for ``Nachricht``, read as a good translation (by ``luong corpus``, by
``--tm``), and a table whose 999 entries all name one 500 KB string gives 500 MB of text
from a 516 KB file. GNU gettext's msgunfmt refuses the first (``file is truncated``);
``check_mo`` refuses both, reading the tables alone, so that every reader of a catalog
(``luong.catalogs.corpus``, ``luong.memory.translation_memory``) calls it and then hands the bytes
to polib.

The layout (the gettext manual, "The Format of GNU MO Files"): seven 32-bit words in the
file's byte order (the magic number ``0x950412de`` says which): the magic, the revision
(major 0 or 1), N the number of strings, O and T the offsets of the two tables, then the
hash table's size and offset (not read). Each table holds N (length, offset) pairs, the
msgids' and the msgstrs'; each string is ``length`` bytes at ``offset``, followed by a NUL.

What is checked, as msgunfmt checks it (``read-mo.c``): the header is whole, the magic and
the major revision are gettext's, each table lies inside the file, each string ends before
the file does and is followed by its NUL. Then what polib would make of it: the strings the
tables name, counted each time one is named, add up to at most ``MAX_MO_TEXT_BYTES``
(a file msgfmt writes names each string once, so this is less than its size; the largest
catalogs, glibc's, are about 1 MB).
"""

from __future__ import annotations

import struct

from luong.common.errors import LuongError, LuongTypeError

__all__ = ["MAGIC", "MAX_MO_TEXT_BYTES", "check_mo", "mo_header"]

MAGIC = 0x950412DE
"""The first word of a ``.mo`` file, in the byte order of its other words."""

MAX_MO_TEXT_BYTES = 64 << 20
"""The most bytes of strings a ``.mo``'s tables may name, each time one is named."""

_HEADER = 28  # seven 32-bit words
_REFUSED = "msgunfmt refuses it too"


def check_mo(data: bytes, max_text_bytes: int = MAX_MO_TEXT_BYTES) -> None:
    """Raise unless ``data`` is a whole ``.mo`` file whose tables name at most
    ``max_text_bytes`` bytes of strings (the module docstring).

    Raises:
        TypeError: ``data`` is not bytes.
        ValueError: a file too short for its header, without gettext's magic number, of
            another major revision, a table or a string past the end of the file, a string
            not followed by its NUL (each message says which table and string), or tables
            that name more than ``max_text_bytes`` bytes of strings.
    """
    if not isinstance(data, bytes):
        raise LuongTypeError(f"data: expected bytes, got {type(data).__name__}")
    size = len(data)
    if size < _HEADER:
        raise LuongError(
            f"{size} bytes: too short for a .mo file (its header alone is {_HEADER} bytes); "
            f"{_REFUSED}"
        )
    order = next((o for o in "<>" if struct.unpack_from(f"{o}I", data)[0] == MAGIC), None)
    if order is None:
        raise LuongError(
            f"not a .mo file: it does not start with gettext's magic number 0x{MAGIC:08x} "
            f"(it starts with {data[:4].hex()}); {_REFUSED}"
        )
    revision, count, *tables = struct.unpack_from(f"{order}4I", data, 4)
    if revision >> 16 not in (0, 1):
        raise LuongError(
            f"revision {revision >> 16}.{revision & 0xFFFF}: not a .mo revision gettext "
            f"reads (0 or 1); {_REFUSED}"
        )
    named = 0
    msgids: list[tuple[int, int]] = []
    for table, name in zip(tables, ("msgid", "msgstr"), strict=True):
        end = table + 8 * count
        if end > size:
            raise LuongError(
                f"truncated: its {name} table ({count} strings from byte {table}) ends at byte "
                f"{end}, past the end of the file ({size} bytes); {_REFUSED}"
            )
        for i, (length, offset) in enumerate(struct.iter_unpack(f"{order}2I", data[table:end])):
            if offset + length >= size or data[offset + length] != 0:
                which = (
                    f"the msgid of entry {i + 1} of {count}"
                    if name == "msgid"
                    else f"the msgstr of {_shown(data, *msgids[i])}"
                )
                if offset + length >= size:
                    raise LuongError(
                        f"truncated: {which} (bytes {offset} to {offset + length} and its NUL) "
                        f"ends past the end of the file ({size} bytes); {_REFUSED}"
                    )
                raise LuongError(
                    f"{which} (bytes {offset} to {offset + length}) is not followed by a NUL "
                    f"byte, as every string of a .mo is; {_REFUSED}"
                )
            if name == "msgid":
                msgids.append((length, offset))
            named += length
    if named > max_text_bytes:
        raise LuongError(
            f"its tables name {named} bytes of strings, above the limit of {max_text_bytes} "
            f"for a .mo file (the file holds {size} bytes: a string named many times); msgfmt "
            "writes no such file, and msgunfmt would spell it out in full"
        )


def mo_header(data: bytes) -> dict[str, str]:
    """The fields of a ``.mo``'s header (the translation of the empty msgid, which msgfmt
    writes first), read from the tables without reading the other strings: what a reader
    needs to know before it reads a catalog it may skip (its ``Language``). ``{}`` where the
    first msgid is not empty. ``data`` must have passed ``check_mo``."""
    order = "<" if struct.unpack_from("<I", data)[0] == MAGIC else ">"
    count, originals, translations = struct.unpack_from(f"{order}3I", data, 8)
    if count == 0 or struct.unpack_from(f"{order}I", data, originals)[0] != 0:
        return {}
    length, offset = struct.unpack_from(f"{order}2I", data, translations)
    text = data[offset : offset + length].decode("utf-8", errors="replace")
    fields = (line.partition(":") for line in text.split("\n"))
    return {key.strip(): value.strip() for key, colon, value in fields if colon}


def _shown(data: bytes, length: int, offset: int) -> str:
    """A msgid of the file as a message names it: ``msgid "Open"`` (its first 40 bytes,
    as UTF-8 where they are), ``msgid "" (the header)``."""
    text = data[offset : offset + min(length, 40)].decode("utf-8", errors="replace")
    text = text.replace("\0", " / ").replace("\x04", " | ")  # plural forms, context
    return f'msgid "{text}{"..." * (length > 40)}"' + (" (the header)" if not length else "")
