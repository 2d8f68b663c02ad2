"""The checks of the arguments that many public functions take, so that each refuses them in
the same words: a count (a batch size, a limit, a layer count: ``batch_size: expected an int
>= 1, got 0``) and a sequence of strings (the sources of a search, a vocabulary's symbols:
``texts[2]: expected a str, got bytes``). Imports nothing of luong but the errors.
"""

from __future__ import annotations

from collections.abc import Sequence

from luong.common.errors import LuongError, LuongTypeError

__all__ = ["check_positive_int", "check_strings"]


def check_positive_int(name: str, value: object) -> int:
    """``value``, refused unless it is an int >= 1 (a bool is none), ``name`` the argument's
    name in the message, the value named by its first 60 characters (a list passed as a count
    does not fill the screen).

    Raises:
        TypeError: not an int (``LuongTypeError``, also a ``ValueError``), naming the value.
        ValueError: an int below 1, naming the value.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise LuongTypeError(f"{name}: expected an int >= 1, got {value!r:.60}")
    if value < 1:
        raise LuongError(f"{name}: expected an int >= 1, got {value!r:.60}")
    return value


def check_strings(name: str, values: object) -> Sequence[str]:
    """``values``, refused unless it is a sequence (a list, a tuple) of str, ``name`` the
    argument's name in the message; a lone str is refused, not read as its characters.

    Raises:
        TypeError: ``name: expected a sequence of strings, got a single str`` (or the type
            that came), or ``name[i]: expected a str, got bytes`` for the first item that is
            not a str (``LuongTypeError``, also a ``ValueError``).
    """
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        got = "a single str" if isinstance(values, str) else type(values).__name__
        raise LuongTypeError(f"{name}: expected a sequence of strings, got {got}")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise LuongTypeError(f"{name}[{i}]: expected a str, got {type(value).__name__}")
    return values
