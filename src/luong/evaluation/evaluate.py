"""Evaluation: decode a set of pairs and score the outputs, one dispatch for every caller.

The command line (``luong eval``), the run pipeline (the test split), the trainer (dev) and
the zoo all call ``evaluate``. What is counted depends on the data:

- pairs (``references=False``): each pair once; ``exact_match`` and ``char_accuracy``
  (``luong.evaluation.metrics``).
- references (``references=True``): each unique source once with all its targets as
  references (G2P's several pronunciations, your own files): ``exact_match`` against any
  reference, ``wer`` and ``per`` (token errors against the closest reference: phonemes or
  words, characters for a character vocabulary), and counts of unknown symbols.
- with ``bleu=True`` (translation), either kind adds corpus ``bleu`` and ``chrf`` and
  sacrebleu's signatures of both, on the detokenized outputs against the raw references.

``dev_loss`` is the other dev figure a run can select on: the mean cross-entropy per target
token of the teacher-forced pairs.

Like is compared with like: outputs and references both go through the target vocabulary's
``normalize`` (NFC for the target vocabularies a run builds, ``luong.data.vocab``) before they are
scored, so a reference written decomposed (``e`` + U+0301, as macOS writes it) matches the
composed ``é`` the model learned to write; and a reference's line breaks and tabs become
spaces, as in every output (``comparable``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError
from luong.common.progress import WorkProgress
from luong.config.search import SearchOptions
from luong.data.batching import ParallelData
from luong.data.vocab import TOKENS, Vocab, one_line
from luong.evaluation.metrics import bleu_chrf, char_accuracy, exact_match, reference_scores
from luong.model.ensemble import Decodable
from luong.model.seq2seq import Seq2Seq, evaluating
from luong.translation.translator import Translator

__all__ = [
    "BLEU_SCORES",
    "PAIR_SCORES",
    "REFERENCE_SCORES",
    "dev_loss",
    "evaluate",
    "evaluate_pairs",
    "evaluate_references",
    "evaluate_sources",
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

BLEU_SCORES: tuple[str, ...] = ("bleu", "chrf", "bleu_signature", "chrf_signature")
"""The figures ``bleu=True`` adds."""


def evaluate(
    model: Decodable | Translator,
    pairs: Sequence[Pair],
    options: SearchOptions | None = None,
    *,
    references: bool,
    bleu: bool = False,
    batch_size: int = 1000,
    progress: WorkProgress | None = None,
) -> dict[str, Any]:
    """Decode the sources of ``pairs`` as ``options`` say (default greedy search; the best
    output of each) and score them: ``evaluate_references`` when ``references``, else
    ``evaluate_pairs``. Both report ``exact_match`` and ``pairs``; ``bleu`` adds BLEU and chrF.
    ``progress``: advanced by each source decoded (``evaluate_sources`` counts them).

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: no pairs; a prefix outside the target vocabulary.
    """
    score = evaluate_references if references else evaluate_pairs
    return score(model, pairs, options, bleu=bleu, batch_size=batch_size, progress=progress)


def evaluate_pairs(
    model: Decodable | Translator,
    pairs: Sequence[Pair],
    options: SearchOptions | None = None,
    *,
    bleu: bool = False,
    batch_size: int = 1000,
    progress: WorkProgress | None = None,
) -> dict[str, Any]:
    """Exact match and character accuracy over ``pairs``, each pair counted once (and, with
    ``bleu``, corpus BLEU and chrF with one reference per pair).

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: no pairs; a prefix outside the target vocabulary.
    """
    if not pairs:
        raise LuongError("pairs: expected at least one (source, target) pair, got none")
    sources = [s for s, _ in pairs]
    hyps = _translator(model).translate(sources, options, batch_size=batch_size, progress=progress)
    hyps = [model.tgt_vocab.normalize(hyp) for hyp in hyps]
    refs = [comparable(model.tgt_vocab, t) for _, t in pairs]
    scores: dict[str, Any] = {
        "exact_match": exact_match(hyps, refs),
        "char_accuracy": char_accuracy(hyps, refs),
        "pairs": len(pairs),
    }
    if bleu:
        scores.update(bleu_chrf(hyps, [[ref] for ref in refs]))
    return scores


def evaluate_sources(pairs: Sequence[Pair], *, references: bool) -> int:
    """The sources ``evaluate`` decodes: each pair's, or each unique source once."""
    return len(group_references(pairs)) if references else len(pairs)


