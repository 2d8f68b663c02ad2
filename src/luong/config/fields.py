"""The machinery of the checked config dataclasses (``luong.config.model``, ``.train``,
``.vocab``): a field with its help text (``setting``), the checks their ``__post_init__``
share (a count's is ``luong.common.checks``, which every public function uses too), each
message naming the field, what it expected and what it got, and a config built from a dict
whose unknown keys are named (``config_from_dict``).

A field's help text is the one source of its ``luong train --help`` text
(``luong.cli.common.add_config_flags``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, fields
from typing import Any

from luong.common.errors import LuongError
from luong.config.search import option

__all__ = ["check_choice", "config_from_dict", "is_number", "setting"]


def setting(
    default: Any, help: str, *, choices: tuple[str, ...] | None = None, metavar: str | None = None
) -> Any:
    """A config field with its help text: ``name: int = setting(3, "what it does (0: ...)")``.

    The text is what ``luong train --help`` shows for the field's flag (with the default of
    the task or preset); ``choices`` are the flag's valid values. The config checks its
    fields itself (``__post_init__``), so no bounds are given here.

    Raises:
        ValueError: ``help`` is not a text of one line.
    """
    if not isinstance(help, str) or not help.strip() or "\n" in help:
        raise LuongError(f"help: expected a text of one line, got {help!r:.60}")
    return field(default=default, metadata=option(help, choices=choices, metavar=metavar))


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """Refuse a ``value`` of field ``name`` that is none of ``choices``.

    Raises:
        ValueError: the field, the choices and the value.
    """
    if value not in choices:
        raise LuongError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")


def is_number(value: object) -> bool:
    """An int or a float, not a bool (``True < 1`` holds, but ``dropout = true`` is no rate)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def config_from_dict(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build dataclass ``cls`` from ``data``, naming unknown keys and the valid ones."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise LuongError(f"{where}: unknown options {unknown}; valid options: {sorted(names)}")
    return cls(**data)
