"""The faces' settings: what ``luong translate`` writes (``FORMATS``) and how it treats
placeholders (``PLACEHOLDER_MODES``), the bounds of a figure (``MAX_DPI``,
``MAX_POSITIONS``) and what one request to ``luong serve`` may ask for (``ServeLimits``).

Plain data here, so that the command line shows them without importing the modules that use
them (``luong.translator``, ``luong.plot``, ``luong.server``: they import torch).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from luong.errors import LuongError

__all__ = ["FORMATS", "MAX_DPI", "MAX_POSITIONS", "PLACEHOLDER_MODES", "ServeLimits"]

FORMATS: tuple[str, ...] = ("text", "jsonl")
"""What ``luong translate`` (``luong.translator.output_lines``) writes: the outputs (n-best
tab-separated), or a JSON object a line."""

PLACEHOLDER_MODES: dict[str, str] = {
    "off": "decode the source as it is",
    "mask": "mask each placeholder before decoding and put it back after, at the output word "
    "the attention aligns to it: each appears exactly as often as in the source",
    "constrain": "beam search, then, where an output misses a placeholder, constrained beam "
    "search holding each exactly as often as the source (masking where that fails too)",
}
"""How ``luong translate --placeholders`` treats a source's placeholders
(``luong.placeholders``): name -> help text. A new mechanism is one more entry here and one
more branch in ``luong.translator.output_lines``."""

MAX_DPI = 1200
"""The highest resolution a figure takes, in pixels per inch (``luong.plot``)."""

MAX_POSITIONS = 1000
"""The most source positions a chart of ``luong.plot.plot_scores`` draws (padding included)."""


@dataclass(frozen=True)
class ServeLimits:
    """What one request to ``luong serve`` may ask for (``luong.server``)."""

    max_sources: int = 64  # sources per request (413 above)
    max_source_len: int = 200  # symbols per source, at most the model's own (413 above)
    max_beam: int = 16  # beam size (422 above)
    max_nbest: int = 16  # outputs per source (422 above)
    max_prefix_len: int = 200  # characters of a prefix (422 above)
    max_output_len: int = 512  # max_len and min_len of a request, in tokens (422 above)
    max_body_bytes: int = 1_000_000  # the request body (413 above)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LuongError(f"{f.name}: expected an int >= 1, got {value!r}")
