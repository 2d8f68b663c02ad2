"""Greedy search: the most probable token at every step, a whole batch at once.

Shapes: ``B`` batch, ``S`` source length, ``T`` output length.
"""

from __future__ import annotations

import torch
from torch import Tensor

from luong.config.search import COMBINE
from luong.data.vocab import Vocab
from luong.model.ensemble import Columns, Decodable, decoder_step
from luong.model.seq2seq import Seq2Seq
from luong.search.hypothesis import (
    AnyMemory,
    AnyState,
    Hypothesis,
    MaxLen,
    next_token_log_probs,
    output_limits,
    row_hypotheses,
)

__all__ = ["greedy_search", "greedy_steps"]


def greedy_search(
    model: Seq2Seq, src: Tensor, src_lengths: Tensor, max_len: MaxLen
) -> list[Hypothesis]:
    """Pick the most probable token at every step, for a whole batch at once.

    Args:
        model: the model (put it in eval mode for deterministic output).
        src: source ids ``[B, S]`` (EOS-terminated, padded).
        src_lengths: real lengths ``[B]``.
        max_len: the most tokens an output may have, EOS included: an int, or a limit per
            sentence ``[B]`` (a sentence's output then never depends on its batch).

    Returns:
        one ``Hypothesis`` per sentence, in order.

    Raises:
        ValueError: bad shapes or ``max_len < 1``.
    """
    limits = output_limits(src, src_lengths, max_len)
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        steps = greedy_steps(model, memory, state, limits)
        return row_hypotheses(*steps, src_lengths, limits)


def greedy_steps(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    limits: Tensor,
    combine: str = COMBINE[0],
    columns: Columns | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The greedy loop from an encoded batch (``model.encode``): tokens, log_probs ``[B, T]``
    and weights ``[B, T, S]``, T <= max(limits). It stops once every row has produced EOS or
    reached its limit ``[B]``. A row that is done leaves the batch once half of the rows
    still decoded are done (sentences differ in length, and one long output would otherwise
    keep the whole batch stepping); after it is done its tokens are PAD, its log_probs and
    weights 0 (``row_hypotheses`` cuts them). ``combine``: an ensemble's (``COMBINE``).
    ``columns``: a shortlist's (``decoder_step``; the tokens are then columns). No
    validation: the caller checked the batch."""
    batch = memory.mask.shape[0]
    device = memory.mask.device
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device)  # the batch rows still decoded
    done = torch.zeros(batch, dtype=torch.bool, device=device)  # of those rows
    steps: list[tuple[Tensor, Tensor, Tensor, Tensor]] = []
    for t in range(int(limits.max())):
        logits, state, weights = decoder_step(model, tokens, state, memory, combine, columns)
        log_probs, tokens = next_token_log_probs(logits).max(dim=-1)
        steps.append((rows, tokens, log_probs, weights))
        done = done | (tokens == Vocab.eos_id) | (limits[rows] <= t + 1)
        remaining = int((~done).sum())
        if remaining == 0:
            break
        if 2 * remaining <= rows.shape[0]:
            keep = (~done).nonzero().squeeze(1)
            rows, tokens, done = rows[keep], tokens[keep], done[keep]
            memory, state = memory.select(keep), state.reorder(keep)
    first_log_probs, first_weights = steps[0][2], steps[0][3]
    out_tokens = torch.full((batch, len(steps)), Vocab.pad_id, dtype=torch.long, device=device)
    out_log_probs = first_log_probs.new_zeros(batch, len(steps))
    out_weights = first_weights.new_zeros(batch, len(steps), first_weights.shape[1])
    for t, (at, step_tokens, step_log_probs, step_weights) in enumerate(steps):
        out_tokens[at, t] = step_tokens
        out_log_probs[at, t] = step_log_probs
        out_weights[at, t] = step_weights
    return out_tokens, out_log_probs, out_weights
