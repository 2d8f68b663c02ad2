"""What one call of ``Translator.translations`` (``luong.translation.translator``) hands out,
and how: a ``Translation`` per source, built from the search's hypotheses a window at a
time (``Job``: placeholders put back or searched again, word alignments, a glossary's terms),
a translation memory's exact matches between them (``with_memory``). Its records and the
lines ``luong translate`` writes of it are ``luong.translation.records``'.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from luong.common.progress import WorkProgress
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.data.vocab import one_line
from luong.memory.glossary import Term
from luong.memory.translation_memory import Match, Recall
from luong.model.ensemble import Decodable
from luong.search import Hypothesis, hypothesis_text
from luong.translation.alignment import hypothesis_alignment
from luong.translation.placeholder_search import (
    keep_placeholders,
    restore_hypothesis,
    written_phrases,
)
from luong.translation.placeholders import MaskedSource

__all__ = ["Decoding", "Job", "Translation", "counted", "with_memory", "with_terms"]


@dataclass(frozen=True)
class Translation:
    """One source's outputs, as ``Translator.translations`` hands them out.

    ``hypotheses`` are the search's, best first (of the masked source with
    ``placeholders="mask"``: their tokens, scores and attention); ``texts`` the outputs as
    they are written, one per hypothesis: unknowns replaced (``replace_unk``), placeholders
    put back or kept (``RequestOptions.placeholders``); ``searched_again[k]``: output ``k``
    comes from a second, constrained search (placeholders ``"constrain"``), so its
    hypothesis' scores and attention are the first search's; ``alignments`` each output's
    word links ``[(i, j), ...]`` (``RequestOptions.align``), else None; ``searched`` the
    text the search read, whose symbols the attention's columns are: the source, or with
    placeholders ``"mask"`` the source with its spans masked.

    With a translation memory (``translations``' ``memory``,
    ``luong.memory.translation_memory``): ``origin`` ``"memory"`` for a source the memory
    holds exactly, whose one text is the memory's translation and which has no hypotheses
    (nothing was decoded; ``alignments``, asked for, one empty list), else ``"model"``;
    ``matches`` the memory's matches for the source, best first (for ``"memory"``, the one
    reused first, score 100), or None when no memory was consulted. ``terms`` the glossary's
    terms its outputs hold (``RequestOptions.glossary``:
    ``luong.memory.glossary.enforced_terms``), in the source's order."""

    source: str
    hypotheses: list[Hypothesis]
    texts: list[str]
    searched_again: list[bool]
    alignments: list[list[tuple[int, int]]] | None = None
    searched: str = ""
    origin: str = "model"
    matches: tuple[Match, ...] | None = None
    terms: tuple[Term, ...] = ()


class Decoding(Protocol):
    """What a ``Job`` reads of the ``Translator`` it runs for (``luong.translation.translator``):
    the model, and the context the model computes in (``Translator.computing``)."""

    model: Decodable

    def computing(self) -> AbstractContextManager[Any]: ...


def counted(
    batches: Iterator[tuple[list[int], list[list[Hypothesis]]]], progress: WorkProgress
) -> Iterator[tuple[list[int], list[list[Hypothesis]]]]:
    """``decode_batches``' search calls, ``progress`` advanced by each one's sources."""
    for indices, lists in batches:
        progress.advance(len(indices))
        yield indices, lists


def with_terms(
    given: Sequence[Sequence[str]], exact: bool, terms: list[list[Term]]
) -> tuple[list[list[str]], bool | list[list[bool]]]:
    """Each source's constraint phrases with its terms' targets after them, and which are
    held exactly: with ``exact``, the given phrases (the terms at least once)."""
    pairs = list(zip(given, terms, strict=True))
    merged = [[*phrases, *(term.target for term in found)] for phrases, found in pairs]
    if not exact:
        return merged, False
    flags = [[True] * len(phrases) + [False] * len(found) for phrases, found in pairs]
    return merged, flags


