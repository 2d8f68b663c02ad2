"""Sampling: outputs drawn from the model's distribution instead of searched for
(``SearchOptions.sample``), ``nbest`` independent draws per sentence, each token from
softmax(log p / temperature) over the ``top_k`` most probable tokens, after the prefix.

Shapes: ``B`` batch, ``S`` source length, ``T`` output length, ``V`` target vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor

from luong.config.search import SearchOptions
from luong.data.vocab import Vocab
from luong.model.ensemble import Decodable, decoder_step
from luong.model.seq2seq import Seq2Seq
from luong.search.hypothesis import (
    AnyMemory,
    AnyState,
    Hypothesis,
    MaxLen,
    next_token_log_probs,
    row_hypotheses,
)
from luong.search.prefix import Forced, force_prefix, search_inputs
from luong.search.rules import StepRules

__all__ = ["draw_samples", "sample_search", "sampling_generator"]


def sampling_generator(options: SearchOptions, device: torch.device) -> torch.Generator:
    """The generator of the draws: seeded with ``options.seed``, or freshly."""
    generator = torch.Generator(device=device)
    if options.seed is None:
        generator.seed()
    else:
        generator.manual_seed(options.seed)
    return generator


def sample_search(
    model: Seq2Seq,
    src: Tensor,
    src_lengths: Tensor,
    options: SearchOptions,
    max_len: MaxLen | None = None,
    *,
    generator: torch.Generator | None = None,
) -> list[list[Hypothesis]]:
    """Draw ``options.nbest`` outputs per sentence (``draw_samples``).

    Args:
        model: the model (put it in eval mode).
        src, src_lengths: as ``luong.search.greedy_search``.
        options: sample must be set; nbest, temperature, top_k, seed, prefix, max_len,
            combine and the step rules (``luong.search.rules``) are read.
        max_len: as ``luong.search.beam_search``.
        generator: the draws' generator (default ``sampling_generator(options, ...)``).

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: bad shapes, a limit below 1, a prefix outside the target vocabulary, or
            ``options.sample`` not set.
    """
    limits, ids = search_inputs(model, src, src_lengths, options, max_len, sample=True)
    if generator is None:
        generator = sampling_generator(options, src.device)
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        return draw_samples(model, memory, state, src_lengths, limits, options, ids, generator)


def draw_samples(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    src_lengths: Tensor,
    limits: Tensor,
    options: SearchOptions,
    prefix: list[int],
    generator: torch.Generator,
) -> list[list[Hypothesis]]:
    """Sampling from an encoded batch; call it under ``torch.inference_mode``.

    Each sentence's rows are repeated ``nbest`` times; the ``prefix`` (target ids) is
    teacher-forced (``luong.search.prefix``), then every row draws a token a step from
    ``generator`` until EOS or its limit ``[B]`` (at least one token after the prefix).

    Returns:
        per sentence, in order, its draws sorted by score (the sum of the model's
        log-probabilities of the tokens, prefix included), best first.
    """
    batch = memory.mask.shape[0]
    device = memory.mask.device
    copies = options.nbest
    limits = limits.clamp(min=len(prefix) + 1)
    if copies > 1:  # independent draws: each sentence's rows repeated
        memory = memory.repeat(copies)
        state = state.reorder(torch.arange(batch, device=device).repeat_interleave(copies))
        limits = limits.repeat_interleave(copies)
    dtype = torch.promote_types(memory.dtype, torch.float32)
    forced, state = force_prefix(model, memory, state, prefix, options.combine, dtype)
    rules = StepRules.start(options, limits)
    steps = _draws(model, memory, state, forced, limits - forced.length, options, rules, generator)
    whole = (
        torch.cat([forced.tokens.expand(forced.next.shape[0], forced.length), steps[0]], 1),
        torch.cat([forced.log_probs.to(steps[1].dtype), steps[1]], 1),
        torch.cat([forced.weights.to(steps[2].dtype), steps[2]], 1),
    )
    flat = row_hypotheses(*whole, src_lengths.repeat_interleave(copies), limits)
    lists = [flat[b * copies : (b + 1) * copies] for b in range(batch)]
    return [sorted(hyps, key=lambda h: -h.score) for hyps in lists]


def _draws(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    forced: Forced,
    limits: Tensor,
    options: SearchOptions,
    rules: StepRules,
    generator: torch.Generator,
) -> tuple[Tensor, Tensor, Tensor]:
    """After the ``forced`` prefix, a drawn token a step until every row has produced EOS
    or used its ``limits`` ``[B]`` (>= 1) of steps: tokens, the model's own log_probs ``[B, T]``
    and weights ``[B, T, S]``. The step ``rules`` forbid tokens before the draw; the
    log-probabilities returned are the model's.

    The draw is from softmax((log p - max log p) / temperature): the most probable token
    scores 0 whatever the temperature, so a tiny temperature gives the argmax (and never
    an overflow to -inf for every token, whose softmax would be NaN); a temperature below
    the search dtype's smallest normal number (1e-300 in float32) is taken as that number,
    which draws the argmax as well."""
    tokens = forced.next
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    done = torch.zeros(tokens.shape[0], dtype=torch.bool, device=tokens.device)
    out_tokens: list[Tensor] = []
    out_log_probs, out_weights = [], []
    for t in range(int(limits.max())):
        logits, state, weights = decoder_step(model, tokens, state, memory, options.combine)
        log_probs = next_token_log_probs(logits)
        allowed = log_probs.clone()
        outputs = None
        if rules.reads_outputs:
            drawn = torch.stack(out_tokens, 1) if out_tokens else rows.new_zeros(len(rows), 0)
            outputs = torch.cat([forced.tokens.expand(len(rows), -1), drawn], 1)
        rules.apply(allowed, forced.length + t, rows, outputs)
        temperature = max(options.temperature, torch.finfo(log_probs.dtype).tiny)
        scores = (allowed - allowed.max(dim=-1, keepdim=True).values) / temperature
        top_k = options.top_k
        if top_k is not None and top_k < scores.shape[-1]:
            kth = scores.topk(top_k, dim=-1).values[:, -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        tokens = torch.multinomial(probs, 1, generator=generator)[:, 0]
        out_tokens.append(tokens)
        out_log_probs.append(log_probs.gather(1, tokens[:, None])[:, 0])
        out_weights.append(weights)
        done = done | (tokens == Vocab.eos_id) | (limits <= t + 1)
        if bool(done.all()):
            break
    return torch.stack(out_tokens, 1), torch.stack(out_log_probs, 1), torch.stack(out_weights, 1)
