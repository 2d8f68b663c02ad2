"""A request's own glossary, as a face receives it: none, ``[[source, target], ...]`` or a
TSV text, of at most a deployment's number of terms, each text valid Unicode. No transport:
each error is a ``LuongError`` that the face words in its own shape (LibreTranslate's
``Invalid request: ...``)."""

from __future__ import annotations

from luong.common.errors import LuongError, LuongTypeError
from luong.common.lines import lone_surrogate
from luong.memory.glossary import Glossary
from luong.memory.glossary_files import parse_glossary

__all__ = ["check_unicode", "request_glossary"]


def request_glossary(value: object, most: int | None = None) -> tuple[tuple[str, str], ...]:
    """The request's ``glossary``: none, ``[[source, target], ...]`` or TSV text, of at most
    ``most`` terms (a TSV's lines that hold something, counted before any is parsed), as
    ``(source term, target term)`` pairs.

    Raises:
        ValueError: more terms than ``most``, a term that is not valid Unicode, a pair or a
            line that is not a term and its target (the message names it).
        TypeError: neither a list of pairs nor a text.
    """
    if value is None or value == "" or value == []:
        return ()
    if most is not None and isinstance(value, str | list):
        count = len(value) if isinstance(value, list) else sum(map(bool, value.split("\n")))
        if count > most:
            raise LuongError(
                f"max_glossary_terms: the glossary has {count} terms, above the limit of {most}"
            )
    try:
        if isinstance(value, str):
            check_unicode("glossary", value)
            return parse_glossary(value, "tsv", "glossary").pairs()
        if isinstance(value, list):
            for i, pair in enumerate(value):
                if isinstance(pair, list):
                    for term in pair:
                        if isinstance(term, str):
                            check_unicode(f"glossary[{i}]", term)
            return Glossary.of(value, "glossary").pairs()
    except TypeError as error:
        if isinstance(error, LuongError):
            raise
        raise LuongTypeError(str(error)) from None
    raise LuongTypeError(
        "glossary: expected a list of [source term, target term] pairs or TSV text, got "
        f"{type(value).__name__}"
    )


def check_unicode(name: str, text: str) -> None:
    """Refuse a lone surrogate (JSON's ``"\\ud800"``): no answer or message could hold it.

    Raises:
        ValueError: ``text`` holds one (the message names ``name`` and its place).
    """
    surrogate = lone_surrogate(text)
    if surrogate is not None:
        raise LuongError(f"{name} is not valid Unicode (a lone surrogate at character {surrogate})")
