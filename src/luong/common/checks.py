"""The check of an argument that counts something (a batch size, a beam, a limit, a layer
count), shared by every public function and config that takes one, so that each refuses it
in the same words: ``beam: expected an int >= 1, got 0``. Imports nothing of luong but the
errors.
"""

from __future__ import annotations

from luong.common.errors import LuongError, LuongTypeError

__all__ = ["check_positive_int"]


def check_positive_int(name: str, value: object) -> int:
    """``value``, refused unless it is an int >= 1 (a bool is none), ``name`` the argument's
    name in the message.

    Raises:
        TypeError: not an int (``LuongTypeError``, also a ``ValueError``), naming the value.
        ValueError: an int below 1, naming the value.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise LuongTypeError(f"{name}: expected an int >= 1, got {value!r}")
    if value < 1:
        raise LuongError(f"{name}: expected an int >= 1, got {value!r}")
    return value
