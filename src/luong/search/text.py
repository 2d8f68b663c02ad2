"""Text in, hypotheses out: ``decode`` and ``decode_batches`` take raw strings and a
``SearchOptions``, cut the inputs into windows and search calls, encode them, and run the
search the options ask for (``run_search``: greedy, beam search or sampling).

Shapes: ``B`` batch, ``k`` beam size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import torch
from torch import Tensor

from luong.common.checks import check_positive_int, check_strings
from luong.common.errors import LuongError, LuongTypeError
from luong.config.search import OptionError, SearchOptions
from luong.model.ensemble import (
    Columns,
    Decodable,
    check_shortlist,
    encode_texts,
    shortlist_columns,
)
from luong.model.seq2seq import evaluating
from luong.search.beam import search_beams
from luong.search.constrained import Exact, check_exact, constrained_search, constraint_ids
from luong.search.greedy import greedy_steps
from luong.search.hypothesis import (
    AnyMemory,
    AnyState,
    Hypothesis,
    default_max_len,
    row_hypotheses,
    without_attention,
)
from luong.search.prefix import prefix_ids
from luong.search.sampling import draw_samples, sampling_generator

__all__ = ["SEARCH_ROWS", "Search", "decode", "decode_batches", "run_search"]

SEARCH_ROWS = 8192
"""``decode``: at most this many decoder rows (sentences x beams or draws) per search call
once the beam is wider than ``SEARCH_ROWS / batch_size``: 16 beams at the default 512
sentences."""

Search = Callable[[AnyMemory, AnyState, Tensor, Tensor, list[int]], list[list[Hypothesis]]]
"""A search over an encoded chunk: (memory, state, source lengths [B], output limits [B], the
chunk's indices among the inputs [B])."""


def run_search(
    model: Decodable,
    options: SearchOptions,
    prefix: list[int],
    generator: torch.Generator | None,
    constraints: Sequence[Sequence[Sequence[int]]] | None = None,
    exact: Exact = False,
    texts: Sequence[str] | None = None,
) -> Search:
    """The search ``options`` ask for, over encoded chunks: sampling (``draw_samples``,
    from ``generator``), plain greedy search (``greedy_steps``: the same tokens and scores as
    one beam, a little faster), or beam search (``search_beams``); a chunk with constraints
    (per input, its phrases of target ids) gets constrained beam search
    (``constrained_search``, with ``exact``: for all, or per input, per phrase).
    ``prefix``: the target ids of ``options.prefix``.

    Given the inputs' ``texts``, greedy and beam search run over the chunk's shortlist
    (``options.shortlist``, ``luong.model.ensemble.shortlist_columns``: the prefix's ids added)
    when the model has one; sampling draws, and constrained search searches, over the full
    vocabulary (a draw from the model's own distribution; every constraint token and each
    alternative first piece of a phrase reachable)."""

    def search(
        memory: AnyMemory, state: AnyState, lengths: Tensor, limits: Tensor, chunk: list[int]
    ) -> list[list[Hypothesis]]:
        if constraints is not None and any(constraints[i] for i in chunk):
            ids = [constraints[i] for i in chunk]
            held = exact if isinstance(exact, bool) else [exact[i] for i in chunk]
            return constrained_search(
                model, memory, state, lengths, limits, options, prefix, ids, exact=held
            )
        if options.sample:
            assert generator is not None
            return draw_samples(model, memory, state, lengths, limits, options, prefix, generator)
        columns = None
        if texts is not None:
            batch = [texts[i] for i in chunk]
            columns = shortlist_columns(model, batch, options.shortlist, prefix)
        if options.greedy:
            tokens, log_probs, weights = greedy_steps(
                model, memory, state, limits, options.combine, columns
            )
            if columns is not None:
                tokens = columns.ids[tokens]
            return [[h] for h in row_hypotheses(tokens, log_probs, weights, lengths, limits)]
        # No greedy bound (prune): its greedy search costs more than the beams it drops
        # (docs/performance.md, "Lexical shortlists"); the outputs are the same either way.
        if columns is None:
            return search_beams(model, memory, state, lengths, limits, options, prefix, prune=False)
        own = columns.to_columns(prefix)
        lists = search_beams(
            model, memory, state, lengths, limits, options, own, prune=False, columns=columns
        )
        return _in_vocabulary(lists, columns)

    return search


def _in_vocabulary(lists: list[list[Hypothesis]], columns: Columns) -> list[list[Hypothesis]]:
    """Hypotheses whose tokens are ``columns``' columns, with their target ids instead."""
    ids = columns.ids.tolist()
    return [[replace(h, tokens=[ids[c] for c in h.tokens]) for h in hyps] for hyps in lists]


def decode(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: Exact = False,
) -> list[list[Hypothesis]]:
    """Decode raw strings, batched by length; per input, in order, its n-best list.

    An empty or whitespace-only input gets no hypotheses (an empty list). The model is put
    in eval mode for the call. Every hypothesis is kept to the end: ``decode_batches`` hands
    them out batch by batch.

    Args:
        model: the model, or an ``Ensemble``.
        texts: the sources.
        options: how to decode (default ``SearchOptions()``: greedy search). A sentence's
            output limit is ``options.max_len``, or its own ``default_max_len``; so no output
            depends on the batch it was decoded in, except sampling's draws, which follow
            the input order.
        batch_size: sentences per search call (the search runs ``batch_size * k`` rows; at
            most ``SEARCH_ROWS // k`` sentences, at least one, with wide beams).
        constraints: per input, the phrases (target text) its outputs must contain, each as
            often as listed (``[]``: none): lexically constrained beam search
            (``luong.search.constrained``; the output limit grows to hold them). A phrase is
            encoded alone with the target vocabulary (``constraint_ids``: with
            sentencepiece it starts a word). Not with ``options.sample``.
        exact: with constraints, each phrase exactly as often as listed (a token that would
            complete one more occurrence is forbidden); or per input, a flag per phrase: the
            phrases held exactly, the others at least as often as listed.

    Raises:
        TypeError: ``texts`` is not a sequence of strings, ``options`` not a
            ``SearchOptions``, ``constraints`` not a list of lists of strings.
        ValueError: ``batch_size`` below 1, a prefix outside the target vocabulary;
            constraints: not one list per input, an empty phrase or one with a symbol the
            target vocabulary cannot produce, a phrase or a sentence's phrases above their
            bounds (``constraints[i]: ...``: ``luong.search.constrained
            .MAX_PHRASE_PIECES``, ``MAX_CONSTRAINT_PIECES``), with sampling; ``exact`` not a
            flag per phrase.
    """
    outputs: list[list[Hypothesis]] = [[] for _ in texts]
    batches = decode_batches(
        model, texts, options, batch_size=batch_size, constraints=constraints, exact=exact
    )
    for indices, lists in batches:
        for i, hyps in zip(indices, lists, strict=True):
            outputs[i] = hyps
    return outputs


def decode_batches(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    window: int | None = None,
    attention: bool = True,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: Exact = False,
) -> Iterator[tuple[list[int], list[list[Hypothesis]]]]:
    """``decode``, handed out a search call at a time, so a caller keeps only what it needs.

    The inputs are taken in windows of ``window`` (all at once when None), in order; within
    a window they are sorted by length (less padding; not when sampling, which draws in
    input order so that a seed gives the same outputs for one input list), and every input
    of a window is handed out before the next window starts. So a caller that writes
    outputs in input order holds at most one window's.

    Args:
        model, texts, options, batch_size, constraints, exact: as ``decode``.
        window: inputs per window (>= 1), or None for one window.
        attention: keep each hypothesis' attention; with False it is an empty
            ``[len(tokens), 0]`` tensor (scores are computed with it all the same).

    Returns:
        an iterator of ``(indices, lists)``: the indices of some inputs, and their n-best
        lists (an empty list for an empty or whitespace-only input). Every index comes once.

    Raises:
        TypeError, ValueError: as ``decode``, and ``window`` below 1, on the call itself.
    """
    check_strings("texts", texts)
    options = SearchOptions() if options is None else options
    if not isinstance(options, SearchOptions):
        raise LuongTypeError(f"options: expected SearchOptions, got {type(options).__name__}")
    check_positive_int("batch_size", batch_size)
    if window is not None:
        check_positive_int("window", window)
    prefix = prefix_ids(model.tgt_vocab, options.prefix)
    ids = None
    if constraints is not None:
        ids = constraint_ids(model.tgt_vocab, constraints)
        if len(ids) != len(texts):
            raise LuongError(
                f"constraints: expected one list per input ({len(texts)}), got {len(ids)}"
            )
        if options.sample and any(ids):
            raise OptionError("sample", "constraints need beam search, not sampling")
        if not isinstance(exact, bool):
            exact = check_exact(exact, ids)
    check_shortlist(model, options.shortlist)
    generator = sampling_generator(options, model.device) if options.sample else None
    search = run_search(model, options, prefix, generator, ids, exact, texts)
    return _windows(model, texts, options, batch_size, window, attention, search)


def _windows(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions,
    batch_size: int,
    window: int | None,
    attention: bool,
    search: Search,
) -> Iterator[tuple[list[int], list[list[Hypothesis]]]]:
    """The windows, chunks and encoding of ``decode_batches``, with ``search`` run on each
    chunk: ``max(beam, nbest)`` decoder rows per sentence (fewer sentences per call when
    wide)."""
    rows = max(options.beam, options.nbest)
    per_call = min(batch_size, max(1, SEARCH_ROWS // rows))  # wide beams: fewer
    size = len(texts) if window is None else window
    with evaluating(model):
        for first in range(0, len(texts), max(size, 1)):
            span = range(first, min(first + size, len(texts)))
            empty = [i for i in span if not texts[i].strip()]
            if empty:
                yield empty, [[] for _ in empty]
            todo = [i for i in span if texts[i].strip()]
            if not options.sample:  # similar lengths together; the caller restores order
                todo.sort(key=lambda i: len(texts[i]))
            for start in range(0, len(todo), per_call):
                chunk = todo[start : start + per_call]
                with torch.inference_mode():
                    memory, state, lengths = encode_texts(model, [texts[i] for i in chunk])
                    # The default limit is each sentence's own: no output depends on its batch.
                    limits = (
                        default_max_len(lengths)
                        if options.max_len is None
                        else torch.full_like(lengths, options.max_len)
                    )
                    lists = search(memory, state, lengths, limits, chunk)
                if not attention:
                    lists = [[without_attention(h) for h in hyps] for hyps in lists]
                yield chunk, lists
