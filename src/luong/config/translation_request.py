"""One request, one value: ``TranslationRequest``, everything a face asks of
``Translator.answer`` (``luong.translation.translator``).

It holds how to search (``search``, a ``SearchOptions``: beam, penalties, prefix,
sampling), what is asked around the search (``options``, a ``RequestOptions``:
placeholders, glossary pairs, memory on or off, alignment, attention), each source's
phrases its outputs must hold (``constraints``, with ``exact``), and how the sources are
cut into search calls (``batch_size``, ``window``), and the longest source admitted
(``max_src_len``). Every face builds one from its input
(a command's flags, a request's JSON body, a catalog's messages) and hands it whole to the
Translator, with nothing beside it but the sources:

    request = TranslationRequest(SearchOptions(beam=5), RequestOptions(placeholders="constrain"),
                                 constraints=(("Datei",), ()), batch_size=64)
    translations = list(translator.answer(["Open the file", "Close"], request))

The translation memory and the glossary file are the Translator's own, read once
(``Translator.with_resources``): a request says whether the memory is consulted
(``options.memory``) and which pairs its glossary adds (``options.glossary``), not which
files. A new field goes in ``RequestOptions`` (where it becomes a flag, a field of the
server's body and of the explorer) unless it is per source or says how the work is cut.
Plain data: imports only the plain floors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions

__all__ = ["Constraints", "TranslationRequest"]

Constraints = tuple[tuple[str, ...], ...]
"""Per source, the phrases its outputs must hold (``luong.search.constrained``)."""


@dataclass(frozen=True)
class TranslationRequest:
    """One request to a ``Translator``, checked on construction (a ``LuongTypeError`` or
    ``LuongError`` naming the field, what it expected and what it got).

    Attributes:
        search: how to decode; None: the Translator's decoding defaults
            (``Translator.search``, the folder's).
        options: what is asked beside the search (``RequestOptions``).
        constraints: per source, the phrases its outputs must contain, each at least as
            often as listed (a list of lists of strings, kept as tuples); None: none.
        exact: with ``constraints``, each phrase exactly as often as listed (in the
            placeholders' searches again too).
        batch_size: sentences per search call (>= 1).
        window: sources decoded (and sorted by length) together before their translations
            are handed out (>= 1); None: all at once.
        max_src_len: the longest source admitted, in symbols (``luong translate
            --max-src-len``; a location-score model reads no more than its own); None: the
            model's (``luong.translation.admission.source_limit``).
    """

    search: SearchOptions | None = None
    options: RequestOptions = field(default_factory=RequestOptions)
    constraints: Sequence[Sequence[str]] | None = None
    exact: bool = False
    batch_size: int = 512
    window: int | None = None
    max_src_len: int | None = None

    def __post_init__(self) -> None:
        if self.search is not None and not isinstance(self.search, SearchOptions):
            raise LuongTypeError(
                f"search: expected SearchOptions or None, got {type(self.search).__name__}"
            )
        if not isinstance(self.options, RequestOptions):
            raise LuongTypeError(
                f"options: expected RequestOptions, got {type(self.options).__name__}"
            )
        if self.constraints is not None:
            object.__setattr__(self, "constraints", _constraints(self.constraints))
        if not isinstance(self.exact, bool):
            raise LuongTypeError(f"exact: expected a bool, got {type(self.exact).__name__}")
        check_positive_int("batch_size", self.batch_size)
        for name in ("window", "max_src_len"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.search is not None:
            self.options.check_search(self.search)

    def check_sources(self, sources: Sequence[str]) -> None:
        """Raise unless ``constraints`` (if any) hold one list per source of ``sources``.

        Raises:
            ValueError: ``"constraints: expected one list per source (3), got 2"``.
        """
        if self.constraints is not None and len(self.constraints) != len(sources):
            raise LuongError(
                f"constraints: expected one list per source ({len(sources)}), "
                f"got {len(self.constraints)}"
            )


def _constraints(value: object) -> Constraints:
    """``value`` (a list of lists of phrase strings) as a tuple of tuples; the phrases
    themselves are checked against the target vocabulary where they are searched
    (``Translator.check_constraints``, ``luong.search.constrained``).

    Raises:
        TypeError: not a list of lists of strings (naming the first source that is not).
    """
    expected = "expected one list of phrase strings per source"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise LuongTypeError(f"constraints: {expected}, got {type(value).__name__}")
    lists = []
    for i, phrases in enumerate(value):
        if (
            isinstance(phrases, str | bytes)
            or not isinstance(phrases, Sequence)
            or not all(isinstance(phrase, str) for phrase in phrases)
        ):
            raise LuongTypeError(f"constraints: {expected}, got {phrases!r:.60} at {i}")
        lists.append(tuple(phrases))
    return tuple(lists)
