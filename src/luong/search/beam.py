"""Beam search, batched over sentences x beams, with a pluggable choice of candidates.

Shapes: ``B`` batch, ``S`` source length, ``V`` target vocabulary, ``k`` beam size, ``n`` the
n-best size, ``R`` the decoder rows of a step, ``M`` the candidates of a row, ``P`` the
prefix length.

Beam search keeps ``k`` hypotheses per sentence as rows of one decoder batch: the open beams'
rows step the decoder, each sentence's beams attend to its keys together
(``Memory.for_beams``: one batched product, no copy of the keys per beam), and
``DecoderState.reorder`` follows the surviving beams after every step. Every step expands
the open beams of a sentence and keeps ``k`` candidates. A kept candidate that ends in EOS
is finished: it is scored with ``s(Y, X)`` (``luong.search.penalties``), joins the
sentence's pool of the ``n`` best, and its slot is refilled from the other beams at the next
step. At the first step only beam 0 of each sentence is open (the others are -inf), so the
beams are distinct from the start. Beams compete on log P (every open beam has the same
length at a step, so lp does not change their order); finished hypotheses and the final
n-best lists are ranked by ``s(Y, X)``.

Which candidates a step weighs and how it fills the ``k`` places is a ``Strategy``: plain
beam search (``TopK``, the default) proposes each open beam's ``k`` best tokens and keeps
the sentence's ``k`` best of them by log P (the ``k`` best of all ``k x V`` extensions);
lexically constrained search (``luong.search.constrained``) proposes more and deals the
places out otherwise. The rest of a step is the same for every strategy:

- The greedy path is kept: when the argmax extension of the beam that holds greedy
  search's prefix falls out of the ``k`` kept, it takes the ``k``-th place. So ``beam`` 1
  is greedy search, and with ``alpha = beta = 0`` the best hypothesis never has a lower
  log P than greedy search's (plain beam search may prune the greedy prefix and end
  lower).
- A sentence stops when its pool holds ``n`` hypotheses that no open beam can beat. An
  open beam with log P = L <= 0 can at best end at ``L / lp(limit)`` (log P only falls, lp
  grows with the length for alpha >= 0, and cp <= 0), so that is its bound; with alpha = 0
  it is L itself. At its limit, a sentence's open beams join the pool as hypotheses
  without EOS. Once half of the sentences still searched are done, their lists are
  collected and they leave every tensor of the loop (``Beams.select``).
- Only open beams are computed: the decoder runs on the rows of open beams of unfinished
  sentences. With pruning and ``n`` 1, greedy search runs first on the same encoding
  (``greedy_floor``); an open beam whose bound is below greedy's score cannot win, and is
  dropped. Beams that cannot win only ever push out other beams that cannot win, so
  dropping them leaves the best hypothesis as it is.
- A prefix (target ids) is teacher-forced first (``luong.search.prefix``): every
  hypothesis starts with it, and its log-probabilities, attention and length count in the
  scores as any other token's. An output has at least one token after it.

The loop's state is one ``Beams`` value (dense ``[B, k]`` slots per sentence, the pool, the
steps taken, each sentence's memory, prefix and strategy state); ``Beams.select(keep)``
gives the state of some of its sentences, so the sentences that are done leave the loop in
one call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import torch
from torch import Tensor

from luong.common.errors import LuongError
from luong.config.search import SearchOptions
from luong.data.vocab import Vocab
from luong.model.ensemble import Columns, Decodable, decoder_step
from luong.model.seq2seq import Seq2Seq
from luong.search.greedy import greedy_steps
from luong.search.hypothesis import (
    NAN_SCORES,
    AnyMemory,
    AnyState,
    Hypothesis,
    MaxLen,
    next_token_log_probs,
)
from luong.search.penalties import (
    coverage_penalty,
    hypothesis_score,
    length_penalties,
    length_penalty,
)
from luong.search.prefix import Forced, force_prefix, search_inputs
from luong.search.rules import StepRules

__all__ = [
    "Beams",
    "Pool",
    "Proposal",
    "Step",
    "Strategy",
    "TopK",
    "beam_search",
    "greedy_floor",
    "search_beams",
]


def beam_search(
    model: Seq2Seq,
    src: Tensor,
    src_lengths: Tensor,
    options: SearchOptions,
    max_len: MaxLen | None = None,
    *,
    prune: bool = True,
) -> list[list[Hypothesis]]:
    """Beam search over a batch: ``options.beam`` beams per sentence, all sentences in one
    tensor program (``search_beams``).

    Args:
        model: the model (put it in eval mode for deterministic output).
        src: source ids ``[B, S]`` (EOS-terminated, padded).
        src_lengths: real lengths ``[B]``.
        options: beam, nbest, alpha, beta, the step rules' (``luong.search.rules``), max_len,
            prefix and combine are read (not sampling: ``luong.search.sampling``).
        max_len: the most tokens an output may have, EOS included: an int, or a limit per
            sentence ``[B]``; None: ``options.max_len``, or each sentence's
            ``default_max_len``.
        prune: drop the beams that cannot beat greedy search's hypothesis (``greedy_floor``;
            with ``nbest`` 1 only): the best hypothesis is the same either way, fewer rows
            are computed.

    Returns:
        per sentence, in order, its n-best list (``search_beams``).

    Raises:
        TypeError: ``options`` is not a ``SearchOptions``.
        ValueError: bad shapes, a limit below 1, a prefix outside the target vocabulary or
            ``options.sample``.
    """
    limits, ids = search_inputs(model, src, src_lengths, options, max_len, sample=False)
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
        return search_beams(model, memory, state, src_lengths, limits, options, ids, prune=prune)


def search_beams(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    src_lengths: Tensor,
    limits: Tensor,
    options: SearchOptions,
    prefix: list[int],
    *,
    prune: bool = True,
    strategy: Strategy | None = None,
    columns: Columns | None = None,
) -> list[list[Hypothesis]]:
    """Beam search from an encoded batch (``model.encode``); call it under
    ``torch.inference_mode``. The module docstring says how.

    Args:
        model, memory, state: the model (or ensemble) and its encoding of the batch.
        src_lengths: real source lengths ``[B]``.
        limits: the most tokens of each output ``[B]``, prefix and EOS included.
        options: beam, nbest, alpha, beta, combine and the step rules (``StepRules``: EOS
            forbidden before min_len, up to each sentence's limit minus one; no repeated
            n-grams) are read.
        prefix: the target ids every output starts with (teacher-forced).
        prune: as ``beam_search``.
        strategy: which candidates each step weighs and how it keeps ``k`` of them, with its
            state for the batch (``Strategy``); None: plain beam search (``TopK``).
        columns: a shortlist's (``luong.model.ensemble.Columns``): the search runs over those
            target ids only, its tokens (``prefix`` and the hypotheses' included) columns.

    Returns:
        per sentence, in order, its n-best list: distinct hypotheses sorted by score, best
        first; ``n`` of them unless the vocabulary is too small to fill the beam, and never
        none (an ended hypothesis is kept whatever its score). Each score is recomputed in
        float64 from the hypothesis' own ``log_probs`` and ``attention``
        (``hypothesis_score``).

    Raises:
        ValueError: the model's scores are NaN (weights that overflow).
    """
    strategy = TopK() if strategy is None else strategy
    batch, source_len = memory.mask.shape
    limits = limits.clamp(min=len(prefix) + 1)
    rules = StepRules.start(options, limits)
    off_greedy = strategy.off_greedy()
    floor = None
    # Greedy search knows the minimum length, not a rule that reads the outputs.
    if prune and options.nbest == 1 and options.beam > 1 and not (prefix or rules.reads_outputs):
        floor = greedy_floor(model, memory, state, limits, rules.min_lens, options, columns)
        if off_greedy is not None:  # greedy's hypothesis is no output there
            floor = floor.masked_fill(off_greedy, float("-inf"))
    dtype = torch.promote_types(memory.dtype, torch.float32)  # the search's (next_token_...)
    if options.beta:  # the coverage penalty's; without it, no sum to add up and reorder
        coverage = torch.zeros(batch, source_len, dtype=memory.dtype, device=memory.mask.device)
        state = state.with_coverage(coverage)
    forced, state = force_prefix(model, memory, state, prefix, options.combine, dtype, columns)
    beams = Beams.start(options, src_lengths, limits, rules, floor, memory, forced, strategy)
    return _run(model, beams, state, options, columns)


def _run(
    model: Decodable,
    beams: Beams,
    state: AnyState,
    options: SearchOptions,
    columns: Columns | None,
) -> list[list[Hypothesis]]:
    """The search loop (``search_beams``)."""
    k = options.beam
    sentence_count = beams.alive.shape[0]
    lists: dict[int, list[Hypothesis]] = {}  # by original sentence, as each is collected
    live = torch.arange(sentence_count, device=beams.alive.device) * k  # each row's slot
    tokens = beams.forced.next
    step_memory = beams.memory
    first, last = beams.forced.length, int(beams.limits.max())
    for t in range(first, last):  # t tokens so far, the prefix included
        logits, state, weights = decoder_step(
            model, tokens, state, step_memory, options.combine, columns
        )
        coverage = state.coverage if options.beta else None
        beams, broken = beams.advance(
            t, next_token_log_probs(logits), weights, coverage, live, options
        )
        # No open beam can beat the n-th in the pool: the sentence is done.
        done = beams.done(t)
        if t == last - 1 or bool(done.all() | broken):
            if bool(broken):
                raise LuongError(NAN_SCORES.format(step=t + 1))
            break
        beams = beams.close(done)
        remaining = int((~done).sum())
        if 2 * remaining <= done.shape[0]:  # the done sentences leave the loop
            finished = beams.select(done.nonzero().squeeze(1))
            lists.update(zip(finished.ids.tolist(), finished.collect(options), strict=True))
            beams = beams.select((~done).nonzero().squeeze(1))
        next_live = torch.isfinite(beams.alive).view(-1).nonzero().squeeze(1)  # [R']
        if next_live.numel() == 0:  # no open beam anywhere (scores that are not numbers)
            break
        step = beams.history[-1]
        state = state.reorder(step.row.view(-1)[next_live])
        tokens = step.token.view(-1)[next_live]
        # The new rows read each sentence's memory as beams: every slot, or the open ones.
        everyone = next_live.shape[0] == beams.alive.numel()
        step_memory = beams.memory.for_beams(k, None if everyone else next_live)
        live = next_live
    lists.update(zip(beams.ids.tolist(), beams.collect(options), strict=True))
    return [lists[i] for i in range(sentence_count)]


class Proposal(Protocol):
    """A strategy's candidates for one step: per open row ``[R, M]`` a token and its
    log-probability (-inf: no candidate), a row's own best among them; how ``k`` of them
    are kept per sentence; and the strategy's state after the step."""

    @property
    def token(self) -> Tensor: ...

    @property
    def log_prob(self) -> Tensor: ...

    def allocate(self, score: Tensor, live: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """The ``k`` places of each sentence: from the candidates' log P ``[B, k x M]``
        (slot-major, as the dense ``[B * k]`` slots; row r of the proposal is slot
        ``live[r]``; -inf for a closed slot), the kept log P and their places ``[B, k]``,
        in the order they take the slots."""
        ...

    def follow(self, row: Tensor, column: Tensor) -> tuple[Strategy, Tensor | None]:
        """The strategy's state after the step, each slot ``[B, k]`` holding candidate
        ``column`` of the proposal's row ``row``; and the slots whose hypotheses are not
        complete ``[B, k]`` (ended there, they rank below every complete one), None for
        none."""
        ...


class Strategy(Protocol):
    """Which candidates a beam search weighs and how it keeps ``k`` of them
    (``search_beams``), with whatever state per sentence that takes: it proposes each
    step's candidates (``Proposal``), and ``select`` gives the state of some of its
    sentences, as ``Beams.select``."""

    def off_greedy(self) -> Tensor | None:
        """The sentences ``[B]`` where greedy search's hypothesis is no output of this
        search: no greedy path is kept there and greedy's bound prunes nothing; None for
        none."""
        ...

    def propose(self, log_probs: Tensor, live: Tensor, k: int) -> Proposal:
        """The candidates of the open rows, from their next-token ``log_probs`` ``[R, V]``
        (row r is slot ``live[r]`` of the dense ``[B * k]`` layout); the tokens the strategy
        forbids are set to -inf in ``log_probs`` first, in place."""
        ...

    def select(self, keep: Tensor) -> Strategy:
        """The state of the sentences ``keep`` ``[B']``, in that order."""
        ...


@dataclass(frozen=True)
class TopK:
    """Plain beam search's strategy: each open row proposes its ``k`` best tokens, and each
    sentence keeps the ``k`` best of its rows' by log P. Those are the ``k`` best of all its
    ``k x V`` extensions (adding a row's log P keeps the row's order). It keeps no state
    (nor need a subclass that changes ``propose``)."""

    def off_greedy(self) -> None:
        return None

    def propose(self, log_probs: Tensor, live: Tensor, k: int) -> Proposal:
        row_lp, row_token = log_probs.topk(min(k, log_probs.shape[-1]), dim=1)  # [R, w]
        return _Best(row_token, row_lp, self)

    def select(self, keep: Tensor) -> TopK:
        return self


@dataclass(frozen=True)
class _Best:
    """``TopK``'s proposal: each row's best tokens ``[R, w]`` and their log-probabilities;
    the strategy it came from (a subclass of ``TopK`` stays itself)."""

    token: Tensor
    log_prob: Tensor
    strategy: TopK

    def allocate(self, score: Tensor, live: Tensor, k: int) -> tuple[Tensor, Tensor]:
        values, index = score.topk(k, dim=1)
        return values, index

    def follow(self, row: Tensor, column: Tensor) -> tuple[TopK, None]:
        return self.strategy, None


def greedy_floor(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    limits: Tensor,
    min_lens: Tensor,
    options: SearchOptions,
    columns: Columns | None = None,
) -> Tensor:
    """The log P ``[B]`` below which an open beam cannot beat greedy search's hypothesis:
    ``s(G) * lp(limit)``, less a margin for rounding; -inf where greedy's hypothesis ends
    before its sentence's ``min_lens`` ``[B]`` (beam search then follows another path).
    ``options``: alpha, beta and combine are read; ``columns``: a shortlist's."""
    tokens, log_probs, weights = greedy_steps(
        model, memory, state, limits, options.combine, columns
    )
    steps = tokens.shape[1]
    is_eos = (tokens == Vocab.eos_id) & (
        torch.arange(steps, device=tokens.device) < limits[:, None]
    )
    ended = is_eos.any(dim=1)
    length = torch.where(ended, is_eos.int().argmax(dim=1) + 1, limits.clamp(max=steps))  # [B]
    within = torch.arange(steps, device=tokens.device) < length[:, None]  # [B, T]
    log_p = torch.where(within, log_probs, 0.0).sum(dim=1)
    score = log_p / length_penalties(length, options.alpha, log_p.dtype)
    if options.beta:
        coverage = (weights * within[:, :, None]).sum(dim=1)  # [B, S]
        score = score + coverage_penalty(coverage, memory.mask, options.beta).to(score.dtype)
    floor = score * length_penalties(limits, options.alpha, score.dtype)
    floor = floor - 1e-4 * (1.0 + floor.abs())
    return floor.masked_fill(ended & (length <= min_lens), float("-inf"))


@dataclass(frozen=True)
class Step:
    """What one search step leaves for the backtracking, per slot ``[B, k]``: its token, its
    parent slot, the token's log-probability and the parent's row in this step's batch; and
    the attention of the batch's rows ``[R, S]``."""

    token: Tensor
    parent: Tensor
    token_lp: Tensor
    row: Tensor
    weights: Tensor

    def select(self, sentences: Tensor) -> Step:
        """The step of ``sentences`` ``[B']``; ``row`` still points into ``weights``."""
        return Step(
            self.token[sentences],
            self.parent[sentences],
            self.token_lp[sentences],
            self.row[sentences],
            self.weights,
        )


@dataclass(frozen=True)
class Pool:
    """The n best ended hypotheses per sentence: score ``[B, n]`` sorted best first, filled
    ``[B, n]`` (False: an empty place), and where each ended: the step of the loop and the
    slot within that step's top k. An ended hypothesis is kept whatever its score (-inf,
    NaN): it ranks below every other, above an empty place, so a sentence's list is never
    empty."""

    score: Tensor
    filled: Tensor
    step: Tensor
    slot: Tensor

    @staticmethod
    def empty(batch: int, n: int, dtype: torch.dtype, device: torch.device) -> Pool:
        return Pool(
            torch.full((batch, n), float("-inf"), dtype=dtype, device=device),
            torch.zeros(batch, n, dtype=torch.bool, device=device),
            torch.zeros(batch, n, dtype=torch.long, device=device),
            torch.zeros(batch, n, dtype=torch.long, device=device),
        )

    def select(self, sentences: Tensor) -> Pool:
        """The pool of ``sentences`` ``[B']``."""
        return Pool(
            self.score[sentences],
            self.filled[sentences],
            self.step[sentences],
            self.slot[sentences],
        )

    def add(self, score: Tensor, ended: Tensor, step: int) -> Pool:
        """This pool with the candidates score ``[B, k]`` that ended (``ended`` ``[B, k]``)
        at ``step`` merged in."""
        batch, n = self.score.shape
        slots = torch.arange(score.shape[1], device=score.device).expand(batch, -1)
        merged = torch.cat([self.score, score], dim=1)
        filled = torch.cat([self.filled, ended], dim=1)
        lowest = torch.finfo(merged.dtype).min
        rank = torch.where(merged.isnan() | merged.isneginf(), lowest, merged)
        _, order = torch.where(filled, rank, float("-inf")).topk(n, dim=1)
        return Pool(
            merged.gather(1, order),
            filled.gather(1, order),
            torch.cat([self.step, torch.full_like(slots, step)], 1).gather(1, order),
            torch.cat([self.slot, slots], 1).gather(1, order),
        )


@dataclass(frozen=True)
class _Kept:
    """The candidates a step keeps, per slot ``[B, k]``: log P, parent slot, token, the
    parent's row in the step's batch, the column in the proposal; and each dense slot's row
    ``[B * k]`` (None: row r is slot r)."""

    score: Tensor
    parent: Tensor
    token: Tensor
    row: Tensor
    column: Tensor
    position: Tensor | None


@dataclass(frozen=True)
class Beams:
    """The beam loop's state for the ``B`` sentences it still searches, ``k`` slots each.

    ids ``[B]``: each sentence's place in the search call; src_lengths ``[B]``; limits
    ``[B]``: the most tokens of an output (prefix and EOS included); rules: the step rules
    (``luong.search.rules``: EOS forbidden before a minimum length, ...); last_lp ``[B]``: lp
    at the limit (an open beam with log P L ends at best at L / last_lp); alive ``[B, k]``:
    the log P of the open beams (the prefix's included), -inf for a closed slot; greedy
    ``[B]``: the slot that holds greedy search's path, -1 for none; floor ``[B]``: the
    pruning bound (``greedy_floor``), None for no pruning; pool: the ended hypotheses;
    history: the steps taken; memory: the encoding, a row per sentence; forced: the prefix;
    strategy: the search's own way and its state (``Strategy``).
    """

    ids: Tensor
    src_lengths: Tensor
    limits: Tensor
    rules: StepRules
    last_lp: Tensor
    alive: Tensor
    greedy: Tensor
    floor: Tensor | None
    pool: Pool
    history: tuple[Step, ...]
    memory: AnyMemory
    forced: Forced
    strategy: Strategy

    @staticmethod
    def start(
        options: SearchOptions,
        src_lengths: Tensor,
        limits: Tensor,
        rules: StepRules,
        floor: Tensor | None,
        memory: AnyMemory,
        forced: Forced,
        strategy: Strategy,
    ) -> Beams:
        """Beam 0 of each sentence open (with the prefix's log P), the others closed; the
        greedy path in slot 0, except where the strategy is ``off_greedy``."""
        batch, k = limits.shape[0], options.beam
        dtype = forced.log_probs.dtype
        device = limits.device
        alive = torch.full((batch, k), float("-inf"), dtype=dtype, device=device)
        alive[:, 0] = forced.log_probs.sum(dim=1)
        greedy = torch.zeros(batch, dtype=torch.long, device=device)
        off_greedy = strategy.off_greedy()
        if off_greedy is not None:
            greedy = greedy.masked_fill(off_greedy, -1)
        return Beams(
            ids=torch.arange(batch, device=device),
            src_lengths=src_lengths,
            limits=limits,
            rules=rules,
            last_lp=length_penalties(limits, options.alpha, dtype),
            alive=alive,
            greedy=greedy,
            floor=floor,
            pool=Pool.empty(batch, options.nbest, dtype, device),
            history=(),
            memory=memory,
            forced=forced,
            strategy=strategy,
        )

    def select(self, keep: Tensor) -> Beams:
        """The state of the sentences ``keep`` ``[B']``, in that order."""
        return Beams(
            ids=self.ids[keep],
            src_lengths=self.src_lengths[keep],
            limits=self.limits[keep],
            rules=self.rules.select(keep),
            last_lp=self.last_lp[keep],
            alive=self.alive[keep],
            greedy=self.greedy[keep],
            floor=None if self.floor is None else self.floor[keep],
            pool=self.pool.select(keep),
            history=tuple(step.select(keep) for step in self.history),
            memory=self.memory.select(keep),
            forced=self.forced.select(keep),
            strategy=self.strategy.select(keep),
        )

    def advance(
        self,
        t: int,
        log_probs: Tensor,
        weights: Tensor,
        coverage: Tensor | None,
        live: Tensor,
        options: SearchOptions,
    ) -> tuple[Beams, Tensor]:
        """One step: from the open beams' next-token ``log_probs`` ``[R, V]`` (row r is slot
        ``live[r]`` of the dense ``[B * k]`` layout), their attention ``weights`` ``[R, S]``
        and ``coverage`` ``[R, S]`` after the step (with beta), the ``t + 1``-th tokens: the
        strategy's candidates, the ``k`` it keeps, the greedy path, the ends. Returns the
        state after it and whether a score is NaN (a 0-dim bool tensor: the caller checks
        it at its next sync)."""
        k = self.alive.shape[1]
        outputs = self.outputs()[live] if self.rules.reads_outputs else None
        self.rules.apply(log_probs, t, torch.div(live, k, rounding_mode="floor"), outputs)
        proposal = self.strategy.propose(log_probs, live, k)
        kept = self._keep(proposal, live)
        on_greedy = self._keep_greedy(kept, log_probs, live)
        strategy, short = proposal.follow(kept.row, kept.column)
        advanced = self._end(t, kept, on_greedy, log_probs, weights, coverage, options, short)
        broken = torch.isnan(proposal.log_prob).any()  # top-k ranks NaN first
        return replace(advanced, strategy=strategy), broken

    def _keep(self, proposal: Proposal, live: Tensor) -> _Kept:
        """The ``k`` candidates each sentence keeps (``Proposal.allocate``), each with its
        parent slot, its row in this step's batch and its column in the proposal."""
        batch, k = self.alive.shape
        device = live.device
        rows_now, dense = live.shape[0], batch * k
        m = proposal.token.shape[1]
        candidates = self.alive.view(-1)[live][:, None] + proposal.log_prob  # [R, M]
        if rows_now == dense:
            position = None  # row r is slot r
        else:
            candidates = candidates.new_full((dense, m), float("-inf")).index_copy_(
                0, live, candidates
            )
            position = torch.zeros(dense, dtype=torch.long, device=device)
            position[live] = torch.arange(rows_now, device=device)
        score, index = proposal.allocate(candidates.view(batch, k * m), live, k)  # [B, k]
        parent = torch.div(index, m, rounding_mode="floor")
        column = index - parent * m
        source = torch.arange(batch, device=device)[:, None] * k + parent  # dense
        row = source if position is None else position[source]  # ... its row in this step
        token = proposal.token[row, column]
        return _Kept(score, parent, token, row, column, position)

    def _keep_greedy(self, kept: _Kept, log_probs: Tensor, live: Tensor) -> Tensor:
        """Keep the greedy path in ``kept`` (in place): its argmax extension takes the last
        slot when it fell out. Returns which kept candidates follow it ``[B, k]``."""
        batch, k = self.alive.shape
        score, parent, token = kept.score, kept.parent, kept.token
        row, column = kept.row, kept.column
        greedy = self.greedy
        g_slot = greedy.clamp(min=0)
        g_dense = torch.arange(batch, device=live.device) * k + g_slot
        g_row = g_dense if kept.position is None else kept.position[g_dense]
        g_token = log_probs[g_row].argmax(dim=-1)  # [B]
        g_kept = (greedy >= 0)[:, None] & (parent == g_slot[:, None]) & (token == g_token[:, None])
        missing = (greedy >= 0) & ~g_kept.any(dim=1)
        g_score = self.alive.view(-1)[g_dense] + log_probs[g_row, g_token]
        score[:, -1] = torch.where(missing, g_score, score[:, -1])
        parent[:, -1] = torch.where(missing, g_slot, parent[:, -1])
        token[:, -1] = torch.where(missing, g_token, token[:, -1])
        row[:, -1] = torch.where(missing, g_row, row[:, -1])
        # The greedy path is kept only where the strategy asks nothing of the output (not
        # ``Strategy.off_greedy``): any column's state will do.
        column[:, -1] = torch.where(missing, 0, column[:, -1])
        g_kept[:, -1] |= missing
        return g_kept

    def _end(
        self,
        t: int,
        kept: _Kept,
        on_greedy: Tensor,
        log_probs: Tensor,
        weights: Tensor,
        coverage: Tensor | None,
        options: SearchOptions,
        short: Tensor | None,
    ) -> Beams:
        """The state after the step that keeps ``kept`` (``on_greedy``: those on the greedy
        path): the candidates that end (EOS, or the limit) scored into the pool, the rest
        open unless pruned, the step recorded. ``short``: the slots whose hypotheses rank
        below every complete one (``Proposal.follow``)."""
        score, token, row = kept.score, kept.token, kept.row
        token_lp = log_probs[row, token]  # [B, k]
        live_slot = torch.isfinite(score)
        # At its limit, a sentence's open beams count as hypotheses without EOS.
        ends = live_slot & ((token == Vocab.eos_id) | (self.limits <= t + 1)[:, None])
        final = score / length_penalty(t + 1, options.alpha)
        if options.beta:
            assert coverage is not None  # tracked from the start (search_beams)
            penalty = coverage_penalty(coverage[row], self.memory.mask[:, None, :], options.beta)
            final = final + penalty.to(final.dtype)
        if short is not None:  # -inf: below every score, above an empty place of the pool
            final = final.masked_fill(short, float("-inf"))
        step_index = len(self.history)
        pool = self.pool.add(torch.where(ends, final, float("-inf")), ends, step_index)
        alive = torch.where(ends, float("-inf"), score)
        g_on = on_greedy & ~ends
        greedy = torch.where(g_on.any(dim=1), g_on.int().argmax(dim=1), -1)
        if self.floor is not None:  # beams that cannot beat greedy's hypothesis
            alive = alive.masked_fill((alive < self.floor[:, None]) & ~g_on, float("-inf"))
        step = Step(token, kept.parent, token_lp, row, weights)
        return replace(self, alive=alive, greedy=greedy, pool=pool, history=(*self.history, step))

    def outputs(self) -> Tensor:
        """Each slot's tokens so far ``[B * k, P + steps]``, the prefix's included, followed
        back through the steps (a closed slot's are those of the hypothesis it last held)."""
        batch, k = self.alive.shape
        device = self.alive.device
        tokens = torch.zeros(batch, k, len(self.history), dtype=torch.long, device=device)
        slot = torch.arange(k, device=device).expand(batch, k)
        for t in range(len(self.history) - 1, -1, -1):
            step = self.history[t]
            tokens[:, :, t] = step.token.gather(1, slot)
            slot = step.parent.gather(1, slot)
        prefix = self.forced.tokens.expand(batch, k, self.forced.length)
        return torch.cat([prefix, tokens], dim=2).view(batch * k, -1)

    def done(self, t: int) -> Tensor:
        """Whether each sentence is done after ``t + 1`` tokens ``[B]``: its pool holds ``n``
        hypotheses that no open beam can beat, or it reached its limit."""
        best_open = self.alive.max(dim=1).values / self.last_lp
        return (self.pool.score[:, -1] >= best_open) | (self.limits <= t + 1)

    def close(self, done: Tensor) -> Beams:
        """This state with the beams of the sentences ``done`` ``[B]`` closed."""
        return replace(
            self,
            alive=self.alive.masked_fill(done[:, None], float("-inf")),
            greedy=self.greedy.masked_fill(done, -1),
        )

    def collect(self, options: SearchOptions) -> list[list[Hypothesis]]:
        """Each sentence's n-best list: each pooled hypothesis followed back through the
        steps, the prefix put in front, scored (``hypothesis_score``) and sorted on the
        host."""
        pool, history = self.pool, self.history
        batch, n = pool.score.shape
        steps = len(history)
        source_len = history[0].weights.shape[-1]
        tokens = pool.slot.new_zeros(batch, n, steps)
        log_probs = pool.score.new_zeros(batch, n, steps)
        attention = history[0].weights.new_zeros(batch, n, steps, source_len)
        slot = pool.slot
        for t in range(steps - 1, -1, -1):
            step = history[t]
            slot = torch.where(pool.step == t, pool.slot, slot)  # a hypothesis ending here
            tokens[:, :, t] = step.token.gather(1, slot)
            log_probs[:, :, t] = step.token_lp.gather(1, slot)
            attention[:, :, t] = step.weights[step.row.gather(1, slot)]
            slot = step.parent.gather(1, slot)
        ends, filled = pool.step.tolist(), pool.filled.tolist()
        tokens_list, log_probs_list = tokens.tolist(), log_probs.tolist()
        attention = attention.cpu()
        prefix = self.forced.tokens.tolist()
        prefix_lps = self.forced.log_probs.tolist()
        prefix_weights = self.forced.weights.cpu()
        source_lengths = self.src_lengths.tolist()
        result: list[list[Hypothesis]] = []
        for b in range(batch):
            real = source_lengths[b]
            head = prefix_weights[b, :, :real].to(attention.dtype)
            hyps = []
            for i in range(n):
                if not filled[b][i]:
                    continue
                length = ends[b][i] + 1
                lps = prefix_lps[b] + log_probs_list[b][i][:length]
                att = torch.cat([head, attention[b, i, :length, :real]], 0)
                score = hypothesis_score(lps, att, options.alpha, options.beta)
                hyps.append(Hypothesis(prefix + tokens_list[b][i][:length], score, lps, att))
            hyps.sort(key=lambda h: -h.score)
            result.append(hyps)
        return result
