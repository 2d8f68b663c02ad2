"""The check of a language pair's flags (``--src-lang``, ``--tgt-lang``) for the commands that
take one (train, pair, corpus, prepare), before any data is read. A floor of its own between
the grammar and the commands: it loads babel, which ``luong --help`` does not."""

from __future__ import annotations

from luong.cli.common import UsageError
from luong.common.languages import check_language

__all__ = ["check_language_flags"]


def check_language_flags(*flags: tuple[str, str | None]) -> None:
    """Refuse, as a usage error naming its flag, each (flag, code) whose code is given (not
    empty or None) and is no language code babel knows (``check_language``)."""
    for name, code in flags:
        if code:
            try:
                check_language(code, name)
            except ValueError as error:
                raise UsageError(str(error)) from None
