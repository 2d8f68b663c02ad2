"""Translation that keeps placeholders: the searches around ``luong.translation.placeholders``' text
functions (find, mask, restore, check), as its module docstring describes them.

- ``translate_masked``: every span masked, the masked sources decoded with their attention
  kept, the spans put back where the attention aligns their masks (``restore_hypothesis``).
- ``translate_constrained``: the sources decoded as they are; an output that misses a span
  is searched again by lexically constrained beam search holding each span exactly as often
  as the source (``with_placeholders``, with a beam of at least ``CONSTRAINED_BEAM``), and
  masked where that fails too (``kept_or_masked``).

``luong.translation.placeholders`` imports no search; this module is where the two meet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from luong.common.checks import check_strings
from luong.common.errors import LuongError
from luong.config.search import SearchOptions
from luong.model.ensemble import Decodable
from luong.search import Hypothesis, decode, hypothesis_text
from luong.search.constrained import Exact, constraint_ids
from luong.translation.alignment import hypothesis_alignment
from luong.translation.placeholders import (
    DEFAULT_MASK,
    MaskedSource,
    check_mask,
    check_phrases,
    find_placeholders,
    holds_phrases,
    keeps_placeholders,
    mask_source,
    restore,
)

__all__ = [
    "CONSTRAINED_BEAM",
    "keep_placeholders",
    "kept_or_masked",
    "restore_hypothesis",
    "spellable_spans",
    "translate_constrained",
    "translate_masked",
    "with_placeholders",
    "written_phrases",
]

CONSTRAINED_BEAM = 10
"""The narrowest beam of the constrained search that ``with_placeholders`` runs: its banks
share the beam out between hypotheses by the constraint tokens they hold, so a beam of 5
leaves one place a bank to a sentence with four (Post and Vilar 2018 search with 10 to 20).
On gettext-en-de's dev (the translation preset's model, beam 5): BLEU 43.97 with it, 43.86
with the user's beam."""


def translate_masked(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    mask: str = DEFAULT_MASK,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: Exact = False,
) -> list[list[str]]:
    """Translate with every placeholder kept (the module docstring): each input's
    ``options.nbest`` outputs, best first, each carrying each of its source's spans exactly as
    often as the source (an empty list for an empty input).

    Args:
        model: the model, or an ``Ensemble``.
        texts: the sources.
        options: how to decode (default greedy search).
        mask: what a span becomes before decoding: one placeholder without spaces.
        batch_size: sentences per search call.
        constraints: per input, phrases its outputs must hold (``luong.search.decode``),
            none of them holding a placeholder (``check_phrases``): the masked source is
            decoded with them, and no span is put back inside one.
        exact: which phrases of ``constraints`` are held exactly as often as listed
            (``luong.search.constrained.Exact``; the others at least as often).

    Raises:
        TypeError: ``texts`` is not a sequence of strings, ``options`` not a
            ``SearchOptions``.
        ValueError: a bad ``mask``, a phrase that holds a placeholder; as
            ``luong.search.decode``.
    """
    check_strings("texts", texts)
    options = SearchOptions() if options is None else options
    check_mask(mask)
    if constraints is not None:
        check_phrases(constraints)
    masked = [mask_source(text, mask) for text in texts]
    lists = decode(
        model,
        [m.text for m in masked],
        options,
        batch_size=batch_size,
        constraints=constraints,
        exact=exact,
    )
    keeps = [written_phrases(model, c) for c in constraints or [[] for _ in texts]]
    return [
        [restore_hypothesis(model, m, h, keep) for h in hyps]
        for m, hyps, keep in zip(masked, lists, keeps, strict=True)
    ]


def restore_hypothesis(
    model: Decodable, masked: MaskedSource, hypothesis: Hypothesis, keep: Sequence[str] = ()
) -> str:
    """``restore`` for a hypothesis decoded from ``masked.text`` with its attention kept
    (``keep``: phrases no span is put inside of, as ``written_phrases`` gives them)."""
    output = hypothesis_text(model, hypothesis)
    links = hypothesis_alignment(hypothesis, masked.text, model.src_vocab, model.tgt_vocab)
    return restore(masked, output, links, keep)


def written_phrases(model: Decodable, phrases: Sequence[str]) -> list[str]:
    """``phrases`` as the model's target vocabulary writes them (normalised, as an output
    holding them reads): what ``holds_phrases`` looks for."""
    vocab = model.tgt_vocab
    return [vocab.decode(vocab.encode(phrase, eos=False)).strip() for phrase in phrases]


