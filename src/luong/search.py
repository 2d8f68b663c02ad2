"""Decoding a trained model: greedy search, batched over sentences.

Shapes: ``B`` batch, ``S`` source length, ``T`` output length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from luong.vocab import Vocab

if TYPE_CHECKING:
    from luong.model import Seq2Seq

__all__ = ["Hypothesis", "greedy_search"]


@dataclass(frozen=True)
class Hypothesis:
    """One output of a search.

    tokens: output ids, ending with EOS when the search produced it (it stops at max_len
        otherwise); log_probs: the model's log-probability of each token; score: the search's
        score (the sum of log_probs for greedy search); attention ``[len(tokens), S_real]``:
        the weights each output token put on the real source positions.
    """

    tokens: list[int]
    score: float
    log_probs: list[float]
    attention: Tensor


def _check_search_input(src: Tensor, src_lengths: Tensor, max_len: int) -> None:
    from luong.model import _check_batch

    _check_batch(src, src_lengths)
    if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
        raise ValueError(f"max_len: expected an int >= 1, got {max_len!r}")


def greedy_search(
    model: Seq2Seq, src: Tensor, src_lengths: Tensor, max_len: int
) -> list[Hypothesis]:
    """Pick the most probable token at every step, for a whole batch at once.

    Args:
        model: the model (put it in eval mode for deterministic output).
        src: source ids ``[B, S]`` (EOS-terminated, padded).
        src_lengths: real lengths ``[B]``.
        max_len: the most tokens an output may have, EOS included.

    Returns:
        one ``Hypothesis`` per sentence, in order.

    Raises:
        ValueError: bad shapes or ``max_len < 1``.
    """
    _check_search_input(src, src_lengths, max_len)
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        batch = src.shape[0]
        tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(batch, dtype=torch.bool, device=src.device)
        steps_tokens, steps_log_probs, steps_weights = [], [], []
        for _ in range(max_len):
            logits, state, weights = model.decoder.step(tokens, state, memory)
            log_probs, tokens = torch.log_softmax(logits.float(), dim=-1).max(dim=-1)
            steps_tokens.append(tokens)
            steps_log_probs.append(log_probs)
            steps_weights.append(weights)
            done = done | (tokens == Vocab.eos_id)
            if bool(done.all()):
                break
        return _hypotheses(
            torch.stack(steps_tokens, 1),
            torch.stack(steps_log_probs, 1),
            torch.stack(steps_weights, 1),
            src_lengths,
        )


def _hypotheses(
    tokens: Tensor, log_probs: Tensor, weights: Tensor, src_lengths: Tensor
) -> list[Hypothesis]:
    """Cut each row after its first EOS: tokens, log_probs ``[B, T]``, weights ``[B, T, S]``."""
    tokens_list = tokens.tolist()
    log_probs_list = log_probs.tolist()
    weights = weights.cpu()
    source_lengths = src_lengths.tolist()
    result = []
    for b, (row, row_lp) in enumerate(zip(tokens_list, log_probs_list, strict=True)):
        length = row.index(Vocab.eos_id) + 1 if Vocab.eos_id in row else len(row)
        row_lp = row_lp[:length]
        source_len = source_lengths[b]
        result.append(
            Hypothesis(
                tokens=row[:length],
                score=float(sum(row_lp)),
                log_probs=row_lp,
                attention=weights[b, :length, :source_len].clone(),
            )
        )
    return result
