"""The errors luong raises about what a user gave it: a file, a flag, a request, a model
folder, a value passed to a public function.

    try:
        luong.load("runs/dates").translate(lines)
    except luong.LuongError as error:  # the input is wrong: show the message
        ...

``LuongError`` is a ``ValueError`` and ``LuongTypeError`` also a ``TypeError``, so code
that caught those before catches them still. The command line prints a ``LuongError`` as
one line on stderr and exits 1; any other exception is a bug in luong (or in a library it
calls) and shows its traceback, with a line asking for a report (``luong.cli.main``).
Imports nothing.
"""

from __future__ import annotations

__all__ = ["LuongError", "LuongTypeError"]


class LuongError(ValueError):
    """A value luong cannot take, said in one line that names it, what was expected and
    what came."""


class LuongTypeError(LuongError, TypeError):
    """A value of the wrong type (a ``LuongError`` and a ``TypeError``)."""
