"""Which sources a model takes, by one rule: ``admit`` gives a verdict per source, and every
face (``luong translate``, ``luong po``, ``luong plot``, the HTTP and LibreTranslate APIs)
maps a verdict to its own shape of error (a ``FILE:LINE`` line and exit 1, an entry left
untranslated, a 413 or 422).

The rule:

- **Unrepresentable**: a text that is not valid Unicode (a lone surrogate, as JSON's
  ``"\\ud800"`` decodes) cannot be tokenized; it is refused first.
- **Empty**: nothing but whitespace. Not a refusal: it gets no output (an empty line, no
  hypotheses), as ``luong.search.decode`` does.
- **Too long**: the encoder would read more symbols than the limit. The symbols counted
  are the most the search may read as the request decodes the source (``read_length``):
  the text as it is (placeholders off), its placeholders masked (``"mask"``), or the longer
  of the two (``"constrain"``, which masks where its constrained search fails). The limit
  is the model's ``max_src_len``, the smallest of an ensemble's, or the one a face gives
  (``source_limit``: a location-score model reads no more than its own, whatever is given).

``fit_sources`` is the command line's use of it: every source checked before the first is
decoded (an error names the first refused line), or cut to fit with ``truncate``; ``luong
eval`` refuses a data set with a refused source, naming its first pair, before decoding;
``Translator.answer`` refuses a call that holds one (``sources[I]: ...``), and a training
run its dev and test splits before the first step (``luong.training.data.check_lengths``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from luong.common.checks import check_positive_int, check_strings
from luong.common.errors import LuongError
from luong.common.lines import lone_surrogate
from luong.config.request import RequestOptions
from luong.data.vocab import Vocab
from luong.model.ensemble import Decodable, members_of
from luong.translation.placeholders import mask_source

__all__ = [
    "UNREADABLE",
    "VERDICTS",
    "FittedSources",
    "Verdict",
    "admit",
    "fit_sources",
    "read_length",
    "refusals",
    "source_length",
    "source_limit",
    "truncate_source",
]

VERDICTS: tuple[str, ...] = ("unrepresentable", "binary", "empty", "too_long")
"""The kinds of ``Verdict``, in the order they are checked."""

UNREADABLE: tuple[str, ...] = ("unrepresentable", "binary")
"""The kinds of a source that is no text to translate at all (a lone surrogate, a NUL), which
every face refuses whatever it does with a source too long."""


@dataclass(frozen=True)
class Verdict:
    """Why a source is not decoded as it is. ``kind``: one of ``VERDICTS``; for
    ``too_long``, ``length`` the symbols read, ``limit`` the most taken and ``masked``
    whether the length is that of the source with its placeholders masked; for
    ``unrepresentable``, ``length`` the character where the text stops being Unicode; for
    ``binary``, the character of its NUL (a binary file's byte: a model would translate it
    as text)."""

    kind: str
    length: int = 0
    limit: int = 0
    masked: str = ""  # the placeholders mode that masked it ("mask", "constrain"), else ""

    @property
    def refused(self) -> bool:
        """Whether a face refuses the source (every kind but ``empty``)."""
        return self.kind != "empty"

    @property
    def detail(self) -> str:
        """The verdict in words, as every face's message ends: ``"13 symbols with its
        placeholders masked (placeholders mask), above the maximum source length 12"``."""
        if self.kind == "unrepresentable":
            return f"not valid Unicode (a lone surrogate at character {self.length})"
        if self.kind == "binary":
            return f"binary data, not text (a NUL at character {self.length})"
        if self.kind == "empty":
            return "empty"
        masked = ""
        if self.masked:
            masked = f" with its placeholders masked (placeholders {self.masked})"
        return f"{self.length} symbols{masked}, above the maximum source length {self.limit}"


def source_length(vocab: Vocab, text: str) -> int:
    """The symbols the encoder reads for ``text``, the EOS it appends not counted."""
    return len(vocab.tokenize(text))


def truncate_source(vocab: Vocab, text: str, limit: int) -> str:
    """``text`` cut to its first ``limit`` symbols (normalised as the vocabulary reads it)."""
    return vocab.join(vocab.tokenize(text)[:limit])


def read_length(vocab: Vocab, text: str, placeholders: str = "off") -> int:
    """The most symbols the encoder may read for ``text`` with ``placeholders``
    (``RequestOptions.placeholders``): as it is (``"off"``), its spans masked (``"mask"``), or
    the longer of the two (``"constrain"``: masked only where the constrained search fails),
    the EOS it appends not counted."""
    if placeholders == "off":
        return source_length(vocab, text)
    masked = source_length(vocab, mask_source(text).text)
    return masked if placeholders == "mask" else max(masked, source_length(vocab, text))