def _translator(model: Decodable | Translator) -> Translator:
    """A model decodes through the ``Translator`` path as a loaded folder does."""
    return model if isinstance(model, Translator) else Translator(model)


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
    model: Decodable | Translator,
    pairs: Sequence[Pair],
    options: SearchOptions | None = None,
    *,
    bleu: bool = False,
    batch_size: int = 1000,
    progress: WorkProgress | None = None,
) -> dict[str, Any]:
    """Decode each unique source of ``pairs`` once and score it against all its targets.

    Args:
        model: a trained model, an ensemble, or a ``Translator`` (its precision is used).
        pairs: (source, target) pairs; a source may repeat with other targets.
        options: how to decode (``luong.translation.translator.translate``; default greedy search).
        bleu: add corpus BLEU and chrF (each source once, its targets as its references).
        batch_size: sources per decoding batch.
        progress: advanced by each unique source as it is decoded.

    Returns:
        ``reference_scores``'s dict (tokens as the model's target vocabulary cuts them:
        characters or whitespace-separated tokens; words for a subword vocabulary), plus
        ``pairs``, ``unknown_tokens`` (source tokens outside the source vocabulary, mapped to
        unk), ``sources_with_unknown`` and ``unknown_target_tokens`` (reference tokens the
        model can never write); with ``bleu``, ``BLEU_SCORES``.

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: no pairs; a prefix outside the target vocabulary.
    """
    if not pairs:
        raise LuongError("pairs: expected at least one (source, target) pair, got none")
    grouped = group_references(pairs)
    sources = [source for source, _ in grouped]
    refs = [targets for _, targets in grouped]
    hyps = _translator(model).translate(sources, options, batch_size=batch_size, progress=progress)
    hyps = [model.tgt_vocab.normalize(hyp) for hyp in hyps]
    refs = [[comparable(model.tgt_vocab, target) for target in targets] for _, targets in grouped]
    tokens = model.tgt_vocab.tokens if model.tgt_vocab.tokens in TOKENS else "space"
    scores: dict[str, Any] = dict(reference_scores(hyps, refs, tokens))  # type: ignore[arg-type]
    unknown = [len(model.src_vocab.unknown(source)) for source in sources]
    scores.update(
        pairs=len(pairs),
        unknown_tokens=sum(unknown),
        sources_with_unknown=sum(1 for n in unknown if n),
        unknown_target_tokens=sum(
            len(model.tgt_vocab.unknown(target)) for targets in refs for target in targets
        ),
    )
    if bleu:
        scores.update(bleu_chrf(hyps, refs))
    return scores


def comparable(vocab: Vocab, reference: str) -> str:
    """A reference as the outputs it is compared with are written: on one line
    (``luong.data.vocab.one_line``: a line break or tab a model could never write is a space, as in
    every output) and normalised as the target vocabulary normalises."""
    return vocab.normalize(one_line(reference))


def dev_loss(model: Seq2Seq, pairs: Sequence[Pair], batch_size: int = 500) -> float:
    """The mean cross-entropy per target token (EOS included) of the teacher-forced
    ``pairs``, summed in float64 over batches of ``batch_size``; exp of it is the model's
    perplexity on them.

    Raises:
        ValueError: no pairs, or ``batch_size < 1``.
    """
    if not pairs:
        raise LuongError("pairs: expected at least one (source, target) pair, got none")
    check_positive_int("batch_size", batch_size)
    data = ParallelData(pairs, model.src_vocab, model.tgt_vocab)
    total = torch.zeros((), dtype=torch.float64)
    tokens = 0
    with evaluating(model), torch.inference_mode():
        for start in range(0, len(data), batch_size):
            batch = data.batch(range(start, min(start + batch_size, len(data))))
            batch = batch.to(model.device)
            logits = model(batch.src, batch.src_lengths, batch.tgt[:, :-1])  # [B, T, V]
            gold = batch.tgt[:, 1:]
            loss = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),
                gold.reshape(-1),
                ignore_index=Vocab.pad_id,
                reduction="sum",
            )
            total += loss.double().cpu()
            tokens += int((gold != Vocab.pad_id).sum())
    return float(total) / tokens


def prefixed(scores: dict[str, Any], prefix: str, names: Iterable[str]) -> dict[str, Any]:
    """``scores[name]`` under ``prefix + name`` for each name (None where it is missing):
    ``prefixed(scores, "test_", PAIR_SCORES)`` -> ``{"test_exact_match": ..., ...}``."""
    return {prefix + name: scores.get(name) for name in names}
