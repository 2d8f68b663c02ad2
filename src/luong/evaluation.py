"""Evaluation: decode a set of pairs and score the outputs, one dispatch for every caller.

The command line (``luong eval``), the run pipeline (the test split), the trainer (dev) and
the zoo all call ``evaluate``. What is counted depends on the data:

- pairs (``references=False``): each pair once; ``exact_match`` and ``char_accuracy``
  (``luong.metrics``).
- references (``references=True``): each unique source once with all its targets as
  references (G2P's several pronunciations, your own files): ``exact_match`` against any
  reference, ``wer`` and ``per`` (token errors against the closest reference), and counts of
  unknown symbols.

Like is compared with like: outputs and references both go through the target vocabulary's
``normalize`` (NFC for the target vocabularies a run builds, ``luong.vocab``) before they are
scored, so a reference written decomposed (``e`` + U+0301, as macOS writes it) matches the
composed ``é`` the model learned to write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from luong.metrics import char_accuracy, exact_match, reference_scores
from luong.model import Seq2Seq
from luong.translator import translate

__all__ = [
    "PAIR_SCORES",
    "REFERENCE_SCORES",
    "evaluate",
    "evaluate_pairs",
    "evaluate_references",
    "group_references",
    "prefixed",
]

Pair = tuple[str, str]

PAIR_SCORES: tuple[str, ...] = ("exact_match", "char_accuracy")
"""The figures ``evaluate_pairs`` reports."""

REFERENCE_SCORES: tuple[str, ...] = (
    "exact_match",
    "wer",
    "per",
    "sources",
    "unknown_tokens",
    "sources_with_unknown",
    "unknown_target_tokens",
)
"""The figures ``evaluate_references`` reports (besides its counts of errors and tokens)."""


def evaluate(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    *,
    references: bool,
    batch_size: int = 1000,
    max_len: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> dict[str, Any]:
    """Decode the sources of ``pairs`` (greedy search, or beam search with ``beam_size`` > 1
    and its penalties) and score them: ``evaluate_references`` when ``references``, else
    ``evaluate_pairs``. Both report ``exact_match`` and ``pairs``.

    Raises:
        ValueError: no pairs; bad search options.
    """
    score = evaluate_references if references else evaluate_pairs
    return score(
        model,
        pairs,
        batch_size=batch_size,
        max_len=max_len,
        beam_size=beam_size,
        alpha=alpha,
        beta=beta,
    )


def evaluate_pairs(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    *,
    batch_size: int = 1000,
    max_len: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> dict[str, Any]:
    """Exact match and character accuracy over ``pairs``, each pair counted once.

    Raises:
        ValueError: no pairs; bad search options.
    """
    if not pairs:
        raise ValueError("pairs: expected at least one (source, target) pair, got none")
    hyps = translate(
        model,
        [s for s, _ in pairs],
        batch_size=batch_size,
        max_len=max_len,
        beam_size=beam_size,
        alpha=alpha,
        beta=beta,
    )
    hyps = [model.tgt_vocab.normalize(hyp) for hyp in hyps]
    refs = [model.tgt_vocab.normalize(t) for _, t in pairs]
    return {
        "exact_match": exact_match(hyps, refs),
        "char_accuracy": char_accuracy(hyps, refs),
        "pairs": len(pairs),
    }


def group_references(pairs: Iterable[Pair]) -> list[tuple[str, list[str]]]:
    """Each unique source once, in order of first appearance, with its targets (repeats of
    the same target kept once, in order).

    >>> group_references([("read", "R EH D"), ("cat", "K AE T"), ("read", "R IY D")])
    [('read', ['R EH D', 'R IY D']), ('cat', ['K AE T'])]
    """
    grouped: dict[str, list[str]] = {}
    for source, target in pairs:
        targets = grouped.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return list(grouped.items())


def evaluate_references(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    *,
    batch_size: int = 1000,
    max_len: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> dict[str, Any]:
    """Decode each unique source of ``pairs`` once and score it against all its targets.

    Args:
        model: a trained model.
        pairs: (source, target) pairs; a source may repeat with other targets.
        batch_size: sources per decoding batch.
        max_len: the longest output (None: the model's default).
        beam_size: 1 for greedy search, more for beam search (``luong.translator.translate``).
        alpha: beam search's length penalty weight.
        beta: beam search's coverage penalty weight.

    Returns:
        ``reference_scores``'s dict (tokens as the model's target vocabulary cuts them), plus
        ``pairs``, ``unknown_tokens`` (source tokens outside the source vocabulary, mapped to
        unk), ``sources_with_unknown`` and ``unknown_target_tokens`` (reference tokens the
        model can never write).

    Raises:
        ValueError: no pairs; bad search options.
    """
    if not pairs:
        raise ValueError("pairs: expected at least one (source, target) pair, got none")
    grouped = group_references(pairs)
    sources = [source for source, _ in grouped]
    hyps = translate(
        model,
        sources,
        batch_size=batch_size,
        max_len=max_len,
        beam_size=beam_size,
        alpha=alpha,
        beta=beta,
    )
    normalize = model.tgt_vocab.normalize
    hyps = [normalize(hyp) for hyp in hyps]
    refs = [[normalize(target) for target in targets] for _, targets in grouped]
    scores: dict[str, Any] = dict(reference_scores(hyps, refs, model.tgt_vocab.tokens))
    unknown = [len(model.src_vocab.unknown(source)) for source in sources]
    scores.update(
        pairs=len(pairs),
        unknown_tokens=sum(unknown),
        sources_with_unknown=sum(1 for n in unknown if n),
        unknown_target_tokens=sum(
            len(model.tgt_vocab.unknown(target)) for _, targets in grouped for target in targets
        ),
    )
    return scores


def prefixed(scores: dict[str, Any], prefix: str, names: Iterable[str]) -> dict[str, Any]:
    """``scores[name]`` under ``prefix + name`` for each name (None where it is missing):
    ``prefixed(scores, "test_", PAIR_SCORES)`` -> ``{"test_exact_match": ..., ...}``."""
    return {prefix + name: scores.get(name) for name in names}
