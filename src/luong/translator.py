"""Strings in, strings out: a trained model behind one ``translate``, and the policy for the
sources a user passes (too long, unknown symbols).

``luong.load(folder)`` returns a ``Translator``; ``translate(model, texts)`` does the same for
a ``Seq2Seq`` in hand (a model just trained, say). Both take an ``Ensemble`` as well
(``luong.load([folder, ...])``). Search itself is ``luong.search``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from luong.alignment import hypothesis_alignment, pharaoh
from luong.config.faces import FORMATS, PLACEHOLDER_MODES
from luong.config.model import Seq2SeqConfig
from luong.ensemble import Decodable, Ensemble, members_of
from luong.errors import LuongError, LuongTypeError
from luong.model import Seq2Seq
from luong.placeholders import (
    MaskedSource,
    mask_source,
    restore_hypothesis,
    with_placeholders,
)
from luong.search import Hypothesis, decode, decode_batches, hypothesis_symbols, hypothesis_text
from luong.search_options import SearchOptions
from luong.vocab import Vocab

__all__ = [
    "FORMATS",
    "FittedSources",
    "Translator",
    "fit_sources",
    "hypothesis_record",
    "load",
    "output_lines",
    "translate",
    "translate_nbest",
]


def translate(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: bool = False,
) -> list[str]:
    """Translate raw strings, batched; the best output per input, in order.

    Greedy search by default (``luong.search.decode`` does the work and gives the
    hypotheses themselves: scores, tokens, attention).

    Args:
        model: the model, or an ``Ensemble``.
        texts: the sources.
        options: how to decode (``SearchOptions``: beam, penalties, prefix, sampling,
            ``replace_unk``: each ``<unk>`` replaced by the source token it attended to
            most, ...); default greedy search.
        batch_size: sentences per search call.
        constraints: per input, the phrases its output must contain (terminology,
            placeholders), each as often as listed; ``[]`` for none (lexically constrained
            beam search, ``luong.search.decode``).
        exact: with constraints, each phrase exactly as often as listed.

    Returns:
        one output per input; ``""`` for an empty (or whitespace-only) input.

    Raises:
        TypeError: ``texts`` is not a sequence of strings, ``options`` not a
            ``SearchOptions``.
        ValueError: ``batch_size`` below 1, a prefix outside the target vocabulary, bad
            constraints (``luong.search.decode``).
    """
    lists = translate_nbest(
        model, texts, options, batch_size=batch_size, constraints=constraints, exact=exact
    )
    return [outs[0] if outs else "" for outs in lists]


def translate_nbest(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: bool = False,
) -> list[list[str]]:
    """``translate``, with each input's ``options.nbest`` outputs (or draws), best first: a
    list per input (empty for an empty input)."""
    options = SearchOptions() if options is None else options
    lists = decode(
        model, texts, options, batch_size=batch_size, constraints=constraints, exact=exact
    )
    return [
        [hypothesis_text(model, h, text if options.replace_unk else None) for h in hyps]
        for text, hyps in zip(texts, lists, strict=True)
    ]


def output_lines(
    model: Decodable,
    sources: Sequence[str],
    options: SearchOptions | None = None,
    *,
    format: str = "text",
    batch_size: int = 512,
    window: int | None = None,
    align: bool = False,
    placeholders: str = "off",
    constraints: Sequence[Sequence[str]] | None = None,
) -> Iterator[str]:
    """The lines ``luong translate`` writes, one per source, in order, handed out as they are
    done: memory holds one window of sources' outputs (``decode_batches``), whatever the
    number of sources, and attention only where it is written (jsonl), used
    (``options.replace_unk``, ``align``, masked placeholders).

    Args:
        model: the model, or an ``Ensemble``.
        sources: the inputs (``fit_sources``' ``sources``).
        options: how to decode (default greedy search).
        format: ``"text"``: the n-best outputs, tab-separated (an empty line for an empty
            input); ``"jsonl"``: ``{"source", "hypotheses": [hypothesis_record, ...]}``.
        batch_size: sentences per search call.
        window: sources decoded (and sorted by length) together before their lines are
            handed out; default ``8 * batch_size``.
        align: with each output its word alignment (``luong.alignment``): in text, the
            output then a tab and its Pharaoh links (``0-0 1-2``); in jsonl, each record's
            ``"alignment"``, a list of ``[i, j]`` pairs.
        placeholders: ``luong.config.PLACEHOLDER_MODES``: ``"off"``, ``"mask"`` or
            ``"constrain"`` (``luong.placeholders``: each source placeholder kept exactly as
            often; ``"constrain"`` adds each source's placeholders to its ``constraints``,
            every phrase then held exactly as often as listed).
        constraints: per source, the phrases its outputs must contain (``translate``).

    Returns:
        an iterator of lines, without their newline.

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: an unknown ``format`` or ``placeholders``, ``align`` with
            ``placeholders="mask"``; as ``luong.search.decode_batches``, on the call itself.
    """
    if format not in FORMATS:
        raise LuongError(f"format: expected one of {', '.join(FORMATS)}, got {format!r}")
    if placeholders not in PLACEHOLDER_MODES:
        raise LuongError(
            f"placeholders: expected one of {', '.join(PLACEHOLDER_MODES)}, got {placeholders!r}"
        )
    if not isinstance(align, bool):
        raise LuongTypeError(f"align: expected a bool, got {type(align).__name__}")
    if align and placeholders != "off":
        # The links would be the masked source's and the output's before the spans are put
        # back: not what is written.
        raise LuongError(f"align: not with placeholders={placeholders!r}; expected 'off'")
    options = SearchOptions() if options is None else options
    if not isinstance(options, SearchOptions):
        raise LuongTypeError(f"options: expected SearchOptions, got {type(options).__name__}")
    masked = [mask_source(text) for text in sources] if placeholders == "mask" else None
    if constraints is not None and len(constraints) != len(sources):
        raise LuongError(
            f"constraints: expected one list per source ({len(sources)}), got {len(constraints)}"
        )
    batches = decode_batches(
        model,
        sources if masked is None else [m.text for m in masked],
        options,
        batch_size=batch_size,
        window=window if window is not None else 8 * batch_size,
        attention=format == "jsonl" or options.replace_unk or align or masked is not None,
        constraints=constraints,
    )
    kept = _Kept(options, constraints) if placeholders == "constrain" else None
    style = _Style(format, options.replace_unk, align, masked, kept)
    return _lines_in_order(model, sources, batches, style)


@dataclass(frozen=True)
class _Style:
    format: str
    replace_unk: bool
    align: bool
    masked: list[MaskedSource] | None
    kept: _Kept | None  # placeholders="constrain": outputs checked, searched again if need be


@dataclass(frozen=True)
class _Kept:
    options: SearchOptions
    constraints: Sequence[Sequence[str]] | None


def _lines_in_order(
    model: Decodable,
    sources: Sequence[str],
    batches: Iterator[tuple[list[int], list[list[Hypothesis]]]],
    style: _Style,
) -> Iterator[str]:
    done: dict[int, str] = {}  # lines ready but not yet handed out: one window at most
    next_line = 0
    for indices, lists in batches:
        for i, hyps in zip(indices, lists, strict=True):
            masked = style.masked[i] if style.masked is not None else None
            done[i] = _output_line(model, sources[i], hyps, style, masked, i)
        while next_line in done:
            yield done.pop(next_line)
            next_line += 1


def _output_line(
    model: Decodable,
    source: str,
    hyps: list[Hypothesis],
    style: _Style,
    masked: MaskedSource | None,
    index: int,
) -> str:
    kept = None
    if style.kept is not None:
        texts = [hypothesis_text(model, h, source if style.replace_unk else None) for h in hyps]
        given = style.kept.constraints[index] if style.kept.constraints is not None else ()
        kept = with_placeholders(model, source, texts, style.kept.options, given)
    if style.format == "text":
        copy_from = source if style.replace_unk else None
        fields = []
        for k, h in enumerate(hyps):
            if masked is not None:
                fields.append(restore_hypothesis(model, masked, h))
                continue
            if kept is not None:
                fields.append(kept[k])
                continue
            fields.append(hypothesis_text(model, h, copy_from))
            if style.align:
                links = hypothesis_alignment(h, source, model.src_vocab, model.tgt_vocab)
                fields.append(pharaoh(links))
        return "\t".join(fields)
    records = []
    for k, h in enumerate(hyps):
        record = hypothesis_record(model, h, source, style.replace_unk, style.align)
        if masked is not None:
            record["text"] = restore_hypothesis(model, masked, h)
        if kept is not None and kept[k] != record["text"]:
            # searched again (constrained, or masked): the record's scores and attention are
            # the first search's, so it says so
            record["text"] = kept[k]
            record["searched_again"] = True
        records.append(record)
    # allow_nan=False: hypothesis_record writes null for what is not finite; nothing else may
    # slip a NaN, which JSON parsers reject, into the output.
    return json.dumps(
        {"source": source, "hypotheses": records}, ensure_ascii=False, allow_nan=False
    )


def hypothesis_record(
    model: Decodable,
    hypothesis: Hypothesis,
    source: str,
    replace_unk: bool = False,
    align: bool = False,
) -> dict[str, Any]:
    """A hypothesis as JSON-ready data: ``text``, ``score``, ``tokens`` (output symbols, EOS
    included) and ``attention`` ``[T][S]`` over the source symbols and its EOS; numbers
    rounded to 6 decimals, and None (JSON's null) for a number that is not finite, which JSON
    cannot hold. With ``align``, ``alignment``: the word links ``[[i, j], ...]``, source word
    ``i``, output word ``j`` (``luong.alignment.hypothesis_alignment``)."""
    copy_from = source if replace_unk else None
    record: dict[str, Any] = {
        "text": hypothesis_text(model, hypothesis, copy_from),
        "score": _json_number(hypothesis.score),
        "tokens": hypothesis_symbols(model, hypothesis, copy_from),
        "attention": [[_json_number(w) for w in row] for row in hypothesis.attention.tolist()],
    }
    if align:
        links = hypothesis_alignment(hypothesis, source, model.src_vocab, model.tgt_vocab)
        record["alignment"] = [[i, j] for i, j in links]
    return record


def _json_number(value: float) -> float | None:
    return round(value, 6) if math.isfinite(value) else None


@dataclass(frozen=True)
class FittedSources:
    """Sources made fit for a model (``fit_sources``) and what was done to them."""

    sources: list[str]  # one per input line, in order
    limit: int  # the longest source, in symbols
    truncated: list[int]  # the 0-based indices of the sources cut to ``limit``
    unknown_symbols: int  # source symbols outside the vocabulary (read as <unk>)
    lines_with_unknown: int


def source_length(vocab: Vocab, text: str) -> int:
    """The symbols the encoder reads for ``text``, the EOS it appends not counted."""
    return len(vocab.tokenize(text))


def truncate_source(vocab: Vocab, text: str, limit: int) -> str:
    """``text`` cut to its first ``limit`` symbols (normalised as the vocabulary reads it)."""
    return vocab.join(vocab.tokenize(text)[:limit])


def fit_sources(
    model: Decodable,
    sources: Sequence[str],
    *,
    max_src_len: int | None = None,
    truncate: bool = False,
    name: str = "<input>",
) -> FittedSources:
    """Check source lengths against the longest source the model takes, and count unknown
    symbols; one source per input, in order.

    Args:
        model: the model, or an ensemble (the limits of all its members hold; unknown symbols
            are counted with the first member's vocabulary).
        sources: the inputs.
        max_src_len: the longest source, in symbols (EOS not counted); default the model's
            ``max_src_len`` (the smallest of an ensemble's). A location-score model takes no
            more than its own.
        truncate: cut longer sources to the limit instead of raising.
        name: the input's name in messages (a file name, ``<stdin>``).

    Raises:
        ValueError: ``max_src_len`` below 1 or above a location model's own; a source longer
            than the limit without ``truncate`` (``NAME:LINE: N symbols, above ...``).
    """
    configs = [member.config for member in members_of(model)]
    own = min(config.max_src_len for config in configs)
    limit = own if max_src_len is None else max_src_len
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise LuongError(f"max_src_len: expected an int >= 1, got {limit!r}")
    location = [c.max_src_len for c in configs if c.attention == "location"]
    if location and limit > min(location):
        raise LuongError(
            f"max_src_len: a location-score model reads at most {min(location)} symbols, "
            f"got {limit}"
        )
    vocab = model.src_vocab
    lengths = [source_length(vocab, text) for text in sources]
    too_long = [i for i, length in enumerate(lengths) if length > limit]
    if too_long and not truncate:
        first = too_long[0]
        raise LuongError(
            f"{name}:{first + 1}: {lengths[first]} symbols, above the maximum source length "
            f"{limit} ({len(too_long)} such lines); pass --truncate to cut them, or "
            "--max-src-len"
        )
    cut = set(too_long)
    fitted = [
        truncate_source(vocab, text, limit) if i in cut else text for i, text in enumerate(sources)
    ]
    unknown = [len(vocab.unknown(text)) for text in fitted]
    return FittedSources(fitted, limit, too_long, sum(unknown), sum(1 for n in unknown if n))


class Translator:
    """A trained model, or an ensemble of them, with ``translate``: what ``luong.load``
    returns.

    Args:
        model: the ``Seq2Seq`` or ``Ensemble`` to translate with.
    """

    def __init__(self, model: Decodable) -> None:
        if not isinstance(model, Seq2Seq | Ensemble):
            raise LuongTypeError(
                f"model: expected a Seq2Seq or an Ensemble, got {type(model).__name__}"
            )
        self.model = model

    @classmethod
    def from_pretrained(
        cls,
        directory: str | Path | Sequence[str | Path],
        device: str | torch.device = "cpu",
    ) -> Translator:
        """Load a model folder (``Seq2Seq.from_pretrained``), or a list of them as an
        ``Ensemble`` (a list of one too)."""
        if isinstance(directory, str | Path):
            return cls(Seq2Seq.from_pretrained(directory, device=device))
        if not isinstance(directory, Sequence):
            raise LuongTypeError(
                f"directory: expected a model folder or a list of them, got {type(directory)}"
            )
        return cls(Ensemble.from_pretrained(directory, device=device))

    @property
    def config(self) -> Seq2SeqConfig:
        """The model's config (an ensemble's first member's)."""
        return members_of(self.model)[0].config

    @property
    def members(self) -> list[Seq2Seq]:
        """The models it translates with: one, or an ensemble's members."""
        return members_of(self.model)

    @property
    def src_lang(self) -> str | None:
        """The source language (an ISO 639 code, ``config.json``'s ``"src_lang"``); None
        when the model folder records none.

        Raises:
            ValueError: an ensemble whose members record different pairs."""
        return self._pair()[0]

    @property
    def tgt_lang(self) -> str | None:
        """The target language, as ``src_lang``."""
        return self._pair()[1]

    def _pair(self) -> tuple[str | None, str | None]:
        pairs = {(m.src_lang, m.tgt_lang) for m in self.members}
        if len(pairs) > 1:
            named = ", ".join(sorted(f"{s or '?'}-{t or '?'}" for s, t in pairs))
            raise LuongError(
                f"the ensemble's members record different language pairs ({named}); record "
                "one pair on every member (luong pair DIR --src-lang .. --tgt-lang ..)"
            )
        return next(iter(pairs))

    @property
    def src_vocab(self) -> Vocab:
        return self.model.src_vocab

    @property
    def tgt_vocab(self) -> Vocab:
        return self.model.tgt_vocab

    def translate(
        self,
        texts: Sequence[str],
        options: SearchOptions | None = None,
        *,
        batch_size: int = 512,
    ) -> list[str]:
        """``translate(self.model, texts, options)``: the best output per input, in order."""
        return translate(self.model, texts, options, batch_size=batch_size)

    def translate_nbest(
        self,
        texts: Sequence[str],
        options: SearchOptions | None = None,
        *,
        batch_size: int = 512,
    ) -> list[list[str]]:
        """``translate_nbest(self.model, texts, options)``: ``options.nbest`` outputs per
        input, best first."""
        return translate_nbest(self.model, texts, options, batch_size=batch_size)


def load(directory: str | Path | Sequence[str | Path], device: str = "cpu") -> Translator:
    """Load a saved model folder for translation, or a list of folders as an ensemble
    (``Translator.from_pretrained``): ``luong.load(["runs/a", "runs/b"]).translate(...)``."""
    return Translator.from_pretrained(directory, device=device)
