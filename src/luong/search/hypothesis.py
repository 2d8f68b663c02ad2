"""What every search shares: the ``Hypothesis`` it returns, the output limits, the next-token
log-probabilities, and the cutting of dense rows into hypotheses.

Shapes: ``B`` batch, ``S`` source length, ``T`` output length, ``V`` target vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError
from luong.data.batching import check_batch
from luong.data.vocab import Vocab
from luong.model.decoder import DecoderState, Memory
from luong.model.ensemble import EnsembleMemory, EnsembleState

__all__ = [
    "NAN_SCORES",
    "AnyMemory",
    "AnyState",
    "Hypothesis",
    "MaxLen",
    "default_max_len",
    "next_token_log_probs",
    "output_limits",
    "row_hypotheses",
    "without_attention",
]


@dataclass(frozen=True)
class Hypothesis:
    """One output of a search.

    tokens: output ids, ending with EOS when the search produced it (it stops at max_len
        otherwise); log_probs: the model's log-probability of each token; score: the search's
        score (the sum of log_probs for greedy search and sampling; ``s(Y, X)`` for beam
        search, ``luong.search.beam``); attention ``[len(tokens), S_real]``: the weights each
        output token put on the real source positions (the source's EOS included);
        ``[len(tokens), 0]`` when the caller did not keep it
        (``decode_batches(..., attention=False)``).
    """

    tokens: list[int]
    score: float
    log_probs: list[float]
    attention: Tensor


MaxLen = int | Tensor  # one limit for every sentence, or a limit per sentence [B]
AnyMemory = Memory | EnsembleMemory  # what search reads: a model's or an ensemble's
AnyState = DecoderState | EnsembleState

# Finite weights can still overflow to NaN scores; beam search then stops with this.
NAN_SCORES = (
    "the model's scores are NaN at output step {step}: its weights overflow (finite values "
    "in model.safetensors too large to compute with)"
)


def default_max_len(src_len: Tensor) -> Tensor:
    """How long each output may grow when the caller does not say: twice its source's length
    (EOS included), plus 10. src_len ``[B]`` -> ``[B]``."""
    return 2 * src_len + 10


def output_limits(
    src: Tensor, src_lengths: Tensor, max_len: MaxLen | None, default: bool = False
) -> Tensor:
    """Check a source batch and its output limit; the limit per sentence, long ``[B]``
    (with ``default``, None gives each sentence's ``default_max_len``).

    Raises:
        ValueError: bad shapes, or a limit below 1 (or None without ``default``).
    """
    check_batch(src, src_lengths)
    if max_len is None and default:
        return default_max_len(src_lengths.to(device=src.device, dtype=torch.long))
    if isinstance(max_len, Tensor):
        if (
            max_len.dtype.is_floating_point
            or max_len.dtype == torch.bool
            or tuple(max_len.shape) != (src.shape[0],)
            or (max_len.numel() and int(max_len.min()) < 1)
        ):
            raise LuongError(
                f"max_len: expected an int >= 1 or integers >= 1 of shape [B] = "
                f"({src.shape[0]},), got {max_len.dtype} {tuple(max_len.shape)}"
            )
        return max_len.to(device=src.device, dtype=torch.long)
    limit = check_positive_int("max_len", max_len)
    return torch.full((src.shape[0],), limit, dtype=torch.long, device=src.device)


def next_token_log_probs(logits: Tensor) -> Tensor:
    """The model's log-probabilities ``[R, V]`` with PAD and BOS ruled out (-inf): they are
    never outputs. The other tokens keep the model's own values (no renormalisation). The
    search runs in float32, or in float64 for a float64 model (bf16 logits are widened)."""
    wide = logits.to(torch.promote_types(logits.dtype, torch.float32))
    log_probs = torch.log_softmax(wide, dim=-1)
    log_probs[:, Vocab.pad_id] = float("-inf")
    log_probs[:, Vocab.bos_id] = float("-inf")
    return log_probs


def row_hypotheses(
    tokens: Tensor, log_probs: Tensor, weights: Tensor, src_lengths: Tensor, limits: Tensor
) -> list[Hypothesis]:
    """One hypothesis per row, cut after its first EOS or at its limit: tokens, log_probs
    ``[B, T]``, weights ``[B, T, S]``, limits ``[B]``; the score is the sum of log_probs."""
    tokens_list = tokens.tolist()
    log_probs_list = log_probs.tolist()
    weights = weights.cpu()
    source_lengths, limits_list = src_lengths.tolist(), limits.tolist()
    result = []
    for b, (row, row_lp) in enumerate(zip(tokens_list, log_probs_list, strict=True)):
        row = row[: limits_list[b]]
        length = row.index(Vocab.eos_id) + 1 if Vocab.eos_id in row else len(row)
        row_lp = row_lp[:length]
        result.append(
            Hypothesis(
                tokens=row[:length],
                score=float(sum(row_lp)),
                log_probs=row_lp,
                attention=weights[b, :length, : source_lengths[b]].clone(),
            )
        )
    return result


def without_attention(hypothesis: Hypothesis) -> Hypothesis:
    """``hypothesis`` with an empty attention ``[len(tokens), 0]``."""
    return replace(hypothesis, attention=torch.empty(len(hypothesis.tokens), 0))
