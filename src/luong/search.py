"""Decoding a trained model: greedy search and beam search, batched over sentences (x beams).

Shapes: ``B`` batch, ``S`` source length, ``T`` output length, ``V`` target vocabulary,
``k`` beam size, ``n`` the n-best size.

``decode`` and ``decode_batches`` take a ``Seq2Seq`` or an ``Ensemble`` (``luong.ensemble``):
the search reads one distribution per step either way.

Beam search keeps ``k`` hypotheses per sentence as rows of one decoder batch ``[B * k]``: the
open beams' rows step the decoder, each sentence's beams attend to its keys together
(``Memory.for_beams``: one batched product, no copy of the keys per beam), and
``DecoderState.reorder`` follows the surviving beams after every step. Finished hypotheses
leave the beam (their slot is refilled at the next step) and join a pool of the ``n`` best
per sentence.

Scoring, after Wu et al. (2016), "Google's Neural Machine Translation System", eq. 14:

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y)   = ((5 + |Y|) / 6) ** alpha                       |Y| counts EOS when present
    cp(X; Y) = beta * sum_s log(min(sum_t a_ts, 1))          real source positions s only

Beams compete on log P (every open beam has the same length at a step, so lp does not change
their order); finished hypotheses and the final n-best lists are ranked by s.

The options are bounded where a larger value only breaks the arithmetic: ``alpha`` at most
``MAX_ALPHA`` (GNMT tunes it in [0.6, 1]; at 5, lp stays finite in float32 for outputs of
up to 10^8 tokens, where alpha = 39 overflowed at 140), ``beta`` at most ``MAX_BETA`` (GNMT:
0.2; at 10 a source position the attention never reached costs 873, finite for any source,
where beta = 1e37 made every score -inf), and ``beam_size`` at most ``MAX_BEAM`` (wider
beams only cost memory: a decoder row per beam). ``decode`` runs wide beams on fewer
sentences at a time (``SEARCH_ROWS``). A sentence's n-best list is never empty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from luong.batching import check_batch
from luong.decoder import DecoderState, Memory
from luong.ensemble import (
    Decodable,
    EnsembleMemory,
    EnsembleState,
    decoder_step,
    encode_texts,
)
from luong.model import Seq2Seq, evaluating
from luong.vocab import Vocab

__all__ = [
    "MAX_ALPHA",
    "MAX_BEAM",
    "MAX_BETA",
    "MAX_TEMPERATURE",
    "SEARCH_ROWS",
    "Hypothesis",
    "beam_search",
    "constrained_search",
    "coverage_penalty",
    "decode",
    "decode_batches",
    "default_max_len",
    "greedy_search",
    "greedy_steps",
    "hypothesis_symbols",
    "hypothesis_text",
    "length_penalty",
    "replace_unknowns",
    "source_symbols",
]


MAX_ALPHA = 5.0
"""The largest length penalty weight (module docstring)."""

MAX_BETA = 10.0
"""The largest coverage penalty weight."""

MAX_BEAM = 1000
"""The widest beam."""

SEARCH_ROWS = 8192
"""``decode``: at most this many decoder rows (sentences x beams) per search call once the
beam is wider than ``SEARCH_ROWS / batch_size``: 16 beams at the default 512 sentences."""


@dataclass(frozen=True)
class Hypothesis:
    """One output of a search.

    tokens: output ids, ending with EOS when the search produced it (it stops at max_len
        otherwise); log_probs: the model's log-probability of each token; score: the search's
        score (the sum of log_probs for greedy search; ``s(Y, X)`` above for beam search);
        attention ``[len(tokens), S_real]``: the weights each output token put on the real
        source positions (the source's EOS included); ``[len(tokens), 0]`` when the caller
        did not keep it (``decode_batches(..., attention=False)``).
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


def _check_search_input(src: Tensor, src_lengths: Tensor, max_len: MaxLen) -> Tensor:
    """Validate; returns the output limit per sentence, a long tensor ``[B]``."""
    check_batch(src, src_lengths)
    if isinstance(max_len, Tensor):
        if (
            max_len.dtype.is_floating_point
            or max_len.dtype == torch.bool
            or tuple(max_len.shape) != (src.shape[0],)
            or (max_len.numel() and int(max_len.min()) < 1)
        ):
            raise ValueError(
                f"max_len: expected an int >= 1 or integers >= 1 of shape [B] = "
                f"({src.shape[0]},), got {max_len.dtype} {tuple(max_len.shape)}"
            )
        return max_len.to(device=src.device, dtype=torch.long)
    if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
        raise ValueError(f"max_len: expected an int >= 1, got {max_len!r}")
    return torch.full((src.shape[0],), max_len, dtype=torch.long, device=src.device)


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
    limits = _check_search_input(src, src_lengths, max_len)
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        steps = greedy_steps(model, memory, state, limits)
        return _hypotheses(*steps, src_lengths, limits)


def greedy_steps(
    model: Decodable, memory: AnyMemory, state: AnyState, limits: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The greedy loop from an encoded batch (``model.encode``): tokens, log_probs ``[B, T]``
    and weights ``[B, T, S]``, T <= max(limits). It stops once every row has produced EOS or
    reached its limit ``[B]``. A row that is done leaves the batch once half of the rows
    still decoded are done (sentences differ in length, and one long output would otherwise
    keep the whole batch stepping); after it is done its tokens are PAD, its log_probs and
    weights 0 (``greedy_search`` cuts them). No validation: the caller checked the batch."""
    batch = memory.mask.shape[0]
    device = memory.mask.device
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device)  # the batch rows still decoded
    done = torch.zeros(batch, dtype=torch.bool, device=device)  # of those rows
    steps: list[tuple[Tensor, Tensor, Tensor, Tensor]] = []
    for t in range(int(limits.max())):
        logits, state, weights = decoder_step(model, tokens, state, memory)
        log_probs, tokens = _next_token_log_probs(logits).max(dim=-1)
        steps.append((rows, tokens, log_probs, weights))
        done = done | (tokens == Vocab.eos_id) | (limits[rows] <= t + 1)
        remaining = int((~done).sum())
        if remaining == 0:
            break
        if 2 * remaining <= rows.shape[0]:
            keep = (~done).nonzero().squeeze(1)
            rows, tokens, done = rows[keep], tokens[keep], done[keep]
            memory, state = memory.select(keep), state.reorder(keep)
    out_tokens = torch.full((batch, len(steps)), Vocab.pad_id, dtype=torch.long, device=device)
    out_log_probs = torch.zeros(batch, len(steps), device=device)
    first_weights = steps[0][3]
    out_weights = first_weights.new_zeros(batch, len(steps), first_weights.shape[1])
    for t, (at, step_tokens, step_log_probs, step_weights) in enumerate(steps):
        out_tokens[at, t] = step_tokens
        out_log_probs[at, t] = step_log_probs
        out_weights[at, t] = step_weights
    return out_tokens, out_log_probs, out_weights


def _next_token_log_probs(logits: Tensor) -> Tensor:
    """The model's log-probabilities ``[R, V]`` with PAD and BOS ruled out (-inf): they are
    never outputs. The other tokens keep the model's own values (no renormalisation)."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    log_probs[:, Vocab.pad_id] = float("-inf")
    log_probs[:, Vocab.bos_id] = float("-inf")
    return log_probs


def _hypotheses(
    tokens: Tensor, log_probs: Tensor, weights: Tensor, src_lengths: Tensor, limits: Tensor
) -> list[Hypothesis]:
    """Cut each row after its first EOS or at its limit: tokens, log_probs ``[B, T]``,
    weights ``[B, T, S]``, limits ``[B]``."""
    tokens_list = tokens.tolist()
    log_probs_list = log_probs.tolist()
    weights = weights.cpu()
    source_lengths, limits_list = src_lengths.tolist(), limits.tolist()
    result = []
    for b, (row, row_lp) in enumerate(zip(tokens_list, log_probs_list, strict=True)):
        row = row[: limits_list[b]]
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


# -- penalties ------------------------------------------------------------------------------


def _length_penalties(lengths: Tensor, alpha: float) -> Tensor:
    """``length_penalty`` of each length ``[B]``, as float32 (the search's dtype)."""
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's length penalty lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016, eq. 14).

    Args:
        length: |Y|, the output's tokens (EOS included when present).
        alpha: 0 gives 1 (no normalisation); 1 divides log P by roughly the length.
    """
    return ((5.0 + length) / 6.0) ** alpha


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


# -- beam search ----------------------------------------------------------------------------


def _check_number(name: str, value: object, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    if value > high:
        raise ValueError(f"{name}: expected at most {high:g}, got {value!r}")
    return float(value)


def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name}: expected at most {high}, got {value!r}")
    return value


def _check_beam_options(
    beam_size: int, n_best: int, alpha: float, beta: float, min_len: int, max_len: int | None
) -> None:
    _check_int("beam_size", beam_size, 1, MAX_BEAM)
    _check_int("n_best", n_best, 1)
    if n_best > beam_size:
        raise ValueError(f"n_best: expected <= beam_size = {beam_size}, got {n_best}")
    _check_number("alpha", alpha, MAX_ALPHA)
    _check_number("beta", beta, MAX_BETA)
    _check_int("min_len", min_len, 0)
    if max_len is not None and min_len >= max_len:
        raise ValueError(
            f"min_len: expected < max_len = {max_len} (EOS could never come), got {min_len}"
        )


def beam_search(
    model: Seq2Seq,
    src: Tensor,
    src_lengths: Tensor,
    beam_size: int,
    max_len: MaxLen,
    n_best: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
    min_len: int = 0,
) -> list[list[Hypothesis]]:
    """Beam search over a batch: ``k`` beams per sentence, all sentences in one tensor program.

    Every step expands the open beams of a sentence by every token and keeps the ``k`` best
    candidates by log P. A kept candidate that ends in EOS is finished: it is scored with
    ``s(Y, X)`` (module docstring), joins the sentence's pool of the ``n_best`` best, and its
    slot is refilled from the other beams at the next step. At the first step only beam 0 of
    each sentence is open (the others are -inf), so the beams are distinct from the start.

    The greedy path is kept: when the argmax extension of the beam that holds greedy search's
    prefix falls out of the top ``k``, it takes the ``k``-th place. So ``beam_size=1`` is greedy
    search, and with ``alpha = beta = 0`` the best hypothesis never has a lower log P than
    greedy search's (plain beam search may prune the greedy prefix and end lower).

    A sentence stops when its pool holds ``n_best`` hypotheses that no open beam can beat. An
    open beam with log P = L <= 0 can at best end at ``L / lp(max_len)`` (log P only falls, lp
    grows with the length for alpha >= 0, and cp <= 0), so that is its bound; with alpha = 0 it
    is L itself. At ``max_len`` the open beams join the pool as hypotheses without EOS.

    Only open beams are computed: the decoder runs on the rows of open beams of unfinished
    sentences, so finished slots and sentences cost nothing. With ``n_best=1``, greedy search
    runs first on the same encoding; its hypothesis is kept (above), so an open beam whose
    bound is below greedy's score cannot win, and is dropped. Beams that cannot win only ever
    push out other beams that cannot win, so dropping them leaves the best hypothesis as it is.

    Args:
        model: the model (put it in eval mode for deterministic output).
        src: source ids ``[B, S]`` (EOS-terminated, padded).
        src_lengths: real lengths ``[B]``.
        beam_size: k, 1 <= k <= ``MAX_BEAM``.
        max_len: the most tokens an output may have, EOS included (>= 1): an int, or a limit
            per sentence ``[B]``.
        n_best: hypotheses returned per sentence, 1 <= n_best <= k.
        alpha: length penalty weight in [0, ``MAX_ALPHA``] (0 ranks by log P).
        beta: coverage penalty weight in [0, ``MAX_BETA``] (0 for none).
        min_len: EOS is forbidden until the output has this many tokens (< max_len).

    Returns:
        per sentence, in order, its n-best list: distinct hypotheses sorted by score, best
        first; ``n_best`` of them unless the vocabulary is too small to fill the beam, and
        never none (an ended hypothesis is kept whatever its score). Each
        score is recomputed in float64 from the hypothesis' own ``log_probs`` and
        ``attention``: ``sum(log_probs) / length_penalty(len(tokens), alpha) +
        coverage_penalty(attention.sum(0), True, beta)``.

    Raises:
        ValueError: bad shapes, ``beam_size`` outside ``[1, MAX_BEAM]``, ``n_best`` outside
            ``[1, beam_size]``, ``max_len < 1``, ``alpha`` or ``beta`` negative, non-finite
            or above its bound, ``min_len`` outside ``[0, max_len)``.
    """
    limits = _check_search_input(src, src_lengths, max_len)
    shortest = int(limits.min()) if limits.numel() else None
    _check_beam_options(beam_size, n_best, alpha, beta, min_len, shortest)
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        return _beam_search(
            model, memory, state, src_lengths, beam_size, limits, n_best, alpha, beta, min_len
        )


def _beam_search(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    src_lengths: Tensor,
    beam_size: int,
    limits: Tensor,
    n_best: int,
    alpha: float,
    beta: float,
    min_len: int,
) -> list[list[Hypothesis]]:
    """``beam_search`` from an encoded batch (options checked)."""
    floor = None
    if n_best == 1 and beam_size > 1:
        floor = _greedy_floor(model, memory, state, limits, alpha, beta, min_len)
    return _beam_steps(
        model, memory, state, src_lengths, beam_size, limits, n_best, alpha, beta, min_len, floor
    )


def _greedy_floor(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    limits: Tensor,
    alpha: float,
    beta: float,
    min_len: int,
) -> Tensor:
    """The log P ``[B]`` below which an open beam cannot beat greedy search's hypothesis:
    ``s(G) * lp(limit)``, less a margin for rounding; -inf where greedy's hypothesis ends
    before ``min_len`` (beam search then follows another path)."""
    tokens, log_probs, weights = greedy_steps(model, memory, state, limits)
    steps = tokens.shape[1]
    is_eos = (tokens == Vocab.eos_id) & (
        torch.arange(steps, device=tokens.device) < limits[:, None]
    )
    ended = is_eos.any(dim=1)
    length = torch.where(ended, is_eos.int().argmax(dim=1) + 1, limits.clamp(max=steps))  # [B]
    within = torch.arange(steps, device=tokens.device) < length[:, None]  # [B, T]
    log_p = torch.where(within, log_probs, 0.0).sum(dim=1)
    score = log_p / _length_penalties(length, alpha)
    if beta:
        coverage = (weights * within[:, :, None]).sum(dim=1)  # [B, S]
        score = score + coverage_penalty(coverage, memory.mask, beta).to(score.dtype)
    floor = score * _length_penalties(limits, alpha)
    floor = floor - 1e-4 * (1.0 + floor.abs())
    return floor.masked_fill(ended & (length <= min_len), float("-inf"))


def _beam_steps(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    src_lengths: Tensor,
    k: int,
    limits: Tensor,
    n: int,
    alpha: float,
    beta: float,
    min_len: int,
    floor: Tensor | None,
    start: Tensor | None = None,
) -> list[list[Hypothesis]]:
    """The search loop, and each sentence's n-best list (``_collect``). The bookkeeping is
    dense, ``[B, k]`` slots; the decoder runs on the R open slots only (``live``: their dense
    indices ``b * k + j``, in row order). Once half of the sentences still searched are
    done, their lists are collected and they leave every tensor of the loop (sentences differ
    in length, and the dense ``[B, k x V]`` candidates would otherwise be scored for all of
    them until the longest ends)."""
    batch, source_len = memory.mask.shape
    device = memory.mask.device
    ids = torch.arange(batch, device=device)  # the original sentence of each batch row
    lists: dict[int, list[Hypothesis]] = {}  # by original sentence, as each is collected
    sentence_count = batch
    dense = batch * k
    first = memory if isinstance(memory, Memory) else memory.memories[0]
    state = state.with_coverage(first.keys.new_zeros(batch, source_len))
    sentences = torch.arange(batch, device=device)
    slots = torch.arange(k, device=device).expand(batch, k)
    alive = torch.full((batch, k), float("-inf"), device=device)  # log P of open beams
    alive[:, 0] = 0.0
    greedy = torch.zeros(batch, dtype=torch.long, device=device)  # its slot; -1: none
    live = sentences * k  # [R]
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    if start is not None:  # the last token of a forced prefix (constrained_search)
        tokens = start
    step_memory = memory
    pool = _Pool(batch, n, device)
    history: list[_Step] = []
    last_lp = _length_penalties(limits, alpha)  # [B], at each sentence's limit
    max_len = int(limits.max())
    for t in range(max_len):
        rows_now = live.shape[0]
        logits, state, weights = decoder_step(model, tokens, state, step_memory)
        log_probs = _next_token_log_probs(logits)  # [R, V]
        vocab = log_probs.shape[-1]
        if t < min_len:
            log_probs[:, Vocab.eos_id] = float("-inf")
        # The k best of the B x k x V extensions are among each row's own k best (adding the
        # row's log P keeps the row's order): a top-k per row, then over [B, k x k].
        width = min(k, vocab)
        row_lp, row_token = log_probs.topk(width, dim=1)  # [R, w]
        candidates = alive.view(-1)[live][:, None] + row_lp
        if rows_now == dense:
            position = None  # row r is slot r
        else:
            candidates = candidates.new_full((dense, width), float("-inf")).index_copy_(
                0, live, candidates
            )
            position = torch.zeros(dense, dtype=torch.long, device=device)
            position[live] = torch.arange(rows_now, device=device)
        score, index = candidates.view(batch, k * width).topk(k, dim=1)  # [B, k]
        parent = torch.div(index, width, rounding_mode="floor")
        # Keep the greedy path: its argmax extension takes the last slot when it fell out.
        g_slot = greedy.clamp(min=0)
        g_dense = sentences * k + g_slot
        g_row = g_dense if position is None else position[g_dense]
        g_token = log_probs[g_row].argmax(dim=-1)  # [B]
        source = sentences[:, None] * k + parent  # [B, k] each slot's parent, dense
        row = source if position is None else position[source]  # ... its row in this step
        token = row_token[row, index - parent * width]
        g_kept = (greedy >= 0)[:, None] & (parent == g_slot[:, None]) & (token == g_token[:, None])
        missing = (greedy >= 0) & ~g_kept.any(dim=1)
        g_score = alive.view(-1)[g_dense] + log_probs[g_row, g_token]
        score[:, -1] = torch.where(missing, g_score, score[:, -1])
        parent[:, -1] = torch.where(missing, g_slot, parent[:, -1])
        token[:, -1] = torch.where(missing, g_token, token[:, -1])
        row[:, -1] = torch.where(missing, g_row, row[:, -1])
        g_kept[:, -1] |= missing
        token_lp = log_probs[row, token]  # [B, k]
        live_slot = torch.isfinite(score)
        ends = live_slot & (token == Vocab.eos_id)
        # At its limit, a sentence's open beams count as hypotheses without EOS.
        ends = ends | (live_slot & (limits <= t + 1)[:, None])
        final = score / length_penalty(t + 1, alpha)
        if beta:
            coverage = state.coverage[row]  # type: ignore[index]  # [B, k, S]
            penalty = coverage_penalty(coverage, memory.mask[:, None, :], beta)
            final = final + penalty.to(final.dtype)
        pool.add(torch.where(ends, final, float("-inf")), ends, t, slots)
        history.append(_Step(token, parent, token_lp, row, weights))
        alive = torch.where(ends, float("-inf"), score)
        g_on = g_kept & ~ends
        greedy = torch.where(g_on.any(dim=1), g_on.int().argmax(dim=1), -1)
        if floor is not None:  # beams that cannot beat greedy's hypothesis
            alive = alive.masked_fill((alive < floor[:, None]) & ~g_on, float("-inf"))
        # No open beam can beat the n-th in the pool: the sentence is done.
        done = (pool.score[:, -1] >= alive.max(dim=1).values / last_lp) | (limits <= t + 1)
        # NaN scores (weights that overflow) would close every beam: checked at the same sync.
        broken = torch.isnan(row_lp).any()  # top-k ranks NaN first
        if t == max_len - 1 or bool(done.all() | broken):
            if bool(broken):
                raise ValueError(NAN_SCORES.format(step=t + 1))
            break
        alive = alive.masked_fill(done[:, None], float("-inf"))
        greedy = greedy.masked_fill(done, -1)
        remaining = int((~done).sum())
        if 2 * remaining <= batch:  # the done sentences leave the loop
            out, keep = done.nonzero().squeeze(1), (~done).nonzero().squeeze(1)
            finished = _collect(
                pool.select(out),
                [step.select(out) for step in history],
                src_lengths[out],
                alpha,
                beta,
            )
            lists.update(zip(ids[out].tolist(), finished, strict=True))
            ids, src_lengths, limits, last_lp = (
                ids[keep],
                src_lengths[keep],
                limits[keep],
                last_lp[keep],
            )
            alive, greedy, token, row = alive[keep], greedy[keep], token[keep], row[keep]
            floor = None if floor is None else floor[keep]
            pool = pool.select(keep)
            history = [step.select(keep) for step in history]
            memory = memory.select(keep)
            batch, dense = remaining, remaining * k
            sentences = torch.arange(batch, device=device)
            slots = torch.arange(k, device=device).expand(batch, k)
        next_live = torch.isfinite(alive).view(-1).nonzero().squeeze(1)  # [R']
        if next_live.numel() == 0:  # no open beam anywhere (scores that are not numbers)
            break
        state = state.reorder(row.view(-1)[next_live])
        tokens = token.view(-1)[next_live]
        # The new rows read each sentence's memory as beams: every slot, or the open ones.
        step_memory = memory.for_beams(k, None if next_live.shape[0] == dense else next_live)
        live = next_live
    lists.update(zip(ids.tolist(), _collect(pool, history, src_lengths, alpha, beta), strict=True))
    return [lists[i] for i in range(sentence_count)]


@dataclass(frozen=True)
class _Step:
    """What one search step leaves for the backtracking, per slot ``[B, k]``: its token, its
    parent slot, the token's log-probability and the parent's row in this step's batch; and
    the attention of the batch's rows ``[R, S]``."""

    token: Tensor
    parent: Tensor
    token_lp: Tensor
    row: Tensor
    weights: Tensor

    def select(self, sentences: Tensor) -> _Step:
        """The step of ``sentences`` ``[B']``; ``row`` still points into ``weights``."""
        return _Step(
            self.token[sentences],
            self.parent[sentences],
            self.token_lp[sentences],
            self.row[sentences],
            self.weights,
        )


class _Pool:
    """The n best ended hypotheses per sentence: score ``[B, n]`` sorted best first, filled
    ``[B, n]`` (False: an empty place), and where each ended: the step and the slot within
    that step's top k. An ended hypothesis is kept whatever its score (-inf, NaN): it ranks
    below every other, above an empty place, so a sentence's list is never empty."""

    def __init__(self, batch: int, n: int, device: torch.device) -> None:
        self.score = torch.full((batch, n), float("-inf"), device=device)
        self.filled = torch.zeros(batch, n, dtype=torch.bool, device=device)
        self.step = torch.zeros(batch, n, dtype=torch.long, device=device)
        self.slot = torch.zeros(batch, n, dtype=torch.long, device=device)

    def select(self, sentences: Tensor) -> _Pool:
        """The pool of ``sentences`` ``[B']``."""
        pool = _Pool(0, self.score.shape[1], self.score.device)
        pool.score, pool.filled = self.score[sentences], self.filled[sentences]
        pool.step, pool.slot = self.step[sentences], self.slot[sentences]
        return pool

    def add(self, score: Tensor, ended: Tensor, step: int, slots: Tensor) -> None:
        """Merge candidates score ``[B, k]`` that ended (``ended`` ``[B, k]``) at ``step``."""
        n = self.score.shape[1]
        merged = torch.cat([self.score, score], dim=1)
        filled = torch.cat([self.filled, ended], dim=1)
        lowest = torch.finfo(merged.dtype).min
        rank = torch.where(merged.isnan() | merged.isneginf(), lowest, merged)
        _, order = torch.where(filled, rank, float("-inf")).topk(n, dim=1)
        self.score = merged.gather(1, order)
        self.filled = filled.gather(1, order)
        self.step = torch.cat([self.step, torch.full_like(slots, step)], 1).gather(1, order)
        self.slot = torch.cat([self.slot, slots], 1).gather(1, order)


def _collect(
    pool: _Pool, history: list[_Step], src_lengths: Tensor, alpha: float, beta: float
) -> list[list[Hypothesis]]:
    """Follow each pooled hypothesis back through the steps; score and sort on the host."""
    batch, n = pool.score.shape
    steps = len(history)
    source_len = history[0].weights.shape[-1]
    tokens = pool.slot.new_zeros(batch, n, steps)
    log_probs = pool.score.new_zeros(batch, n, steps)
    attention = history[0].weights.new_zeros(batch, n, steps, source_len)
    slot = pool.slot
    for t in range(steps - 1, -1, -1):
        step = history[t]
        slot = torch.where(pool.step == t, pool.slot, slot)  # a hypothesis ending here starts
        tokens[:, :, t] = step.token.gather(1, slot)
        log_probs[:, :, t] = step.token_lp.gather(1, slot)
        attention[:, :, t] = step.weights[step.row.gather(1, slot)]
        slot = step.parent.gather(1, slot)
    ends, filled = pool.step.tolist(), pool.filled.tolist()
    tokens_list, log_probs_list = tokens.tolist(), log_probs.tolist()
    attention = attention.cpu()
    source_lengths = src_lengths.tolist()
    result: list[list[Hypothesis]] = []
    for b in range(batch):
        hyps = []
        for i in range(n):
            if not filled[b][i]:
                continue
            length = ends[b][i] + 1
            lps = log_probs_list[b][i][:length]
            att = attention[b, i, :length, : source_lengths[b]].clone()
            score = sum(lps) / length_penalty(length, alpha)
            if beta:
                coverage = att.double().sum(0)
                real = torch.ones_like(coverage, dtype=torch.bool)
                score += float(coverage_penalty(coverage, real, beta))
            hyps.append(Hypothesis(tokens_list[b][i][:length], float(score), lps, att))
        hyps.sort(key=lambda h: -h.score)
        result.append(hyps)
    return result


# -- text in, hypotheses out ----------------------------------------------------------------


def decode(
    model: Decodable,
    texts: Sequence[str],
    *,
    beam_size: int = 1,
    n_best: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
    min_len: int = 0,
    batch_size: int = 512,
    max_len: int | None = None,
    prefix: str = "",
    sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int | None = None,
) -> list[list[Hypothesis]]:
    """Decode raw strings, batched by length; per input, in order, its n-best list.

    ``beam_size=1`` without penalties or ``min_len`` runs ``greedy_search`` (the same tokens
    and scores as ``beam_search`` with one beam, a little faster). An empty or whitespace-only
    input gets no hypotheses (an empty list). The model is put in eval mode for the call.
    Every hypothesis is kept to the end: ``decode_batches`` hands them out batch by batch.

    Args:
        model: the model, or an ``Ensemble``.
        texts: the sources.
        beam_size: k (1: greedy).
        n_best: hypotheses per input, at most ``beam_size``.
        alpha: length penalty weight.
        beta: coverage penalty weight.
        min_len: EOS forbidden until the output has this many tokens (capped at the
            shortest limit of each batch minus one when ``max_len`` is not given).
        batch_size: sentences per search call (the search runs ``batch_size * k`` rows; at
            most ``SEARCH_ROWS // k`` sentences, at least one, with wide beams).
        max_len: the most output tokens; default ``default_max_len`` of each sentence's own
            length (twice it, plus 10).
        prefix: target text every output starts with (teacher-forced, then the search
            continues: ``constrained_search``); "" for none.
        sample: draw outputs instead of searching: ``n_best`` draws per input, each token
            from softmax(log p / ``temperature``) over the ``top_k`` most probable (all when
            None); ``beam_size`` must be 1.
        temperature, top_k: sampling options (temperature in (0, ``MAX_TEMPERATURE``]).
        seed: seeds the sampling's generator, so one input list gives the same draws
            (None: a fresh seed).

    Raises:
        TypeError: ``texts`` is not a sequence of strings.
        ValueError: an option out of range (named with the value).
    """
    outputs: list[list[Hypothesis]] = [[] for _ in texts]
    batches = decode_batches(
        model,
        texts,
        beam_size=beam_size,
        n_best=n_best,
        alpha=alpha,
        beta=beta,
        min_len=min_len,
        batch_size=batch_size,
        max_len=max_len,
        prefix=prefix,
        sample=sample,
        temperature=temperature,
        top_k=top_k,
        seed=seed,
    )
    for indices, lists in batches:
        for i, hyps in zip(indices, lists, strict=True):
            outputs[i] = hyps
    return outputs


def decode_batches(
    model: Decodable,
    texts: Sequence[str],
    *,
    beam_size: int = 1,
    n_best: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
    min_len: int = 0,
    batch_size: int = 512,
    max_len: int | None = None,
    window: int | None = None,
    attention: bool = True,
    prefix: str = "",
    sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int | None = None,
) -> Iterator[tuple[list[int], list[list[Hypothesis]]]]:
    """``decode``, handed out a search call at a time, so a caller keeps only what it needs.

    The inputs are taken in windows of ``window`` (all at once when None), in order; within
    a window they are sorted by length (less padding), and every input of a window is handed
    out before the next window starts. So a caller that writes outputs in input order holds
    at most one window's.

    Args:
        model, texts, beam_size, n_best, alpha, beta, min_len, batch_size, max_len: as
            ``decode``.
        window: inputs per window (>= 1), or None for one window.
        attention: keep each hypothesis' attention; with False it is an empty
            ``[len(tokens), 0]`` tensor (scores are computed with it all the same).
        prefix, sample, temperature, top_k, seed: as ``decode``.

    Returns:
        an iterator of ``(indices, lists)``: the indices of some inputs, and their n-best
        lists (an empty list for an empty or whitespace-only input). Every index comes once.

    Raises:
        TypeError: ``texts`` is not a sequence of strings.
        ValueError: an option out of range (named with the value), on the call itself.
    """
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts: expected a sequence of strings")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: expected >= 1, got {batch_size!r}")
    if max_len is not None:
        _check_int("max_len", max_len, 1)
    if window is not None:
        _check_int("window", window, 1)
    if not isinstance(prefix, str):
        raise TypeError(f"prefix: expected a str, got {type(prefix).__name__}")
    if prefix or sample:
        unknown = model.tgt_vocab.unknown(prefix)
        if unknown:
            raise ValueError(
                f"prefix: expected symbols of the target vocabulary, got unknown {unknown[:5]}"
            )
        if sample:
            _check_sampling(beam_size, temperature, top_k, seed)
            _check_int("n_best", n_best, 1)
        else:
            _check_beam_options(beam_size, n_best, alpha, beta, min_len, max_len)
        if min_len:
            raise ValueError(f"min_len: not with a prefix or sampling, got {min_len}")
        generator = None
        if sample:
            generator = torch.Generator(device=model.device)
            if seed is None:
                generator.seed()
            else:
                generator.manual_seed(seed)
        ids = model.tgt_vocab.encode(prefix, eos=False)
        scale = float(temperature) if sample else None

        def constrained(
            memory: AnyMemory, state: AnyState, lengths: Tensor, limits: Tensor
        ) -> list[list[Hypothesis]]:
            return _constrained(
                model, memory, state, lengths, limits, ids, beam_size, n_best, alpha, beta,
                scale, top_k, generator,
            )  # fmt: skip

        # Sampling draws in input order, so a seed gives the same outputs for one input list
        # whatever the sentences' lengths.
        rows = max(beam_size, n_best)
        return _decode_windows(
            model, texts, rows, batch_size, max_len, window, attention, not sample, constrained
        )
    _check_beam_options(beam_size, n_best, alpha, beta, min_len, max_len)
    greedy = beam_size == 1 and not alpha and not beta and not min_len

    def search(
        memory: AnyMemory, state: AnyState, lengths: Tensor, limits: Tensor
    ) -> list[list[Hypothesis]]:
        if greedy:
            return [
                [h]
                for h in _hypotheses(*greedy_steps(model, memory, state, limits), lengths, limits)
            ]
        shortest = min(min_len, int(limits.min()) - 1)
        return _beam_search(
            model, memory, state, lengths, beam_size, limits, n_best, alpha, beta, shortest
        )

    return _decode_windows(
        model, texts, beam_size, batch_size, max_len, window, attention, True, search
    )


Search = Callable[[AnyMemory, AnyState, Tensor, Tensor], list[list[Hypothesis]]]
"""A search over an encoded chunk: (memory, state, source lengths [B], output limits [B])."""


def _decode_windows(
    model: Decodable,
    texts: Sequence[str],
    rows: int,
    batch_size: int,
    max_len: int | None,
    window: int | None,
    attention: bool,
    by_length: bool,
    search: Search,
) -> Iterator[tuple[list[int], list[list[Hypothesis]]]]:
    """The windows, chunks and encoding of ``decode_batches``, with ``search`` run on each
    chunk: ``rows`` decoder rows per sentence (fewer sentences per call when wide), sorted by
    length within a window when ``by_length``."""
    per_call = min(batch_size, max(1, SEARCH_ROWS // rows))  # wide beams: fewer
    size = len(texts) if window is None else window
    with evaluating(model):
        for first in range(0, len(texts), max(size, 1)):
            span = range(first, min(first + size, len(texts)))
            empty = [i for i in span if not texts[i].strip()]
            if empty:
                yield empty, [[] for _ in empty]
            todo = [i for i in span if texts[i].strip()]
            if by_length:  # similar lengths together: less padding; the caller restores order
                todo.sort(key=lambda i: len(texts[i]))
            for start in range(0, len(todo), per_call):
                chunk = todo[start : start + per_call]
                with torch.inference_mode():
                    memory, state, lengths = encode_texts(model, [texts[i] for i in chunk])
                    # The default limit is each sentence's own: no output depends on its batch.
                    limits = (
                        default_max_len(lengths)
                        if max_len is None
                        else torch.full_like(lengths, max_len)
                    )
                    lists = search(memory, state, lengths, limits)
                if not attention:
                    lists = [[_without_attention(h) for h in hyps] for hyps in lists]
                yield chunk, lists


def _without_attention(hypothesis: Hypothesis) -> Hypothesis:
    return replace(hypothesis, attention=torch.empty(len(hypothesis.tokens), 0))


# -- prefix-constrained decoding and sampling -----------------------------------------------

MAX_TEMPERATURE = 100.0
"""The highest sampling temperature (above it the distribution is all but uniform)."""


def _check_sampling(beam_size: int, temperature: object, top_k: object, seed: object) -> None:
    if beam_size != 1:
        raise ValueError(f"beam_size: sampling draws one token a step, expected 1, got {beam_size}")
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature <= 0
    ):
        raise ValueError(f"temperature: expected a finite number > 0, got {temperature!r}")
    if temperature > MAX_TEMPERATURE:
        raise ValueError(f"temperature: expected at most {MAX_TEMPERATURE:g}, got {temperature!r}")
    if top_k is not None:
        _check_int("top_k", top_k, 1)
    if seed is not None:
        _check_int("seed", seed, 0)


def _forced_steps(
    model: Decodable, memory: AnyMemory, state: AnyState, prefix: Tensor
) -> tuple[AnyState, Tensor, Tensor, Tensor]:
    """Teacher-force the target ``prefix`` ``[P]`` (the same for every row) through the
    decoder, step by step: the state after it, the next input token ``[B]`` (its last
    token, BOS when empty), and the log-probability ``[B, P]`` and attention ``[B, P, S]``
    the model gave each forced token, so a caller can score and show them."""
    batch, source_len = memory.mask.shape
    device = memory.mask.device
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    log_probs, weights = [], []
    for token in prefix.tolist():
        logits, state, step_weights = decoder_step(model, tokens, state, memory)
        tokens = torch.full_like(tokens, token)
        log_probs.append(_next_token_log_probs(logits)[:, token])
        weights.append(step_weights)
    if not log_probs:
        return (
            state,
            tokens,
            torch.zeros(batch, 0, device=device),
            torch.zeros(batch, 0, source_len, device=device),
        )
    return state, tokens, torch.stack(log_probs, 1), torch.stack(weights, 1)


def _free_steps(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    tokens: Tensor,
    steps: int,
    limits: Tensor,
    temperature: float | None,
    top_k: int | None,
    generator: torch.Generator | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """From input ``tokens`` ``[B]``, up to ``steps`` free steps: the argmax (``temperature``
    None) or a draw from softmax(log p / temperature) over the ``top_k`` most probable
    tokens. Returns tokens, the model's own log_probs ``[B, T]`` and weights ``[B, T, S]``;
    it stops once every row has produced EOS or used its ``limits`` ``[B]`` of steps."""
    batch, source_len = memory.mask.shape
    done = torch.zeros(batch, dtype=torch.bool, device=tokens.device)
    out_tokens, out_log_probs, out_weights = [], [], []
    for t in range(steps):
        logits, state, weights = decoder_step(model, tokens, state, memory)
        log_probs = _next_token_log_probs(logits)
        if temperature is None:
            tokens = log_probs.argmax(dim=-1)
        else:
            scores = log_probs / temperature
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
    if not out_tokens:
        return (
            tokens.new_zeros(batch, 0),
            torch.zeros(batch, 0, device=tokens.device),
            torch.zeros(batch, 0, source_len, device=tokens.device),
        )
    return torch.stack(out_tokens, 1), torch.stack(out_log_probs, 1), torch.stack(out_weights, 1)


def _rescored(hypothesis: Hypothesis, alpha: float, beta: float) -> Hypothesis:
    """``hypothesis`` scored over all of its tokens, as ``beam_search`` scores its own."""
    score = sum(hypothesis.log_probs) / length_penalty(len(hypothesis.tokens), alpha)
    if beta and hypothesis.attention.numel():
        coverage = hypothesis.attention.double().sum(0)
        score += float(
            coverage_penalty(coverage, torch.ones_like(coverage, dtype=torch.bool), beta)
        )
    return replace(hypothesis, score=float(score))


def constrained_search(
    model: Seq2Seq,
    src: Tensor,
    src_lengths: Tensor,
    max_len: MaxLen,
    *,
    prefix: Sequence[int] = (),
    beam_size: int = 1,
    n_best: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
    sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> list[list[Hypothesis]]:
    """Search that starts from a forced target ``prefix``, or samples, or both.

    The prefix tokens are teacher-forced through the decoder one step at a time; their
    log-probabilities and attention are kept, so every hypothesis starts with the prefix and
    its score and attention cover it. From the state after the prefix the search goes on:
    greedy (``beam_size=1``), beam search (``beam_size > 1``: the beams rank the
    continuations; the final list is scored over whole outputs, as ``beam_search`` scores),
    or sampling (``sample``: ``n_best`` independent draws per sentence, each token from
    softmax(log p / ``temperature``) over the ``top_k`` most probable tokens, from
    ``generator``; the list sorted by score, the sum of the model's log-probabilities).

    With an empty prefix and no sampling, greedy gives ``greedy_search``'s hypotheses. Every
    output has at least one token after the prefix: its limit is ``max(max_len, P + 1)``.

    Args:
        model: the model (put it in eval mode).
        src, src_lengths, max_len: as ``greedy_search``.
        prefix: target ids to force (no BOS, no EOS).
        beam_size, n_best, alpha, beta: as ``beam_search``.
        sample, temperature, top_k, generator: sampling (``beam_size`` must be 1).

    Returns:
        per sentence, in order, its list of hypotheses, best first.

    Raises:
        ValueError: bad shapes or options (named with the value).
    """
    limits = _check_search_input(src, src_lengths, max_len)
    _check_beam_options(beam_size, 1 if sample else n_best, alpha, beta, 0, None)
    _check_int("n_best", n_best, 1)
    if sample:
        _check_sampling(beam_size, temperature, top_k, None)
    ids = [int(i) for i in prefix]
    specials = (Vocab.pad_id, Vocab.bos_id, Vocab.eos_id)
    if any(i in specials or not 0 <= i < len(model.tgt_vocab) for i in ids):
        raise ValueError(
            f"prefix: expected target ids below {len(model.tgt_vocab)}, not PAD, BOS or EOS, "
            f"got {ids}"
        )
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        return _constrained(
            model,
            memory,
            state,
            src_lengths,
            limits,
            ids,
            beam_size,
            n_best,
            alpha,
            beta,
            temperature if sample else None,
            top_k,
            generator,
        )


def _constrained(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    src_lengths: Tensor,
    limits: Tensor,
    ids: list[int],
    beam_size: int,
    n_best: int,
    alpha: float,
    beta: float,
    temperature: float | None,
    top_k: int | None,
    generator: torch.Generator | None,
) -> list[list[Hypothesis]]:
    """``constrained_search`` from an encoded batch (options checked); ``temperature`` None:
    no sampling. Call it under ``torch.inference_mode``."""
    sample = temperature is not None
    device = memory.mask.device
    batch = memory.mask.shape[0]
    forced = torch.tensor(ids, dtype=torch.long, device=device)
    length = len(ids)
    limits = limits.clamp(min=length + 1)
    copies = n_best if sample else 1
    if copies > 1:  # independent draws: each sentence's rows repeated
        memory = memory.repeat(copies)
        state = state.reorder(torch.arange(batch, device=device).repeat_interleave(copies))
        limits = limits.repeat_interleave(copies)
    state, tokens, forced_lp, forced_weights = _forced_steps(model, memory, state, forced)
    if beam_size == 1:
        steps = _free_steps(
            model,
            memory,
            state,
            tokens,
            int(limits.max()) - length,
            limits - length,
            temperature,
            top_k,
            generator,
        )
        whole = (
            torch.cat([forced.expand(tokens.shape[0], length), steps[0]], 1),
            torch.cat([forced_lp, steps[1]], 1),
            torch.cat([forced_weights.to(steps[2].dtype), steps[2]], 1),
        )
        lengths = src_lengths.repeat_interleave(copies)
        flat = _hypotheses(*whole, lengths, limits)
        lists = [flat[b * copies : (b + 1) * copies] for b in range(batch)]
        return [sorted(hyps, key=lambda h: -h.score) for hyps in lists]
    lists = _beam_steps(
        model,
        memory,
        state,
        src_lengths,
        beam_size,
        limits - length,
        n_best,
        alpha,
        beta,
        0,
        None,
        start=tokens,
    )
    result = []
    for b, hyps in enumerate(lists):
        head = forced_weights[b, :, : int(src_lengths[b])].cpu()
        whole_hyps = [
            _rescored(
                Hypothesis(
                    ids + h.tokens,
                    h.score,
                    forced_lp[b].tolist() + h.log_probs,
                    torch.cat([head.to(h.attention.dtype), h.attention], 0),
                ),
                alpha,
                beta,
            )
            for h in hyps
        ]
        result.append(sorted(whole_hyps, key=lambda h: -h.score))
    return result


# -- symbols, unknown-word replacement ------------------------------------------------------


def source_symbols(model: Decodable, text: str) -> list[str]:
    """The symbols the model reads for ``text``, one per attention column ``S_real``: its
    tokens as written after the vocabulary's normalisation (unknown ones included) and
    ``"</s>"``."""
    tokens = model.src_vocab.tokenize(text)
    surface = model.src_vocab.surface_tokens(text)
    return [*(surface if len(surface) == len(tokens) else tokens), Vocab.EOS]


def replace_unknowns(
    symbols: Sequence[str], sources: Sequence[str], attention: Tensor, unk: str = Vocab.UNK
) -> list[str]:
    """Copy the most attended source symbol in place of each ``unk`` (Luong et al. 2015,
    "Addressing the Rare Word Problem in Neural Machine Translation", the copy model).

    Args:
        symbols: output symbols ``[T']``, one per row of ``attention`` (T' <= T).
        sources: the source symbols to copy from ``[S']``: the first S' columns; the columns
            after them (the source's EOS) are never copied.
        attention: ``[T, S_real]`` with S' <= S_real.
        unk: the unknown symbol.

    Returns:
        ``symbols`` with each ``unk`` replaced.

    Raises:
        ValueError: shapes that do not fit.
    """
    if attention.dim() != 2 or attention.shape[0] < len(symbols):
        raise ValueError(
            f"attention: expected [T >= {len(symbols)}, S], got {tuple(attention.shape)}"
        )
    if not 0 < len(sources) <= attention.shape[1]:
        return list(symbols)
    best = attention[:, : len(sources)].argmax(dim=1).tolist()
    return [sources[best[t]] if s == unk else s for t, s in enumerate(symbols)]


def hypothesis_symbols(
    model: Decodable, hypothesis: Hypothesis, source: str | None = None
) -> list[str]:
    """The output symbols of ``hypothesis``, one per token and attention row (EOS as
    ``"</s>"``). With ``source`` (the input text), each ``<unk>`` becomes the source token it
    attended to most (``replace_unknowns``)."""
    symbols = model.tgt_vocab.symbols_of(hypothesis.tokens, strip=False)
    if source is None:
        return symbols
    sources = source_symbols(model, source)[:-1]
    return replace_unknowns(symbols, sources, hypothesis.attention)


def hypothesis_text(model: Decodable, hypothesis: Hypothesis, source: str | None = None) -> str:
    """The output text of ``hypothesis`` as ``Vocab.decode`` writes it (up to EOS, without PAD
    and BOS); with ``source`` given, unknowns replaced (``hypothesis_symbols``)."""
    symbols = hypothesis_symbols(model, hypothesis, source)
    kept = []
    for token, symbol in zip(hypothesis.tokens, symbols, strict=True):
        if token == Vocab.eos_id:
            break
        if token not in (Vocab.pad_id, Vocab.bos_id):
            kept.append(symbol)
    return model.tgt_vocab.join(kept)
