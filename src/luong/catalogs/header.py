"""A catalog's header as ``luong po`` reads and completes it, and the charset it declares.

Its ``Language`` checked against the model's target language (``check_language``: the same
language and script, ``luong.common.languages.locale_rank``), its ``Plural-Forms`` read as
msgfmt and Python's gettext read them or, where a ``.pot`` lacks them, the target's as msginit
writes them (``plural_forms``: gettext's table, ``luong.catalogs.plural_table``; babel's CLDR
rules for the languages it lacks), its charset kept or set to UTF-8 (``read_header``). A
translation is written in that charset: a typographic character it lacks as its own stand-in
(``TYPOGRAPHIC``, ``charset_text``), else its entry left for a person (``not_held``,
``charset_trouble``). ``luong.catalogs.fill`` fills the catalog.
"""

from __future__ import annotations

import gettext
import re
import unicodedata
from dataclasses import dataclass

from babel.core import UnknownLocaleError
from babel.messages.plurals import get_plural

from luong.catalogs.plural_table import gettext_plural_forms
from luong.catalogs.po_file import (
    BOM,
    Block,
    charset_codec,
    find_header,
    header_charset,
    header_fields,
    header_text,
    read_blocks,
    with_fields,
)
from luong.common.errors import LuongError, LuongTypeError
from luong.common.languages import locale_rank

__all__ = [
    "TYPOGRAPHIC",
    "Header",
    "catalog_language",
    "charset_text",
    "charset_trouble",
    "check_language",
    "not_held",
    "plural_forms",
    "primary_language",
    "read_header",
]


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


def catalog_language(text: str) -> str:
    """The ``Language`` of a catalog's header ("" for a ``.pot``'s or none), as polib's
    parsed metadata reads it.

    Raises:
        ValueError: what msgfmt rejects (``luong.catalogs.po_file.read_blocks``).
    """
    blocks = read_blocks(text.removeprefix(BOM))
    at = find_header(blocks)
    return "" if at is None else header_fields(blocks[at]).get("Language", "").strip()


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


def not_held(char: str, header: Header) -> str:
    """Why an entry holding ``char`` is left for a person in a catalog of ``header``."""
    return (
        f"its translation holds {char!r} (U+{ord(char):04X}), which the catalog's charset "
        f"{header.charset} cannot hold (luong po --to-utf8 writes the catalog in UTF-8, which "
        "can)"
    )


def charset_trouble(text: str, header: Header) -> str | None:
    """Why an entry as written (``text``: its comments too) is left for a person: a
    character the catalog's charset cannot hold; None when it holds them all."""
    try:
        text.encode(header.encoding)
    except UnicodeEncodeError as error:
        return not_held(error.object[error.start], header)
    return None


@dataclass(frozen=True)
class Header:
    """A catalog's header as ``fill_catalog`` writes it back, and what it says."""

    text: str  # the header block, with what it lacked set (Language, charset, Plural-Forms)
    language: str  # its Language as written ("" when empty or missing)
    nplurals: int  # the plural forms a plural entry has
    charset: str  # the charset it declares once written ("UTF-8" for none)
    encoding: str  # Python's codec of that charset


def read_header(block: Block | None, target: str, to_utf8: bool, newline: str) -> Header:
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
    return Header(text, language, count, charset, encoding)


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