def source_limit(model: Decodable, max_src_len: int | None = None) -> int:
    """The longest source ``model`` takes, in symbols: ``max_src_len``, or by default the
    model's own (the smallest of an ensemble's).

    Raises:
        ValueError: ``max_src_len`` below 1, or above the positions of a location-score
            model (it reads no more than its own ``max_src_len``).
    """
    configs = [member.config for member in members_of(model)]
    limit = min(c.max_src_len for c in configs) if max_src_len is None else max_src_len
    check_positive_int("max_src_len", limit)
    location = [c.max_src_len for c in configs if c.attention == "location"]
    if location and limit > min(location):
        raise LuongError(
            f"max_src_len: a location-score model reads at most {min(location)} symbols, "
            f"got {limit}"
        )
    return limit


def admit(
    model: Decodable,
    sources: Sequence[str],
    request: RequestOptions | None = None,
    *,
    max_src_len: int | None = None,
) -> list[Verdict | None]:
    """The verdict on each of ``sources`` (module docstring), in order; None for a source
    the model takes as ``request`` decodes it. ``max_src_len``: as ``source_limit``.

    Raises:
        TypeError: ``sources`` not a sequence of strings.
        ValueError: a bad ``max_src_len`` (``source_limit``).
    """
    limit = source_limit(model, max_src_len)
    placeholders = "off" if request is None else request.placeholders
    vocab = model.src_vocab
    verdicts: list[Verdict | None] = []
    for text in check_strings("texts", sources):
        surrogate = lone_surrogate(text)
        if surrogate is not None:
            verdicts.append(Verdict("unrepresentable", surrogate))
            continue
        if "\x00" in text:
            verdicts.append(Verdict("binary", text.index("\x00")))
            continue
        if not text.strip():
            verdicts.append(Verdict("empty"))
            continue
        length = read_length(vocab, text, placeholders)
        if length <= limit:
            verdicts.append(None)
            continue
        masked = placeholders if length > source_length(vocab, text) else ""
        verdicts.append(Verdict("too_long", length, limit, masked))
    return verdicts


def refusals(verdicts: Sequence[Verdict | None]) -> list[tuple[int, Verdict]]:
    """The refused ones of ``admit``'s ``verdicts`` (every kind but ``empty``), each with
    its source's index, in order: what a face names (the first) and counts."""
    return [(i, v) for i, v in enumerate(verdicts) if v is not None and v.refused]


@dataclass(frozen=True)
class FittedSources:
    """Sources made fit for a model (``fit_sources``) and what was done to them."""

    sources: list[str]  # one per input line, in order
    limit: int  # the longest source, in symbols
    truncated: list[int]  # the 0-based indices of the sources cut to ``limit``
    unknown_symbols: int  # source symbols outside the vocabulary (read as <unk>)
    lines_with_unknown: int


def fit_sources(
    model: Decodable,
    sources: Sequence[str],
    *,
    max_src_len: int | None = None,
    truncate: bool = False,
    name: str = "<input>",
    request: RequestOptions | None = None,
) -> FittedSources:
    """Check every source against the model (``admit``) before any is decoded, and count
    unknown symbols; one source per input, in order.

    Args:
        model: the model, or an ensemble (the limits of all its members hold; unknown symbols
            are counted with the first member's vocabulary).
        sources: the inputs.
        max_src_len: the longest source, in symbols (EOS not counted); as ``source_limit``.
        truncate: cut longer sources to fit instead of raising (the symbols read as
            ``request`` decodes them: masked ones too).
        name: the input's name in messages (a file name, ``<stdin>``).
        request: what is asked beside the search (its ``placeholders``).

    Raises:
        ValueError: a bad ``max_src_len``; a source that is not valid Unicode; a source
            longer than the limit without ``truncate`` (``NAME:LINE: N symbols, above the
            maximum source length L (K such lines); ...``).
    """
    verdicts = admit(model, sources, request, max_src_len=max_src_len)
    limit = source_limit(model, max_src_len)
    refused = [(i, v) for i, v in enumerate(verdicts) if v is not None and v.refused]
    for i, verdict in refused:
        if verdict.kind in UNREADABLE:
            raise LuongError(f"{name}:{i + 1}: {verdict.detail}")
    if refused and not truncate:
        first, verdict = refused[0]
        hint = "" if verdict.masked else ", or --max-src-len"
        raise LuongError(
            f"{name}:{first + 1}: {verdict.detail} ({len(refused)} such lines); pass "
            f"--truncate to cut them{hint}"
        )
    vocab = model.src_vocab
    placeholders = "off" if request is None else request.placeholders
    fitted = list(sources)
    for i, _ in refused:
        keep = min(limit, source_length(vocab, fitted[i]))
        while keep > 0 and read_length(vocab, truncate_source(vocab, fitted[i], keep),
                                       placeholders) > limit:  # fmt: skip
            keep -= 1
        fitted[i] = truncate_source(vocab, fitted[i], keep)
    unknown = [len(vocab.unknown(text)) for text in fitted]
    cut = [i for i, _ in refused]
    return FittedSources(fitted, limit, cut, sum(unknown), sum(1 for n in unknown if n))