@dataclass(frozen=True)
class Job:
    """One call of ``Translator.translations``: what it turns each source's hypotheses
    into."""

    translator: Decoding
    sources: Sequence[str]
    search: SearchOptions
    request: RequestOptions
    masked: list[MaskedSource] | None
    constraints: Sequence[Sequence[str]] | None
    terms: list[list[Term]] | None = None
    exact: bool | list[list[bool]] = False  # which constraints are held exactly

    def run(
        self, batches: Iterator[tuple[list[int], list[list[Hypothesis]]]]
    ) -> Iterator[Translation]:
        """The translations in input order, each window's as soon as it is done."""
        done: dict[int, Translation] = {}  # ready but not yet handed out: one window at most
        next_index = 0
        while True:
            with self.translator.computing():  # the search runs in next(), so autocast here
                batch = next(batches, None)
                if batch is None:
                    break
                done.update(self.call_translations(*batch))
            while next_index in done:
                yield done.pop(next_index)
                next_index += 1

    def call_translations(
        self, indices: list[int], lists: list[list[Hypothesis]]
    ) -> dict[int, Translation]:
        """One search call's sources (``indices``) and their hypotheses as their
        ``Translation``s. With placeholders ``"constrain"``, the call's outputs that miss
        a span are searched again together (``keep_placeholders``: one batched constrained
        search, then one batched masked search for what still misses one)."""
        done = {i: self.translation(i, hyps) for i, hyps in zip(indices, lists, strict=True)}
        if self.masked is not None or self.request.placeholders != "constrain":
            return done
        model = self.translator.model
        given = [self.constraints[i] if self.constraints is not None else () for i in indices]
        held = [self.exact if isinstance(self.exact, bool) else self.exact[i] for i in indices]
        texts = [done[i].texts for i in indices]
        kept = keep_placeholders(
            model, [self.sources[i] for i in indices], texts, self.search, given, held
        )
        for i, old, new in zip(indices, texts, kept, strict=True):
            again = [a != b for a, b in zip(new, old, strict=True)]
            done[i] = replace(done[i], texts=new, searched_again=again)
        return done

    def translation(self, index: int, hyps: list[Hypothesis]) -> Translation:
        """Source ``index``'s hypotheses as its ``Translation`` (placeholders ``"constrain"``:
        before its outputs are searched again, ``call_translations``)."""
        model, source = self.translator.model, self.sources[index]
        copy_from = source if self.search.replace_unk else None
        given = self.constraints[index] if self.constraints is not None else ()
        terms = tuple(self.terms[index]) if self.terms is not None else ()
        if self.masked is not None:
            masked, keep = self.masked[index], written_phrases(model, given)
            texts = [restore_hypothesis(model, masked, h, keep) for h in hyps]
            return Translation(
                source, hyps, texts, [False] * len(hyps), searched=masked.text, terms=terms
            )
        texts = [hypothesis_text(model, h, copy_from) for h in hyps]
        searched_again = [False] * len(hyps)
        alignments = None
        if self.request.align:
            vocabs = model.src_vocab, model.tgt_vocab
            alignments = [hypothesis_alignment(h, source, *vocabs) for h in hyps]
        return Translation(source, hyps, texts, searched_again, alignments, source, terms=terms)


def with_memory(
    sources: Sequence[str], recalls: list[Recall], decoded: Iterator[Translation], align: bool
) -> Iterator[Translation]:
    """The translations of ``sources`` in order: the memory's where ``recalls`` holds an
    exact match, the next of ``decoded`` (the others', in order) with its fuzzy matches
    elsewhere."""
    for source, recall in zip(sources, recalls, strict=True):
        if recall.exact is None:
            yield replace(next(decoded), matches=recall.fuzzy)
            continue
        yield Translation(
            source,
            [],
            [one_line(recall.exact.target)],  # the rule every output obeys
            [False],
            [[]] if align else None,
            source,
            origin="memory",
            matches=(recall.exact, *recall.fuzzy),
        )
