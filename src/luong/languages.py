"""Language codes: the language pair a model translates (``src_lang`` and ``tgt_lang`` in a
model folder's ``config.json``), checked and named with babel's locale data (CLDR).

A code is an ISO 639 language code as babel knows it (``en``, ``de``, ``pt``), with an
optional script or territory after a hyphen (``pt-BR``, ``zh-Hans``), in babel's spelling:
``EN`` or ``pt_BR`` are refused with the spelling to use, so that two spellings of one
language never make two pairs (``luong serve`` routes requests by these codes).
"""

from __future__ import annotations

from babel import Locale, UnknownLocaleError

from luong.errors import LuongError, LuongTypeError

__all__ = ["check_language", "language_name", "locale_name"]


def check_language(code: object, name: str = "language") -> str:
    """``code`` itself, when it is a language code babel knows, in babel's spelling.

    Args:
        code: the code (``"en"``, ``"pt-BR"``).
        name: what the code is, in messages (``"--src-lang"``, ``"config.json: src_lang"``).

    Raises:
        TypeError: ``code`` is not a string.
        ValueError: babel knows no such language, or spells it otherwise (the message gives
            the spelling).
    """
    if not isinstance(code, str):
        raise LuongTypeError(f"{name}: expected a language code (en, de, pt-BR), got {code!r:.40}")
    try:
        locale = Locale.parse(code.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        locale = None
    if locale is None or "_" in code:
        raise LuongError(
            f"{name}: expected an ISO 639 language code that babel knows (en, de, pt-BR), "
            f"got {code!r:.40}"
            + (f"; write {str(locale).replace('_', '-')!r}" if locale is not None else "")
        )
    canonical = str(locale).replace("_", "-")
    if code != canonical:
        raise LuongError(
            f"{name}: expected the language code spelled as babel does, {canonical!r}, "
            f"got {code!r:.40}"
        )
    return code


def language_name(code: str) -> str:
    """The English name of a language code (``"de"`` -> ``"German"``, ``"pt-BR"`` ->
    ``"Portuguese (Brazil)"``).

    Raises:
        ValueError, TypeError: as ``check_language``.
    """
    check_language(code)
    name = Locale.parse(code.replace("-", "_")).get_display_name("en")
    return str(name)


def locale_name(language: str) -> str:
    """The folder of ``language`` (a babel code) in a locale tree, gettext's ``ll_CC``:
    ``pt-BR`` -> ``pt_BR``, ``zh-Hans-CN`` -> ``zh_CN`` (the script left out)."""
    locale = Locale.parse(language, sep="-")
    return locale.language + (f"_{locale.territory}" if locale.territory else "")
