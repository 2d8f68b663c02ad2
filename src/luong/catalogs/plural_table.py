"""gettext's own ``Plural-Forms`` for a language, as ``msginit`` writes them into a new
catalog: the table of GNU gettext 0.21's ``gettext-tools/src/plural-table.c`` (each value
checked against msginit 0.21's output). Babel's CLDR rules differ for some languages (CLDR's
French has three forms, gettext's and every French catalog's two: ``plural=(n > 1)``), so a
new catalog takes gettext's value where this table has one, and babel's otherwise.

Plain data: imports nothing of luong but the errors.
"""

from __future__ import annotations

from luong.common.errors import LuongTypeError

__all__ = ["GETTEXT_PLURAL_FORMS", "gettext_plural_forms"]

_ONE = "nplurals=1; plural=0;"
_TWO = "nplurals=2; plural=(n != 1);"
_SLAVIC = (
    "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
    "(n%100<10 || n%100>=20) ? 1 : 2);"
)
_CZECH = "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;"

GETTEXT_PLURAL_FORMS: dict[str, str] = {
    **dict.fromkeys(("ja", "vi", "ko"), _ONE),
    **dict.fromkeys(
        ("en", "de", "nl", "sv", "da", "no", "nb", "nn", "fo", "es", "pt", "it", "bg", "el"),
        _TWO,
    ),
    **dict.fromkeys(("fi", "et", "he", "eo", "hu", "tr"), _TWO),
    "pt_BR": "nplurals=2; plural=(n > 1);",
    "fr": "nplurals=2; plural=(n > 1);",
    "lv": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2);",
    "ga": "nplurals=3; plural=n==1 ? 0 : n==2 ? 1 : 2;",
    "ro": "nplurals=3; plural=n==1 ? 0 : (n==0 || (n%100 > 0 && n%100 < 20)) ? 1 : 2;",
    "lt": (
        "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && (n%100<10 || n%100>=20) "
        "? 1 : 2);"
    ),
    **dict.fromkeys(("ru", "uk", "be", "sr", "hr"), _SLAVIC),
    **dict.fromkeys(("cs", "sk"), _CZECH),
    "pl": "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);",
    "sl": "nplurals=4; plural=(n%100==1 ? 0 : n%100==2 ? 1 : n%100==3 || n%100==4 ? 2 : 3);",
}
"""Language (or ``ll_CC``) -> the ``Plural-Forms`` value msginit writes for it."""


def gettext_plural_forms(language: str) -> str | None:
    """gettext's ``Plural-Forms`` of ``language`` (``"fr"``, ``"pt_BR"``, ``"pt-BR"``,
    ``"sr@latin"``, ``"de_AT.UTF-8"``), looked up as msginit does: the language with its
    territory, then the language alone; None where gettext's table has none.

    Raises:
        TypeError: ``language`` is not a string.
    """
    if not isinstance(language, str):
        raise LuongTypeError(f"language: expected a language code, got {language!r}")
    parts = language.strip().replace("-", "_").split("@")[0].split(".")[0].split("_")
    territory = f"{parts[0].lower()}_{parts[-1].upper()}" if len(parts) > 1 else ""
    return GETTEXT_PLURAL_FORMS.get(territory) or GETTEXT_PLURAL_FORMS.get(parts[0].lower())
