"""The faces' settings: what ``luong translate`` writes (``FORMATS``) and how it treats
placeholders (``PLACEHOLDER_MODES``), a translation memory's fuzzy matches
(``TM_THRESHOLD``, ``TM_MATCHES``), the bounds of a figure (``MAX_DPI``,
``MAX_POSITIONS``), how ``luong corpus`` reads catalogs (``CorpusOptions``) and fetches
Debian's (``FetchOptions``), and what one request to ``luong serve`` may ask for
(``ServeLimits``).

Plain data here, so that the command line shows them without importing the modules that use
them (``luong.translation.translator``, ``luong.evaluation.plot``, ``luong.server.app``: they import
torch; ``luong.catalogs.corpus``: polib; ``luong.catalogs.debian``: tqdm).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError

__all__ = [
    "CORPUS_CONTEXTS",
    "CORPUS_SPLIT_BY",
    "FORMATS",
    "MAX_DPI",
    "MAX_POSITIONS",
    "PLACEHOLDER_MODES",
    "SHORTLIST_FREQUENT",
    "SHORTLIST_PER_SOURCE",
    "TM_MATCHES",
    "TM_THRESHOLD",
    "CorpusOptions",
    "FetchOptions",
    "ServeLimits",
]

FORMATS: tuple[str, ...] = ("text", "jsonl")
"""What ``luong translate`` (``luong.translation.records.output_lines``) writes: the outputs
(n-best tab-separated), or a JSON object a line."""

PLACEHOLDER_MODES: dict[str, str] = {
    "off": "decode the source as it is",
    "mask": "mask each placeholder before decoding and put it back after, at the output word "
    "the attention aligns to it: each appears exactly as often as in the source",
    "constrain": "beam search, then, where an output misses a placeholder, constrained beam "
    "search holding each exactly as often as the source (masking where that fails too)",
}
"""How ``luong translate --placeholders`` treats a source's placeholders
(``luong.translation.placeholders``): name -> help text. A new mechanism is one more entry here and
one more branch in ``luong.translation.records.output_lines``."""

MAX_DPI = 1200
"""The highest resolution a figure takes, in pixels per inch (``luong.evaluation.plot``)."""

MAX_POSITIONS = 1000
"""The most source positions a chart of ``luong.evaluation.plot.plot_scores`` draws (padding
included)."""

TM_THRESHOLD = 75.0
"""The lowest score (rapidfuzz's ``fuzz.ratio``, 0 to 100) of a translation memory's fuzzy
match that is shown (``luong.memory.translation_memory``; ``--tm-threshold``)."""

TM_MATCHES = 3
"""The most fuzzy matches of a translation memory a source gets
(``luong.memory.translation_memory``)."""

SHORTLIST_PER_SOURCE = 100
"""``luong shortlist``: the target pieces kept per source piece (Marian's shortlists keep 100
and the 100 most frequent words; ``luong.translation.lexicon``)."""

SHORTLIST_FREQUENT = 100
"""``luong shortlist``: the most frequent target pieces, in every batch's candidates."""

CORPUS_CONTEXTS = ("drop", "skip")
"""What ``luong corpus`` does with an entry that has a context: drop the context, or skip it."""

CORPUS_SPLIT_BY = ("catalog", "hash")
"""How ``luong corpus`` deals its splits: whole catalogs, or each source by a hash."""


@dataclass(frozen=True)
class CorpusOptions:
    """How ``luong corpus`` turns gettext catalogs into pairs and splits them
    (``luong.catalogs.corpus``, whose docstring has the rules)."""

    plurals: bool = False  # plural entries too: msgid -> msgstr[0], msgid_plural -> the last
    context: str = "drop"  # an entry with a msgctxt: "drop" the context, or "skip" the entry
    max_len: int = 200  # the most characters a side may have
    dev: float = 0.05  # the share of the pairs dealt to dev
    devtest: float = 0.05  # the share dealt to devtest
    split_by: str = "catalog"  # "catalog": whole catalogs; "hash": each source

    def __post_init__(self) -> None:
        if not isinstance(self.plurals, bool):
            raise LuongTypeError(f"plurals: expected a bool, got {type(self.plurals).__name__}")
        if self.context not in CORPUS_CONTEXTS:
            raise LuongError(
                f"context: expected one of {', '.join(CORPUS_CONTEXTS)}, got {self.context!r}"
            )
        if self.split_by not in CORPUS_SPLIT_BY:
            raise LuongError(
                f"split_by: expected one of {', '.join(CORPUS_SPLIT_BY)}, got {self.split_by!r}"
            )
        check_positive_int("max_len", self.max_len)
        for name in ("dev", "devtest"):
            share = getattr(self, name)
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share < 1:
                raise LuongError(f"{name}: expected a share in [0, 1), got {share!r}")
        if self.dev + self.devtest >= 1:
            raise LuongError(
                f"dev + devtest: expected below 1 (train needs a share), got "
                f"{self.dev + self.devtest:g}"
            )


@dataclass(frozen=True)
class FetchOptions:
    """How ``luong corpus --debian`` fetches the catalogs of Debian's packages
    (``luong.catalogs.debian``, whose docstring has the steps)."""

    jobs: int = 4  # apt-get download processes at once
    chunk: int = 8  # packages one apt-get download fetches (each call loads apt's cache: 0.5 s)
    max_mb: float = 80.0  # a larger package is skipped (data, games' artwork), in MB
    update: bool = True  # as root, apt-get update with the Contents index when it is missing

    def __post_init__(self) -> None:
        for name in ("jobs", "chunk"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
                raise LuongError(f"{name}: expected an int from 1 to 64, got {value!r}")
        if (
            isinstance(self.max_mb, bool)
            or not isinstance(self.max_mb, int | float)
            or not self.max_mb > 0
        ):
            raise LuongError(f"max_mb: expected a number of MB above 0, got {self.max_mb!r}")
        if not isinstance(self.update, bool):
            raise LuongTypeError(f"update: expected a bool, got {type(self.update).__name__}")


@dataclass(frozen=True)
class ServeLimits:
    """What one request to ``luong serve`` may ask for (``luong.server.app``)."""

    max_sources: int = 64  # sources per request (413 above)
    max_source_len: int = 200  # symbols per source, at most the model's own (413 above)
    max_beam: int = 16  # beam size (422 above)
    max_nbest: int = 16  # outputs per source (422 above)
    max_prefix_len: int = 200  # characters of a prefix (422 above)
    max_output_len: int = 512  # max_len and min_len of a request, in tokens (422 above)
    max_body_bytes: int = 1_000_000  # the request body (413 above)
    max_glossary_terms: int = 1000  # terms of a request's own glossary (413 above)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            check_positive_int(f.name, value)
