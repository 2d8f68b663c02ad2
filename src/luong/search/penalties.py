"""The scores of beam search, after Wu et al. (2016), "Google's Neural Machine Translation
System", eq. 14:

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y)   = ((5 + |Y|) / 6) ** alpha                       |Y| counts EOS when present
    cp(X; Y) = beta * sum_s log(min(sum_t a_ts, 1))          real source positions s only

``alpha`` and ``beta`` are bounded by ``luong.config.search`` (``MAX_ALPHA``, ``MAX_BETA``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["coverage_penalty", "hypothesis_score", "length_penalties", "length_penalty"]


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's length penalty lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016, eq. 14).

    Args:
        length: |Y|, the output's tokens (EOS included when present).
        alpha: 0 gives 1 (no normalisation); 1 divides log P by roughly the length.
    """
    return ((5.0 + length) / 6.0) ** alpha


def length_penalties(lengths: Tensor, alpha: float, dtype: torch.dtype) -> Tensor:
    """``length_penalty`` of each length ``[B]``, in the search's ``dtype``."""
    return ((5.0 + lengths.to(dtype)) / 6.0) ** alpha


def coverage_penalty(coverage: Tensor, mask: Tensor, beta: float) -> Tensor:
    """GNMT's coverage penalty ``beta * sum_s log(min(coverage_s, 1))`` over real positions.

    Padded positions (mask False) add exactly 0 (their coverage is 0 and would give -inf,
    and NaN after a multiplication by 0); a real position the attention never reached adds
    ``log(tiny)`` (about -87 in float32), a large but finite penalty.

    Args:
        coverage: ``[..., S]``, the attention summed over the output steps, sum_t a_ts.
        mask: bool ``[..., S]`` (broadcastable), True at real source positions.
        beta: the weight; 0 gives zeros.

    Returns:
        ``[...]``, each <= 0 for beta >= 0.
    """
    tiny = torch.finfo(coverage.dtype).tiny
    logs = coverage.clamp(min=tiny, max=1.0).log()
    return beta * torch.where(mask, logs, torch.zeros_like(logs)).sum(dim=-1)


def hypothesis_score(
    log_probs: Sequence[float], attention: Tensor, alpha: float, beta: float
) -> float:
    """``s(Y, X)`` of one whole output, recomputed in float64 from its own tokens'
    log-probabilities ``[T]`` and attention ``[T, S_real]``: how beam search's n-best lists
    are scored and sorted."""
    score = sum(log_probs) / length_penalty(len(log_probs), alpha)
    if beta and attention.numel():
        coverage = attention.double().sum(0)
        real = torch.ones_like(coverage, dtype=torch.bool)
        score += float(coverage_penalty(coverage, real, beta))
    return float(score)
