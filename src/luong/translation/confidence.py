"""How sure a model is of one of its outputs: ``confidence``, a number in [0, 1].

The confidence of an output ``y_1 .. y_T`` (its EOS included, ``T = len(tokens)``) is the
geometric mean of the probabilities the model gave its tokens as it wrote them:

    confidence = exp((1 / T) * sum_t log p(y_t | y_<t, x))

the length-normalised log-probability of the unsupervised quality estimation of Fomicheva
et al. (2020, "Unsupervised Quality Estimation for Neural Machine Translation", TACL:
Seq-Prob), put on a probability's scale: 1 when the model gave every token probability 1,
near 0 when it guessed. It is what the model thinks, not a chance of being right (a model
trained with label smoothing, as the translation preset's 0.1, gives lower values than one
without). docs/results.md ("A confidence per output") maps values to the sentence chrF they
meant on gettext-en-de's dev (the calibration) and measures how well it ranks the outputs of
devtest (Spearman's rho with sentence chrF: 0.62), against the other measure the issue
named, the best output's share of the n-best list's probability mass (0.22), which also
needs an n-best list from every search, so only this one is kept.

``luong translate --format jsonl`` and the server's ``/api/translate`` write it in each
hypothesis' record (``luong.translation.records.hypothesis_record``); ``luong po`` writes it in a
translator comment of each entry it fills and leaves an entry below ``--min-confidence``
to a person (``luong.catalogs.fill``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from luong.common.errors import LuongError, LuongTypeError
from luong.search.hypothesis import Hypothesis

__all__ = ["confidence", "joint_confidence"]


def confidence(hypothesis: Hypothesis) -> float:
    """The geometric mean of the probabilities of ``hypothesis``' tokens, EOS included:
    ``exp(mean(hypothesis.log_probs))`` (the module's docstring), in [0, 1], computed in
    float64 (``math.fsum``); 0.0 when a token had probability 0, NaN when a log-probability
    is NaN (a record writes null for it).

    For an output a second, constrained search wrote (placeholders kept:
    ``Translation.searched_again``), the hypothesis is the first search's, as its score is.

    Raises:
        TypeError: ``hypothesis`` is not a ``Hypothesis``.
        ValueError: it has no tokens (every search writes at least one).
    """
    if not isinstance(hypothesis, Hypothesis):
        raise LuongTypeError(f"hypothesis: expected a Hypothesis, got {type(hypothesis).__name__}")
    log_probs = hypothesis.log_probs
    if not log_probs:
        raise LuongError("hypothesis: expected at least one token, got none")
    if any(math.isnan(p) for p in log_probs):
        return math.nan
    mean = math.fsum(log_probs) / len(log_probs)
    # A log-probability a hair above 0 (rounding in log_softmax) must not give more than 1.
    return min(1.0, math.exp(mean))


def joint_confidence(hypotheses: Sequence[Hypothesis]) -> float | None:
    """The confidence of an output made of several (a text's lines, each translated apart:
    LibreTranslate's answers): the geometric mean of the probabilities of all their tokens,
    so a long line weighs as its tokens do; one hypothesis' is its ``confidence``. None for
    none (an empty text), NaN when a log-probability is NaN.

    Raises:
        TypeError: not a sequence of ``Hypothesis``.
        ValueError: a hypothesis without tokens.
    """
    if isinstance(hypotheses, Hypothesis) or not isinstance(hypotheses, Sequence):
        raise LuongTypeError(
            f"hypotheses: expected a sequence of Hypothesis, got {type(hypotheses).__name__}"
        )
    log_probs: list[float] = []
    for hypothesis in hypotheses:
        if not isinstance(hypothesis, Hypothesis):
            raise LuongTypeError(
                f"hypotheses: expected Hypothesis items, got {type(hypothesis).__name__}"
            )
        if not hypothesis.log_probs:
            raise LuongError("hypothesis: expected at least one token, got none")
        log_probs.extend(hypothesis.log_probs)
    if not log_probs:
        return None
    if any(math.isnan(p) for p in log_probs):
        return math.nan
    return min(1.0, math.exp(math.fsum(log_probs) / len(log_probs)))