def translate_constrained(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
) -> list[list[str]]:
    """Translate with every placeholder kept, by constrained beam search where it is needed
    (the module docstring): each input's ``options.nbest`` outputs, best first, each carrying
    each of its source's spans exactly as often as the source (``keep_placeholders``: the
    outputs that miss a span searched again together).

    Args:
        model: the model, or an ``Ensemble``.
        texts: the sources.
        options: how to decode (default beam 5; not sampling).
        batch_size: sentences per search call.
        constraints: per input, phrases its outputs must hold as well, each at least as
            often as listed (none holding a placeholder: ``check_phrases``).

    Raises:
        TypeError: ``texts`` is not a sequence of strings, ``options`` not a
            ``SearchOptions``.
        ValueError: sampling options, a phrase that holds a placeholder; as
            ``luong.search.decode``.
    """
    check_strings("texts", texts)
    options = SearchOptions(beam=5) if options is None else options
    if options.sample:
        raise LuongError("sample: placeholders are kept by beam search, not sampling")
    if constraints is not None:
        check_phrases(constraints)
    lists = decode(model, texts, options, batch_size=batch_size, constraints=constraints)
    outputs = [[hypothesis_text(model, h) for h in hyps] for hyps in lists]
    return keep_placeholders(model, texts, outputs, options, constraints)


def spellable_spans(model: Decodable, source: str) -> list[str] | None:
    """The texts of ``source``'s spans (``find_placeholders``) as constraints for the
    model's output, or None when its target vocabulary cannot spell one of them (a character
    it has no piece or byte for) or they are more than the constrained search takes
    (``luong.search.constrained.MAX_CONSTRAINT_PIECES``): such spans are kept by masking
    instead.

    Raises:
        TypeError: ``source`` is not a str.
    """
    spans = [span.text for span in find_placeholders(source)]
    try:
        constraint_ids(model.tgt_vocab, [spans])
    except ValueError:
        return None
    return spans


def with_placeholders(
    model: Decodable,
    source: str,
    outputs: Sequence[str],
    options: SearchOptions,
    constraints: Sequence[str] = (),
    exact: bool | Sequence[bool] = False,
) -> list[str]:
    """``outputs`` of ``source`` (decoded with ``constraints``, phrases held at least as
    often as listed, or exactly where ``exact``: one flag, or one per phrase) if each keeps
    the source's spans (``keeps_placeholders``); otherwise the source decoded again by
    constrained beam search with ``constraints`` (held as ``exact`` says) and its spans (each
    exactly as often as the source holds it), and an output that still misses one masked
    (``kept_or_masked``: decoded with ``constraints`` and ``exact`` too). A span the target
    vocabulary cannot spell goes straight to masking. ``keep_placeholders`` for one source.

    Raises:
        TypeError: ``source`` or an output is not a str; as ``luong.search.decode``.
        ValueError: sampling ``options``; a phrase of ``constraints`` that holds a
            placeholder (``check_phrases``).
    """
    return keep_placeholders(model, [source], [outputs], options, [constraints], [exact])[0]


