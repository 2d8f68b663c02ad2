"""Language codes: the language pair a model translates (``src_lang`` and ``tgt_lang`` in a
model folder's ``config.json``), checked and named with babel's locale data (CLDR).

A code is an ISO 639 language code as babel knows it (``en``, ``de``, ``pt``), with an
optional script or territory after a hyphen (``pt-BR``, ``zh-Hans``), in babel's spelling:
``EN`` or ``pt_BR`` are refused with the spelling to use, so that two spellings of one
language never make two pairs (``luong serve`` routes requests by these codes).

Gettext names a locale otherwise (``ll_CC@modifier``: ``pt_BR``, ``sr@latin``, ``zh_TW``,
``de_DE.UTF-8``), in a catalog's ``Language`` header and in a locale tree's folders
(``/usr/share/locale/sr@latin/LC_MESSAGES``). ``locale_parts`` reads either spelling as a
language, a script, a territory and a variant, the script CLDR's likely one where neither
names it (``sr`` is Cyrillic, ``sr@latin`` Latin; ``zh_TW`` Traditional, ``zh_CN`` and
``zh`` Simplified); ``locale_rank`` says whether a catalog's locale is a code's (the same
language, script and variant; the same territory where both name one) and
``locale_folders`` gives the folders gettext keeps a code's catalogs in (``sr-Latn`` ->
``sr@latin``, ``zh-Hant`` -> ``zh_Hant``, ``zh_TW``).
"""

from __future__ import annotations

from typing import NamedTuple

from babel import Locale, UnknownLocaleError, localedata
from babel.core import get_global, parse_locale

from luong.common.errors import LuongError, LuongTypeError

__all__ = [
    "LocaleParts",
    "check_language",
    "language_name",
    "locale_folders",
    "locale_name",
    "locale_parts",
    "locale_rank",
    "names_language",
]

# A gettext modifier that names a script (@latin, @cyrillic, @devanagari; @Latn too), by
# babel's English names of the scripts; and the modifier gettext writes for a script.
_SCRIPT_NAMES = {code: str(name) for code, name in Locale("en").scripts.items()}
_SCRIPTS = {
    **{name.lower(): code for code, name in _SCRIPT_NAMES.items() if " " not in name},
    **{code.lower(): code for code in _SCRIPT_NAMES},
}
_SAME_LANGUAGE = ("euro",)  # modifiers that change no word: de_DE@euro is German
_HAN = ("Hans", "Hant")  # Chinese names its scripts by territory: zh_CN, zh_TW


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


def names_language(text: str, code: str) -> bool:
    """Whether ``text`` names the language of ``code`` in words, as some catalogs' ``Language``
    headers do: its English name or its own, in any case (``French``, ``Français`` and
    ``français`` for ``fr``; ``German``, ``Deutsch`` for ``de``). A territory or a script in
    ``code`` must be named too (``Portuguese (Brazil)``), so a name never stands for a
    variety it does not say.

    Raises:
        ValueError, TypeError: ``code`` as ``check_language``.
    """
    check_language(code)
    if not isinstance(text, str):
        return False
    locale = Locale.parse(code.replace("-", "_"))
    names = {str(locale.get_display_name("en")), str(locale.get_display_name(locale))}
    return text.strip().casefold() in {name.casefold() for name in names}


class LocaleParts(NamedTuple):
    """A locale read by ``locale_parts``: ``("sr", "Latn", "RS", "")`` for ``sr_RS@latin``."""

    language: str  # ISO 639, lower case
    script: str  # ISO 15924 (Latn), the likely one where none is named ("" if CLDR has none)
    territory: str  # ISO 3166 or a UN M.49 number; "" for none
    variant: str  # a modifier or variant that names no script (valencia, quot), lower case


def _likely_script(language: str, territory: str) -> str:
    """The script CLDR's likely subtags give ``language`` in ``territory`` (or anywhere)."""
    likely = get_global("likely_subtags")
    for key in (f"{language}_{territory}", language) if territory else (language,):
        if key in likely:
            return str(parse_locale(likely[key])[2] or "")
    return ""


