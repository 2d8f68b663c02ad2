"""A target prefix every output starts with: its tokens teacher-forced through the decoder
before the search goes on (``SearchOptions.prefix``), scored and attended as any output token.

Shapes: ``B`` batch, ``S`` source length, ``P`` prefix length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from luong.common.errors import LuongTypeError
from luong.config.search import OptionError, SearchOptions
from luong.data.vocab import Vocab
from luong.model.ensemble import Columns, Decodable, decoder_step
from luong.model.seq2seq import Seq2Seq
from luong.search.hypothesis import (
    AnyMemory,
    AnyState,
    MaxLen,
    next_token_log_probs,
    output_limits,
)

__all__ = ["Forced", "force_prefix", "prefix_ids", "search_inputs"]


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


def search_inputs(
    model: Seq2Seq,
    src: Tensor,
    src_lengths: Tensor,
    options: SearchOptions,
    max_len: MaxLen | None,
    sample: bool,
) -> tuple[Tensor, list[int]]:
    """What a search over tensors (``beam_search``, ``sample_search``) checks first: the
    options (their ``sample`` as the search needs it), the batch, the output limit per
    sentence ``[B]`` (``max_len``, or ``options.max_len``, or each sentence's default) and
    the prefix's target ids.

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: bad shapes, a limit below 1, a prefix outside the target vocabulary, or
            ``options.sample`` other than ``sample``.
    """
    if not isinstance(options, SearchOptions):
        raise LuongTypeError(f"options: expected SearchOptions, got {type(options).__name__}")
    if options.sample != sample:
        search = "sample_search" if options.sample else "beam_search"
        raise OptionError("sample", f"expected {str(sample).lower()}; use {search}")
    limit = options.max_len if max_len is None else max_len
    limits = output_limits(src, src_lengths, limit, default=True)
    return limits, prefix_ids(model.tgt_vocab, options.prefix)


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
    columns: Columns | None = None,
) -> tuple[Forced, AnyState]:
    """Teacher-force the target ``ids`` (the same for every row) through the decoder, step
    by step: what each forced token got (``Forced``) and the decoder state after them. An
    empty prefix gives empty tensors in ``dtype``. With ``columns`` (a shortlist), ``ids``
    are columns (``decoder_step``)."""
    batch, source_len = memory.mask.shape
    device = memory.mask.device
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    log_probs, weights = [], []
    for token in ids:
        logits, state, step_weights = decoder_step(model, tokens, state, memory, combine, columns)
        tokens = torch.full_like(tokens, token)
        log_probs.append(next_token_log_probs(logits)[:, token])
        weights.append(step_weights)
    forced = torch.tensor(ids, dtype=torch.long, device=device)
    if not log_probs:
        empty = torch.zeros(batch, 0, source_len, dtype=dtype, device=device)
        return Forced(forced, empty[:, :, 0], empty, tokens), state
    return Forced(forced, torch.stack(log_probs, 1), torch.stack(weights, 1), tokens), state
