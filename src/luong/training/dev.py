"""The dev evaluation during training: the figure a run selects its weights on
(``resolve_select``), the scores of the dev pairs (``score_dev``, ``dev_figures``) and the
best so far (``note_best``), from which early stopping counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from luong.config.train import TrainConfig
from luong.data.subword import SubwordVocab
from luong.data.vocab import Vocab
from luong.evaluation.evaluate import dev_loss, evaluate
from luong.model.seq2seq import Seq2Seq
from luong.training.records import Progress

__all__ = ["dev_figures", "note_best", "resolve_select", "score_dev", "scores_bleu", "selected"]

Pair = tuple[str, str]


def resolve_select(select: str, tgt_vocab: Vocab) -> str:
    """The dev figure a run selects on: ``select``, or for ``"auto"`` BLEU with a subword
    target vocabulary (translation) and exact match otherwise."""
    if select != "auto":
        return select
    return "bleu" if isinstance(tgt_vocab, SubwordVocab) else "exact"


def scores_bleu(select: str, tgt_vocab: Vocab) -> bool:
    """Whether every dev evaluation scores BLEU and chrF: translation (a subword target
    vocabulary), or a run that selects on them."""
    return select in ("bleu", "chrf") or isinstance(tgt_vocab, SubwordVocab)


def score_dev(
    model: Seq2Seq, dev_pairs: Sequence[Pair], config: TrainConfig, select: str, bleu: bool
) -> tuple[dict[str, Any], float | None]:
    """The scores of ``dev_pairs`` decoded with ``config.dev_search`` (BLEU and chrF with
    ``bleu``), and their loss where the run selects on it (else None)."""
    scores = evaluate(
        model,
        dev_pairs,
        config.dev_search,
        references=False,
        bleu=bleu,
        batch_size=config.eval_batch_size,
    )
    loss = dev_loss(model, dev_pairs, config.eval_batch_size) if select == "loss" else None
    return scores, loss


def dev_figures(scores: dict[str, Any], loss: float | None, bleu: bool) -> dict[str, Any]:
    """``score_dev``'s figures as a point of the dev curve holds them."""
    figures = {
        "dev_exact_match": scores["exact_match"],
        "dev_char_accuracy": scores["char_accuracy"],
    }
    if bleu:
        figures.update(dev_bleu=round(scores["bleu"], 4), dev_chrf=round(scores["chrf"], 4))
    if loss is not None:
        figures["dev_loss"] = round(loss, 6)
    return figures


def selected(point: dict[str, Any], select: str) -> float:
    """The figure of a dev curve's point that the run selects on, higher better (the loss
    negated)."""
    return {
        "exact": point["dev_exact_match"],
        "bleu": point.get("dev_bleu"),
        "chrf": point.get("dev_chrf"),
        "loss": -point.get("dev_loss", 0.0),
    }[select]


def note_best(p: Progress, value: float) -> bool:
    """Count an evaluation whose selected figure is ``value`` into ``p`` (the best, its
    step, the evaluations since); whether its weights are the best so far.

    A tie keeps the later weights: a small dev set saturates (the dates dev set sits at 1.0
    from the second epoch on) and the later weights have trained longer. Only a strict
    improvement resets the early-stopping count."""
    p.stale = 0 if p.best is None or value > p.best else p.stale + 1
    if p.best is None or value >= p.best:
        p.best, p.best_step = value, p.step
        return True
    return False
