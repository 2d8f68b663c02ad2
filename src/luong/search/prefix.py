"""A target prefix every output starts with: its tokens teacher-forced through the decoder
before the search goes on (``SearchOptions.prefix``), scored and attended as any output token.

Shapes: ``B`` batch, ``S`` source length, ``P`` prefix length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from luong.ensemble import Decodable, decoder_step
from luong.search.hypothesis import AnyMemory, AnyState, next_token_log_probs
from luong.search_options import OptionError
from luong.vocab import Vocab

__all__ = ["Forced", "force_prefix", "prefix_ids"]


def prefix_ids(vocab: Vocab, prefix: str) -> list[int]:
    """The target ids of a text ``prefix`` (no BOS, no EOS).

    Raises:
        OptionError: a symbol outside the target vocabulary.
    """
    unknown = vocab.unknown(prefix)
    if unknown:
        raise OptionError(
            "prefix", f"expected symbols of the target vocabulary, got unknown {unknown[:5]}"
        )
    return vocab.encode(prefix, eos=False)


@dataclass(frozen=True)
class Forced:
    """A prefix forced through the decoder for every row: its ``tokens`` ``[P]``, the
    log-probability ``[B, P]`` and attention ``[B, P, S]`` the model gave each of them, and
    ``next`` ``[B]``, the search's first input (the prefix's last token; BOS when empty)."""

    tokens: Tensor
    log_probs: Tensor
    weights: Tensor
    next: Tensor

    @property
    def length(self) -> int:
        return self.tokens.shape[0]

    def select(self, rows: Tensor) -> Forced:
        """The prefix of rows ``rows`` ``[B']``."""
        return Forced(self.tokens, self.log_probs[rows], self.weights[rows], self.next[rows])


def force_prefix(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    ids: list[int],
    combine: str,
    dtype: torch.dtype,
) -> tuple[Forced, AnyState]:
    """Teacher-force the target ``ids`` (the same for every row) through the decoder, step
    by step: what each forced token got (``Forced``) and the decoder state after them. An
    empty prefix gives empty tensors in ``dtype``."""
    batch, source_len = memory.mask.shape
    device = memory.mask.device
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    log_probs, weights = [], []
    for token in ids:
        logits, state, step_weights = decoder_step(model, tokens, state, memory, combine)
        tokens = torch.full_like(tokens, token)
        log_probs.append(next_token_log_probs(logits)[:, token])
        weights.append(step_weights)
    forced = torch.tensor(ids, dtype=torch.long, device=device)
    if not log_probs:
        empty = torch.zeros(batch, 0, source_len, dtype=dtype, device=device)
        return Forced(forced, empty[:, :, 0], empty, tokens), state
    return Forced(forced, torch.stack(log_probs, 1), torch.stack(weights, 1), tokens), state