def keep_placeholders(
    model: Decodable,
    sources: Sequence[str],
    outputs: Sequence[Sequence[str]],
    options: SearchOptions,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: Sequence[bool | Sequence[bool]] | bool = False,
) -> list[list[str]]:
    """``with_placeholders`` for many sources at once, each with its ``outputs``, its
    ``constraints`` and its ``exact`` (one flag for all, or per source one flag or one per
    phrase): the sources with an output that misses a span are searched again together, in
    one batched constrained search, and those that still miss one are masked together, in
    one batched masked search (``translate_masked``). A sentence's outputs do not depend on
    its batch, so each source's are those ``with_placeholders`` gives it alone.

    Raises:
        TypeError: a source or an output is not a str; as ``luong.search.decode``.
        ValueError: sampling ``options``; lists that do not fit ``sources``; a phrase that
            holds a placeholder (``check_phrases``).
    """
    if options.sample:  # its second search widens the beam: no sampling
        raise LuongError("sample: placeholders are kept by beam search, not sampling")
    given = [[] for _ in sources] if constraints is None else [list(c) for c in constraints]
    exacts = [exact] * len(sources) if isinstance(exact, bool) else list(exact)
    if not len(outputs) == len(given) == len(exacts) == len(sources):
        raise LuongError(
            f"outputs, constraints and exact: expected one per source ({len(sources)}), got "
            f"{len(outputs)}, {len(given)} and {len(exacts)}"
        )
    check_phrases(given)
    written = [written_phrases(model, phrases) for phrases in given]
    held = [_flags(flags, phrases) for flags, phrases in zip(exacts, given, strict=True)]
    result = [list(texts) for texts in outputs]

    def missing(i: int) -> bool:
        return not all(_holds(sources[i], output, written[i]) for output in result[i])

    again: list[tuple[int, list[str]]] = []  # searched again, with the source's spans
    for i in [i for i in range(len(sources)) if missing(i)]:
        spans = spellable_spans(model, sources[i])
        if spans is not None and _fits(model, [*given[i], *spans]):
            again.append((i, spans))
    if again:
        wider = replace(options, beam=max(options.beam, CONSTRAINED_BEAM))
        phrases = [[*given[i], *spans] for i, spans in again]
        flags = [[*held[i], *[True] * len(spans)] for i, spans in again]
        texts = [sources[i] for i, _ in again]
        lists = decode(model, texts, wider, constraints=phrases, exact=flags)
        for (i, _), hyps in zip(again, lists, strict=True):
            result[i] = [hypothesis_text(model, h) for h in hyps]
    return _masked_where_missing(model, sources, result, options, given, held, written)


def _masked_where_missing(
    model: Decodable,
    sources: Sequence[str],
    outputs: list[list[str]],
    options: SearchOptions,
    given: Sequence[Sequence[str]],
    held: Sequence[list[bool]],
    written: Sequence[Sequence[str]],
) -> list[list[str]]:
    """``outputs``, each that misses its source's spans or its ``written`` phrases replaced
    by the masked translation of the same rank: the sources that need one masked together,
    in one search (``translate_masked``, with ``given`` held as ``held`` says)."""
    masking = [
        i
        for i, texts in enumerate(outputs)
        if not all(_holds(sources[i], output, written[i]) for output in texts)
    ]
    if not masking:
        return outputs
    masked = translate_masked(
        model,
        [sources[i] for i in masking],
        options,
        constraints=[given[i] for i in masking],
        exact=[held[i] for i in masking],
    )
    result = list(outputs)
    for i, alternatives in zip(masking, masked, strict=True):
        result[i] = [
            output
            if _holds(sources[i], output, written[i])
            else alternatives[min(k, len(alternatives) - 1)]
            for k, output in enumerate(outputs[i])
        ]
    return result


def _flags(exact: bool | Sequence[bool], constraints: Sequence[str]) -> list[bool]:
    """``exact`` as one flag per phrase of ``constraints``."""
    if isinstance(exact, bool):
        return [exact] * len(constraints)
    flags = list(exact)
    if len(flags) != len(constraints) or not all(isinstance(f, bool) for f in flags):
        raise LuongError(
            f"exact: expected a bool or {len(constraints)} bools, one per phrase, got {exact!r}"
        )
    return flags


def _holds(source: str, output: str, written: Sequence[str]) -> bool:
    """Whether ``output`` keeps ``source``'s spans and holds the phrases ``written``."""
    return keeps_placeholders(source, output) and holds_phrases(output, written)


def _fits(model: Decodable, phrases: Sequence[str]) -> bool:
    """Whether the constrained search takes ``phrases`` as one sentence's constraints
    (``luong.search.constrained.MAX_CONSTRAINT_PIECES``)."""
    try:
        constraint_ids(model.tgt_vocab, [phrases])
    except ValueError:
        return False
    return True


def kept_or_masked(
    model: Decodable,
    source: str,
    outputs: Sequence[str],
    options: SearchOptions,
    constraints: Sequence[str] = (),
    exact: bool | Sequence[bool] = False,
) -> list[str]:
    """``outputs`` of ``source``, each that does not keep the source's spans
    (``keeps_placeholders``) or hold ``constraints`` (``holds_phrases``) replaced by the
    masked translation of the same rank (``translate_masked``, decoded with
    ``constraints``, held as ``exact`` says, only when one is needed).

    Raises:
        TypeError: ``source`` or an output is not a str; as ``translate_masked``.
    """
    written = [written_phrases(model, constraints)]
    if all(_holds(source, output, written[0]) for output in outputs):
        return list(outputs)
    held = [_flags(exact, constraints)]
    return _masked_where_missing(
        model, [source], [list(outputs)], options, [constraints], held, written
    )[0]