def locale_parts(name: object) -> LocaleParts | None:
    """A locale as gettext names it (``sr_RS@latin``, ``zh_TW.UTF-8``, ``pt_BR``) or as a
    language code does (``sr-Latn``, ``zh-Hant-TW``): its language, script, territory and
    variant; None when it is no locale of a language babel knows (``C``, ``app``, ``German``).

    The script is the one named (a script code, or a modifier naming one: ``@latin``,
    ``@cyrillic``, ``@Latn``), else CLDR's likely one for the language in that territory
    (``zh_TW``: Hant; ``zh``, ``zh_CN``: Hans; ``sr``: Cyrl; ``sr_ME``: Latn). A modifier that
    names no script is the variant (``@valencia``, ``@quot``, ``@ije``), but ``@euro``, a
    currency, is nothing.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    try:
        parts = parse_locale(name.strip().replace("-", "_"))
    except ValueError:
        return None
    language, territory, script, variant = (part or "" for part in parts[:4])
    if not language.isalpha() or not localedata.exists(language):
        return None
    modifier = str(parts[4]) if len(parts) > 4 and parts[4] else ""
    if modifier and modifier.lower() not in _SAME_LANGUAGE:
        named = _SCRIPTS.get(modifier.lower())
        if named is not None and not script:
            script = named
        elif not variant:
            variant = modifier
    script = script or _likely_script(language, territory)
    return LocaleParts(language.lower(), script, territory.upper(), variant.lower())


def locale_rank(found: object, wanted: object) -> int | None:
    """How well a catalog's locale ``found`` (``locale_parts``' spellings) serves the language
    code ``wanted``: 0 when it is that locale (the same language, script and variant, and the
    same territory where ``wanted`` names one: ``de_AT`` and ``de_DE`` for ``de``), 1 when it
    is the language's catalog without a territory while ``wanted`` names one (``pt`` for
    ``pt-BR``, as gettext falls back to it), None when it is another (``pt_PT`` for ``pt-BR``,
    ``sr`` for ``sr-Latn``, ``zh_CN`` for ``zh-Hant``, ``ca@valencia`` for ``ca``)."""
    have, want = locale_parts(found), locale_parts(wanted)
    if have is None or want is None or have[:2] != want[:2] or have.variant != want.variant:
        return None
    if want.territory and have.territory and have.territory != want.territory:
        return None
    return 1 if want.territory and not have.territory else 0


def locale_folders(code: str) -> list[str]:
    """The names of the folders of a locale tree (``/usr/share/locale/NAME/LC_MESSAGES``)
    that gettext keeps the catalogs of the language ``code`` in, as its tools name them:
    ``pt-BR`` -> ``pt_BR``; ``sr-Latn`` -> ``sr@latin``, ``sr_Latn``; ``zh-Hant`` ->
    ``zh_Hant``, ``zh_TW``; ``zh-Hans-CN`` -> ``zh_Hans_CN``, ``zh_CN``; ``de`` -> ``de``.
    A territory's folder only: never the language's own (``pt`` for ``pt-BR``), which is
    another variety, nor another script's (``sr`` for ``sr-Latn``).

    Raises:
        ValueError, TypeError: as ``check_language``.
    """
    check_language(code)
    parts = locale_parts(code)
    if parts is None:
        raise LuongError(f"language: expected a language code babel knows, got {code!r:.40}")
    language, script, territory, variant = parts
    # The script the code names; Chinese names its script by territory where it names none.
    named = parse_locale(code.replace("-", "_"))[2] or (script if script in _HAN else None)
    cc = f"_{territory}" if territory else ""
    if variant:
        return [f"{language}{cc}@{variant}"]
    names = []
    if script != _likely_script(language, territory):  # sr-Latn: the name must say so
        if script not in _HAN and " " not in _SCRIPT_NAMES.get(script, " "):
            names.append(f"{language}{cc}@{_SCRIPT_NAMES[script].lower()}")
        names.append(f"{language}_{script}{cc}")
    else:
        names += [f"{language}_{named}{cc}"] if named else []
        names.append(f"{language}{cc}")
    if named and not territory:  # zh-Hant: where the script is written, zh_TW
        likely = get_global("likely_subtags")
        guess = parse_locale(likely.get(f"{language}_{named}") or likely.get(language) or "und")
        where = str(guess[1] or "") if guess[2] == named else ""
        if where and _likely_script(language, where) == script:
            names.append(f"{language}_{where}")
    return list(dict.fromkeys(names))


def locale_name(language: str) -> str:
    """The folder of ``language`` (a babel code) in a locale tree, gettext's ``ll_CC``:
    ``pt-BR`` -> ``pt_BR``, ``zh-Hans-CN`` -> ``zh_CN`` (the script left out)."""
    locale = Locale.parse(language, sep="-")
    return locale.language + (f"_{locale.territory}" if locale.territory else "")
