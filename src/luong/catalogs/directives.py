"""Format directives, one table: printf's conversions (C's, as ``msgfmt --check-format``
reads a ``c-format`` string), Python's ``%``-formats (``python-format``) and Python's brace
fields (``python-brace-format``). ``luong.translation.placeholders`` finds them in any text
(``PRINTF``, ``PYTHON_NAMED``, ``BRACE_FIELD``) and ``luong.catalogs.entries`` counts them in a
catalog's format entries (``FORMATS``); both read the patterns built here, so a form that one
knows the other knows.

A printf directive, as gettext's ``format-c.c`` reads it (C99, POSIX, glibc):

=============  ===============================================================================
``%``          then, in order:
argument       ``N$``, optional: ``%1$s``
flags          any of ``-`` ``+`` space ``#`` ``0`` ``'`` ``I``
width          optional: digits, ``*`` or ``*N$``
precision      optional: ``.`` then digits, ``*``, ``*N$`` or nothing
length         optional: ``hh h ll l L q j z Z t``
conversion     ``d i o u x X e E f F g G a A c s C S p n m``, or instead of length and
               conversion an ``<inttypes.h>`` macro as xgettext writes it: ``<PRId64>``,
               ``<PRIuMAX>``
``%%``         a literal percent sign (no flags)
=============  ===============================================================================

Python's ``%``-format: ``%``, an optional ``(name)``, flags ``-+ #0``, width, precision,
length ``h l L``, a conversion ``d i o u x X e E f F g G c r s a %``.
A brace field: ``{``, a name, index or nothing, attributes and indices
(``[A-Za-z0-9_.[]]*``), an optional conversion ``!r`` ``!s`` ``!a``, an optional ``:spec``,
``}``; a ``python-brace-format`` string's ``{{`` and ``}}`` are literal braces.

In free text (``PRINTF``, what ``luong.translation.placeholders`` masks and constrains) two forms
are read more narrowly, so that prose is not taken for a directive: the space flag only before the
conversion of a signed number (``d e E f F g G``) that neither goes on with a letter, digit,
``.`` or ``-`` (``% d files`` is a directive; ``100% sure``, ``50% discount``, ``5% a year``,
``10% i.e.``, ``5% e.g.``, ``100% e-mail`` are text), and a brace field's spec holds no space
or brace. Python's ``%r`` is a directive there too.
"""

from __future__ import annotations

import re

__all__ = [
    "ARGUMENT",
    "BRACE_FIELD",
    "C_CONVERSIONS",
    "C_FLAGS",
    "C_FORMAT",
    "C_LENGTHS",
    "FORMATS",
    "INTTYPES",
    "PRECISION",
    "PRINTF",
    "PYTHON_BRACE_FORMAT",
    "PYTHON_FORMAT",
    "PYTHON_NAMED",
    "WIDTH",
    "in_order",
]

ARGUMENT = r"(?:[1-9][0-9]*\$)"
"""``N$``: the argument a directive (or its ``*``) takes."""

WIDTH = rf"(?:[0-9]+|\*{ARGUMENT}?)"
PRECISION = rf"(?:\.(?:[0-9]+|\*{ARGUMENT}?)?)"
C_FLAGS = "-+ #0'I"
C_LENGTHS = r"(?:hh|h|ll|l|L|q|j|z|Z|t)"
C_CONVERSIONS = "diouxXeEfFgGaAcsCSpnm"
INTTYPES = r"<PRI[diouxX](?:8|16|32|64|LEAST(?:8|16|32|64)|FAST(?:8|16|32|64)|MAX|PTR)>"


def _printf(flags: str, conversions: str) -> str:
    """A printf directive's pattern (``%%`` not included) with these flags and conversions."""
    return (
        rf"%{ARGUMENT}?[{re.escape(flags)}]*{WIDTH}?{PRECISION}?"
        rf"(?:{C_LENGTHS}?[{conversions}]|{INTTYPES})"
    )


C_FORMAT = re.compile(rf"%%|{_printf(C_FLAGS, C_CONVERSIONS)}")
"""A ``c-format`` string's directives, as msgfmt --check-format reads them."""

_TEXT_FLAGS = C_FLAGS.replace(" ", "")
PRINTF = re.compile(
    rf"%%|{_printf(_TEXT_FLAGS, C_CONVERSIONS + 'r')}"
    # the space flag: only before a signed number's conversion that ends its word
    rf"|%{ARGUMENT}?[{re.escape(_TEXT_FLAGS)}]* [{re.escape(C_FLAGS)}]*{WIDTH}?{PRECISION}?"
    rf"{C_LENGTHS}?[deEfFgG](?![\w.-])"
)
"""printf's directives in free text (the module docstring: ``C_FORMAT``'s, the space flag
read narrowly, and Python's ``%r``)."""

_PYTHON_REST = rf"[-+ #0]*{WIDTH}?{PRECISION}?[hlL]?[diouxXeEfFgGcrsa%]"
PYTHON_FORMAT = re.compile(rf"%(?:\([^)]*\))?{_PYTHON_REST}")
"""A ``python-format`` string's directives (``%%`` included), as msgfmt reads them."""

PYTHON_NAMED = re.compile(rf"%\([A-Za-z_][A-Za-z0-9_]*\){_PYTHON_REST}")
"""Python's named ``%``-directives in free text: ``%(name)s``."""

BRACE_FIELD = re.compile(r"\{[A-Za-z0-9_.\[\]]*(?:![rsa])?(?::[^{}\s]*)?\}")
"""A brace field in free text: ``{name} {0} {} {0:.2f} {user.name} {0!r}``."""

PYTHON_BRACE_FORMAT = re.compile(
    r"\{\{|\}\}|\{[A-Za-z0-9_.\[\]]*(?:![rsa])?(?::(?:[^{}]|\{[A-Za-z0-9_.\[\]]*\})*)?\}"
)
"""A ``python-brace-format`` string's fields (a spec may hold one level of nested fields,
``{0:{1}}``) and its literal ``{{`` and ``}}``."""

FORMATS = {
    "c-format": C_FORMAT,
    "python-format": PYTHON_FORMAT,
    "python-brace-format": PYTHON_BRACE_FORMAT,
}
"""The gettext format flags whose directives msgfmt --check-format compares, and their
patterns."""


def in_order(directive: str) -> bool:
    """Whether ``directive`` takes the next argument in order, so that a translation must keep
    its place among the others: a ``%``-directive without ``N$`` or ``(name)`` (``%%`` takes
    none), an empty brace field (``{}``, ``{:.2f}``, ``{!r}``)."""
    if directive.startswith("%"):
        return not directive.endswith("%") and "$" not in directive and directive[1:2] != "("
    return directive.startswith("{") and directive[1:2] in ("}", ":", "!")
