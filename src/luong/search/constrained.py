"""Lexically constrained beam search with dynamic beam allocation, after Post and Vilar
(2018), "Fast Lexically Constrained Decoding with Dynamic Beam Allocation for Neural Machine
Translation".

Shapes: ``B`` batch, ``k`` beam size, ``V`` target vocabulary, ``R`` the decoder rows of a
step, ``C`` the constraint tokens of a sentence (all its phrases one after the other, padded
to the batch's most), ``D`` its distinct phrases, ``L`` the longest phrase, ``M`` the
candidates of a row.

A sentence's constraints are phrases, each a list of target ids; a phrase listed n times
must appear n times. Each hypothesis tracks which constraint tokens it has met: a token that
starts an unmet phrase meets that phrase's first token, and the phrase is then *in
progress*: the next token must continue it, or every token of it met so far is unmet again
(the phrase is abandoned; the token may start another phrase). A hypothesis may end (EOS)
only when it has met every constraint token.

Every step, each open hypothesis proposes its ``k`` best tokens (as beam search) and the
tokens that advance its constraints (the continuation of the phrase in progress, or the
first token of each unmet phrase). The candidates of a sentence are then put into banks by
the number of constraint tokens they meet, and the beam's ``k`` places are dealt round-robin
over the banks, the bank that meets the most first, each bank giving its best candidate by
log P in turn (an empty bank's turn passes to the next): so the hypotheses that advance the
constraints keep places in the beam even when the model ranks them low. A sentence without
constraints has one bank and is beam search exactly (``luong.search.beam``: the same
candidates, the same greedy path, the same pruning, the same scores).

With ``exact``, a token that would complete an occurrence of a phrase beyond its listed count
is forbidden too, so each phrase appears exactly as often as listed (occurrences counted in
the output as written, overlapping ones included; a phrase that contains another cannot be
held exactly: such a sentence's list then comes from its limit). With a sentencepiece
vocabulary a phrase's first piece may be any piece that ends with its text
(``first_alternatives``), so a phrase glued to punctuation counts. Scores are beam
search's (``s(Y, X)``, ``luong.search.penalties``); the prefix's tokens do not count as
constraint tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from luong.ensemble import Decodable, decoder_step
from luong.errors import LuongError, LuongTypeError
from luong.search.beam import Beams, Step, greedy_floor
from luong.search.hypothesis import (
    NAN_SCORES,
    AnyMemory,
    AnyState,
    Hypothesis,
    next_token_log_probs,
)
from luong.search.penalties import coverage_penalty, length_penalty
from luong.search.prefix import force_prefix
from luong.search_options import SearchOptions
from luong.vocab import Vocab

__all__ = [
    "Phrases",
    "constrained_search",
    "constraint_ids",
    "count_occurrences",
    "first_alternatives",
]

Constraints = Sequence[Sequence[Sequence[int]]]
"""Per sentence, its phrases, each a list of target ids."""


def constraint_ids(vocab: Vocab, constraints: Sequence[Sequence[str]]) -> list[list[list[int]]]:
    """Phrase strings -> target ids, per sentence: each phrase encoded alone
    (``vocab.encode``, no EOS). With a sentencepiece vocabulary a phrase is encoded as
    words are, so its first piece carries the word-start marker (``▁``): that is how the
    search proposes it, a word of its own (``"Datei"`` is ``▁Datei``); a bare ``▁`` piece
    before the phrase is dropped. The search also counts the phrase where its first piece
    is glued to what comes before it (``first_alternatives``: ``»%s«``), or ends a longer
    word: a phrase is met where it is in the output's text.

    Raises:
        TypeError: not a list of lists of strings.
        ValueError: an empty phrase, or one with a symbol the target vocabulary cannot
            produce (named with its sentence's 0-based index).
    """
    if isinstance(constraints, str) or not isinstance(constraints, Sequence):
        raise LuongTypeError(
            f"constraints: expected a list of lists of phrases, got {constraints!r:.60}"
        )
    result = []
    for i, phrases in enumerate(constraints):
        if isinstance(phrases, str) or not isinstance(phrases, Sequence):
            raise LuongTypeError(
                f"constraints[{i}]: expected a list of phrase strings, got {phrases!r:.60}"
            )
        ids = []
        for phrase in phrases:
            if not isinstance(phrase, str):
                raise LuongTypeError(
                    f"constraints[{i}]: expected phrase strings, got {phrase!r:.60}"
                )
            if not phrase.strip():
                raise LuongError(f"constraints[{i}]: expected non-empty phrases, got {phrase!r}")
            unknown = vocab.unknown(phrase)
            if unknown:
                raise LuongError(
                    f"constraints[{i}]: the phrase {phrase!r:.80} has symbols the target "
                    f"vocabulary cannot produce: {unknown[:5]}"
                )
            encoded = vocab.encode(phrase, eos=False)
            if len(encoded) > 1 and vocab.symbol(encoded[0]) == WORD_START:
                encoded = encoded[1:]  # a bare word start: the phrase may be glued on
            ids.append(encoded)
        result.append(ids)
    return result


WORD_START = "\u2581"  # sentencepiece's mark of a piece that starts a word


def first_alternatives(vocab: Vocab, first: int) -> list[int]:
    """The pieces that may stand for a phrase's first piece ``first`` in a sentencepiece
    vocabulary: itself, and every piece whose text ends with its text, the word-start mark
    aside (for ``▁%``: ``%``, ``▁»%``, ``(%``): sentencepiece glues punctuation to a
    placeholder (``»%s«`` is ``▁»% s «``), and the phrase is in the output's text all the
    same. Other vocabularies: ``[first]``."""
    symbol = vocab.symbol(first)
    text = symbol.removeprefix(WORD_START)
    if vocab.tokens != "subword" or not text:
        return [first]
    start = len(Vocab.SPECIALS)
    others = [i for i, s in enumerate(vocab.symbols, start) if s.endswith(text)]
    return [first, *(i for i in others if i != first)]


def count_occurrences(tokens: Sequence[int], phrase: Sequence[int]) -> int:
    """How often ``phrase`` occurs in ``tokens`` (overlapping occurrences counted)."""
    n = len(phrase)
    return sum(1 for i in range(len(tokens) - n + 1) if list(tokens[i : i + n]) == list(phrase))


@dataclass(frozen=True)
class Phrases:
    """The batch's constraints as tables. Per sentence ``[B, C]``: token (-1 for padding),
    first (a phrase's first token), last (a phrase's last token), start (the place of its
    phrase's first token); total ``[B]``: its constraint tokens. For ``exact``, per distinct
    phrase ``[B, D]``: end (its last token, -1 for padding), count (how often it is listed),
    head ``[B, D, L - 1]``: its tokens between the first and the last, right-aligned, -1
    elsewhere (any token matches), lead ``[B, D]``: where its first token is among the last
    ``L - 1`` tokens (-1 for a phrase of one token), opening ``[B, D, A]``: the tokens that
    may stand for its first (``first_alternatives``), banned ``[B, D, A]``: the tokens that
    complete it (its last, or a one-token phrase's openings). alts ``[B, C, A]``: at a
    phrase's first place, the tokens that may start it (-1: padding)."""

    token: Tensor
    first: Tensor
    last: Tensor
    start: Tensor
    total: Tensor
    end: Tensor
    count: Tensor
    head: Tensor
    lead: Tensor
    opening: Tensor
    banned: Tensor
    alts: Tensor

    @staticmethod
    def of(constraints: Constraints, device: torch.device, vocab: Vocab | None = None) -> Phrases:
        """The tables of ``constraints``; with ``vocab``, a phrase's first token may be any
        of its ``first_alternatives``."""
        batch = len(constraints)
        openings: dict[int, list[int]] = {}

        def opening_of(first: int) -> list[int]:
            if first not in openings:
                openings[first] = [first] if vocab is None else first_alternatives(vocab, first)
            return openings[first]

        many = max((len(opening_of(p[0])) for ps in constraints for p in ps), default=1)
        flat = [[t for phrase in phrases for t in phrase] for phrases in constraints]
        width = max((len(f) for f in flat), default=0)
        distinct = [sorted({tuple(p) for p in phrases}) for phrases in constraints]
        kinds = max((len(d) for d in distinct), default=0)
        longest = max((len(p) for d in distinct for p in d), default=1)
        token = torch.full((batch, width), -1, dtype=torch.long)
        first = torch.zeros(batch, width, dtype=torch.bool)
        last = torch.zeros(batch, width, dtype=torch.bool)
        start = torch.zeros(batch, width, dtype=torch.long)
        end = torch.full((batch, kinds), -1, dtype=torch.long)
        count = torch.zeros(batch, kinds, dtype=torch.long)
        head = torch.full((batch, kinds, longest - 1), -1, dtype=torch.long)
        lead = torch.full((batch, kinds), -1, dtype=torch.long)
        opening = torch.full((batch, kinds, many), -1, dtype=torch.long)
        banned = torch.full((batch, kinds, many), -1, dtype=torch.long)
        alts = torch.full((batch, width, many), -1, dtype=torch.long)
        for b, phrases in enumerate(constraints):
            place = 0
            for phrase in phrases:
                n = len(phrase)
                token[b, place : place + n] = torch.tensor(phrase, dtype=torch.long)
                first[b, place] = True
                others = opening_of(phrase[0])
                alts[b, place, : len(others)] = torch.tensor(others, dtype=torch.long)
                last[b, place + n - 1] = True
                start[b, place : place + n] = place
                place += n
            for d, phrase in enumerate(distinct[b]):
                end[b, d] = phrase[-1]
                count[b, d] = sum(1 for p in phrases if tuple(p) == phrase)
                others = opening_of(phrase[0])
                opening[b, d, : len(others)] = torch.tensor(others, dtype=torch.long)
                if len(phrase) > 1:
                    lead[b, d] = longest - len(phrase)
                    if len(phrase) > 2:
                        head[b, d, longest - len(phrase) + 1 :] = torch.tensor(phrase[1:-1])
                    banned[b, d, 0] = phrase[-1]
                else:
                    banned[b, d, : len(others)] = torch.tensor(others, dtype=torch.long)
        total = torch.tensor([len(f) for f in flat], dtype=torch.long)
        tables = (token, first, last, start, total, end, count, head, lead, opening, banned, alts)
        return Phrases(*(t.to(device) for t in tables))

    def select(self, sentences: Tensor) -> Phrases:
        """The tables of ``sentences`` ``[B']``."""
        return Phrases(
            *(
                t[sentences]
                for t in (
                    self.token,
                    self.first,
                    self.last,
                    self.start,
                    self.total,
                    self.end,
                    self.count,
                    self.head,
                    self.lead,
                    self.opening,
                    self.banned,
                    self.alts,
                )
            )
        )


@dataclass(frozen=True)
class Tracks:
    """What each slot ``[B, k]`` has met: met ``[B, k, C]``, the constraint tokens met;
    progress ``[B, k]``: the place of the last token met of the phrase in progress (-1:
    none); recent ``[B, k, L - 1]``: its last tokens (-2 before the start); occurs
    ``[B, k, D]``: each distinct phrase's occurrences so far (``exact``)."""

    met: Tensor
    progress: Tensor
    recent: Tensor
    occurs: Tensor

    @staticmethod
    def start(phrases: Phrases, k: int) -> Tracks:
        batch, width = phrases.token.shape
        device = phrases.token.device
        return Tracks(
            torch.zeros(batch, k, width, dtype=torch.bool, device=device),
            torch.full((batch, k), -1, dtype=torch.long, device=device),
            torch.full((batch, k, phrases.head.shape[2]), -2, dtype=torch.long, device=device),
            torch.zeros(batch, k, phrases.end.shape[1], dtype=torch.long, device=device),
        )

    def select(self, sentences: Tensor) -> Tracks:
        return Tracks(
            self.met[sentences],
            self.progress[sentences],
            self.recent[sentences],
            self.occurs[sentences],
        )


def constrained_search(
    model: Decodable,
    memory: AnyMemory,
    state: AnyState,
    src_lengths: Tensor,
    limits: Tensor,
    options: SearchOptions,
    prefix: list[int],
    constraints: Constraints,
    *,
    exact: bool = False,
    prune: bool = True,
) -> list[list[Hypothesis]]:
    """Constrained beam search from an encoded batch (``model.encode``, or an ensemble's
    ``encode_texts``); call it under ``torch.inference_mode``. The module docstring says
    how; the rest is ``luong.search.beam.search_beams``.

    A sentence's output limit is raised to hold its prefix, its constraint tokens and EOS.
    Should a sentence reach its limit with open beams that have not met every constraint,
    they join its list (a list is never empty) after the ones that have.

    Args:
        model, memory, state, src_lengths, limits, options, prefix, prune: as
            ``search_beams``.
        constraints: per sentence (``[B]``), its phrases of target ids (none: ``[]``).
        exact: forbid a token that would complete an occurrence of a phrase beyond its
            listed count.

    Returns:
        per sentence, in order, its n-best list, as ``search_beams``.

    Raises:
        ValueError: a list of constraints per sentence that does not fit the batch, an empty
            phrase, a token outside the target vocabulary, BOS, PAD or EOS in a phrase; the
            model's scores are NaN.
    """
    batch, source_len = memory.mask.shape
    vocab_size = len(model.tgt_vocab)
    if len(constraints) != batch:
        raise LuongError(
            f"constraints: expected one list per sentence ({batch}), got {len(constraints)}"
        )
    specials = (Vocab.pad_id, Vocab.bos_id, Vocab.eos_id)
    for i, listed in enumerate(constraints):
        for phrase in listed:
            if not phrase or any(not 0 <= t < vocab_size for t in phrase):
                raise LuongError(
                    f"constraints[{i}]: expected non-empty phrases of target ids below "
                    f"{vocab_size}, got {list(phrase)!r:.80}"
                )
            if any(t in specials for t in phrase):
                raise LuongError(
                    f"constraints[{i}]: expected no PAD, BOS or EOS in a phrase, got "
                    f"{list(phrase)!r:.80}"
                )
    device = memory.mask.device
    phrases = Phrases.of(constraints, device, model.tgt_vocab)
    constrained = phrases.total > 0
    limits = torch.maximum(limits, len(prefix) + phrases.total + 1).clamp(min=len(prefix) + 1)
    min_lens = limits.clamp(max=options.min_len + 1) - 1
    floor = None
    if prune and options.nbest == 1 and options.beam > 1 and not prefix:
        floor = greedy_floor(model, memory, state, limits, min_lens, options)
        floor = floor.masked_fill(constrained, float("-inf"))  # greedy ends unconstrained
    dtype = torch.promote_types(memory.dtype, torch.float32)
    coverage = torch.zeros(batch, source_len, dtype=memory.dtype, device=device)
    forced, state = force_prefix(
        model, memory, state.with_coverage(coverage), prefix, options.combine, dtype
    )
    beams = Beams.start(options, src_lengths, limits, min_lens, floor, memory, forced)
    # No greedy path to keep where greedy search cannot meet the constraints.
    beams = replace(beams, greedy=beams.greedy.masked_fill(constrained, -1))
    tracks = Tracks.start(phrases, options.beam)
    lists = _run(model, beams, tracks, phrases, state, options, exact)
    return [_complete_first(hyps, c) for hyps, c in zip(lists, constraints, strict=True)]


def _complete_first(hyps: list[Hypothesis], phrases: Sequence[Sequence[int]]) -> list[Hypothesis]:
    """``hyps`` with the ones that hold every phrase as often as listed first (a stable
    sort: those from a sentence's limit may not)."""
    if not phrases:
        return hyps
    wanted: dict[tuple[int, ...], int] = {}
    for phrase in phrases:
        wanted[tuple(phrase)] = wanted.get(tuple(phrase), 0) + 1

    def short(h: Hypothesis) -> bool:
        return any(count_occurrences(h.tokens, p) < n for p, n in wanted.items())

    return sorted(hyps, key=short)


def _run(
    model: Decodable,
    beams: Beams,
    tracks: Tracks,
    phrases: Phrases,
    state: AnyState,
    options: SearchOptions,
    exact: bool,
) -> list[list[Hypothesis]]:
    """The search loop: ``luong.search.beam._run`` with the constraints' tracks."""
    k = options.beam
    sentence_count = beams.alive.shape[0]
    lists: dict[int, list[Hypothesis]] = {}
    live = torch.arange(sentence_count, device=beams.alive.device) * k
    tokens = beams.forced.next
    step_memory = beams.memory
    first, last = beams.forced.length, int(beams.limits.max())
    for t in range(first, last):
        logits, state, weights = decoder_step(model, tokens, state, step_memory, options.combine)
        coverage = state.coverage if options.beta else None
        beams, tracks, broken = _advance(
            beams,
            tracks,
            phrases,
            t,
            next_token_log_probs(logits),
            weights,
            coverage,
            live,
            options,
            exact,
        )
        done = beams.done(t)
        if t == last - 1 or bool(done.all() | broken):
            if bool(broken):
                raise LuongError(NAN_SCORES.format(step=t + 1))
            break
        beams = beams.close(done)
        remaining = int((~done).sum())
        if 2 * remaining <= done.shape[0]:
            gone = done.nonzero().squeeze(1)
            finished = beams.select(gone)
            lists.update(zip(finished.ids.tolist(), finished.collect(options), strict=True))
            keep = (~done).nonzero().squeeze(1)
            beams, tracks, phrases = beams.select(keep), tracks.select(keep), phrases.select(keep)
        next_live = torch.isfinite(beams.alive).view(-1).nonzero().squeeze(1)
        if next_live.numel() == 0:
            break
        step = beams.history[-1]
        state = state.reorder(step.row.view(-1)[next_live])
        tokens = step.token.view(-1)[next_live]
        everyone = next_live.shape[0] == beams.alive.numel()
        step_memory = beams.memory.for_beams(k, None if everyone else next_live)
        live = next_live
    lists.update(zip(beams.ids.tolist(), beams.collect(options), strict=True))
    return [lists[i] for i in range(sentence_count)]


def _track(
    phrases: Phrases, sentence: Tensor, tracks: Tracks, slot: Tensor, tokens: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """What each candidate meets: rows ``[R]`` (each row's ``sentence`` and dense ``slot``)
    followed by ``tokens`` ``[R, M]`` -> met ``[R, M, C]``, progress ``[R, M]``, recent
    ``[R, M, L - 1]``, occurs ``[R, M, D]``."""
    rows, m = tokens.shape
    table = phrases.token[sentence]  # [R, C]
    width = table.shape[1]
    met = tracks.met.flatten(0, 1)[slot]  # [R, C]
    progress = tracks.progress.view(-1)[slot]  # [R]
    recent = tracks.recent.flatten(0, 1)[slot]  # [R, L-1]
    occurs = tracks.occurs.flatten(0, 1)[slot]  # [R, D]
    places = torch.arange(width, device=tokens.device)
    going = progress >= 0
    if width:
        following = (progress + 1).clamp(max=width - 1)  # the phrase's next place
        expected = table.gather(1, following[:, None])  # [R, 1]
        onward = going[:, None] & (tokens == expected)  # [R, M]
        begun = phrases.start[sentence].gather(1, progress.clamp(min=0)[:, None])  # [R, 1]
        span = going[:, None] & (places >= begun) & (places <= progress[:, None])  # [R, C]
        new_met = met[:, None, :] & ~(~onward[:, :, None] & span[:, None, :])  # abandoned
        new_met = new_met | (onward[:, :, None] & (places == following[:, None])[:, None, :])
        # Not continuing a phrase: the token may start the first unmet one it begins.
        starts = (
            phrases.first[sentence][:, None, :]
            & ~new_met
            & (phrases.alts[sentence][:, None, :, :] == tokens[:, :, None, None]).any(dim=-1)
            & ~onward[:, :, None]
        )
        begins = starts.any(dim=-1)  # [R, M]
        which = starts.int().argmax(dim=-1)  # [R, M] its first
        new_met = new_met | (starts & (places == which[:, :, None]))
        is_last = phrases.last[sentence]  # [R, C]
        ends_following = is_last.gather(1, following[:, None]).expand(rows, m)
        ends_started = is_last.gather(1, which)
        new_progress = torch.where(
            onward,
            torch.where(ends_following, -1, following[:, None].expand(rows, m)),
            torch.where(begins & ~ends_started, which, -1),
        )
    else:
        new_met = met[:, None, :].expand(rows, m, 0)
        new_progress = torch.full_like(tokens, -1)
    matched = _matched(phrases, sentence, recent)  # [R, D]
    opening = phrases.opening[sentence]  # [R, D, A]
    opens = (tokens[:, :, None, None] == opening[:, None, :, :]).any(dim=-1)  # [R, M, D]
    ends = tokens[:, :, None] == phrases.end[sentence][:, None, :]
    single = (phrases.lead[sentence] < 0)[:, None, :]
    completes = matched[:, None, :] & torch.where(single, opens, ends)
    new_occurs = occurs[:, None, :] + completes.long()
    kept = recent.shape[1]  # L - 1: the last tokens a phrase's head is matched against
    new_recent = torch.cat([recent[:, None, :].expand(rows, m, -1), tokens[:, :, None]], 2)
    new_recent = new_recent[:, :, new_recent.shape[2] - kept :]
    return new_met, new_progress, new_recent, new_occurs


def _matched(phrases: Phrases, sentence: Tensor, recent: Tensor) -> Tensor:
    """Whether each row's last tokens ``recent`` ``[R, L - 1]`` are all of each distinct
    phrase but its last token (any opening for its first): ``[R, D]``; a one-token phrase
    matches always (its token is checked as it comes)."""
    head = phrases.head[sentence]  # [R, D, L-1]
    lead = phrases.lead[sentence]  # [R, D]
    middle = ((recent[:, None, :] == head) | (head < 0)).all(dim=-1)
    if recent.shape[1]:
        rows, kinds = lead.shape
        first = recent[:, None, :].expand(rows, kinds, -1).gather(2, lead.clamp(min=0)[:, :, None])
        opened = (first == phrases.opening[sentence]).any(dim=-1) | (lead < 0)
    else:
        opened = lead < 0
    return middle & opened & (phrases.end[sentence] >= 0)


def _advance(
    beams: Beams,
    tracks: Tracks,
    phrases: Phrases,
    t: int,
    log_probs: Tensor,
    weights: Tensor,
    coverage: Tensor | None,
    live: Tensor,
    options: SearchOptions,
    exact: bool,
) -> tuple[Beams, Tracks, Tensor]:
    """``Beams.advance`` with the constraints: the candidates, their banks and the
    round-robin allocation (module docstring)."""
    batch, k = beams.alive.shape
    device = log_probs.device
    rows_now, dense = live.shape[0], batch * k
    sentences = torch.arange(batch, device=device)
    sentence = torch.div(live, k, rounding_mode="floor")  # [R]
    early = t < beams.min_lens[sentence]
    met_now = tracks.met.flatten(0, 1)[live]  # [R, C]
    unmet = met_now.sum(dim=1) < phrases.total[sentence]
    log_probs[:, Vocab.eos_id] = log_probs[:, Vocab.eos_id].masked_fill(
        early | unmet, float("-inf")
    )
    if exact and phrases.end.shape[1]:
        matched = _matched(phrases, sentence, tracks.recent.flatten(0, 1)[live])  # [R, D]
        full = tracks.occurs.flatten(0, 1)[live] >= phrases.count[sentence]
        ban = phrases.banned[sentence]  # [R, D, A]
        at = ((matched & full)[:, :, None] & (ban >= 0)).nonzero()
        log_probs[at[:, 0], ban[at[:, 0], at[:, 1], at[:, 2]]] = float("-inf")
    width = min(k, log_probs.shape[-1])
    row_lp, row_token = log_probs.topk(width, dim=1)  # [R, w]
    # Each row's tokens that advance its constraints, less those already among its best.
    table = phrases.token[sentence]  # [R, C]
    places = torch.arange(table.shape[1], device=device)
    progress = tracks.progress.view(-1)[live]
    advancing = torch.where(
        (progress >= 0)[:, None],
        places == (progress + 1)[:, None],
        phrases.first[sentence] & ~met_now,
    ) & (table >= 0)
    seen = (table[:, :, None] == row_token[:, None, :]).any(dim=2)
    twice = (table[:, :, None] == table[:, None, :]) & advancing[:, None, :]
    twice = (twice & (places[None, :] < places[:, None])[None]).any(dim=2)  # an earlier one
    advancing = advancing & ~seen & ~twice
    extra = table.clamp(min=0)
    extra_lp = torch.where(advancing, log_probs.gather(1, extra), float("-inf"))
    cand_token = torch.cat([row_token, extra], dim=1)  # [R, M]
    cand_lp = torch.cat([row_lp, extra_lp], dim=1)
    m = cand_token.shape[1]
    new_met, new_progress, new_recent, new_occurs = _track(
        phrases, sentence, tracks, live, cand_token
    )
    bank = new_met.sum(dim=2)  # [R, M]
    candidates = beams.alive.view(-1)[live][:, None] + cand_lp
    if rows_now == dense:
        position = None
        dense_bank = bank
    else:
        candidates = candidates.new_full((dense, m), float("-inf")).index_copy_(0, live, candidates)
        dense_bank = bank.new_zeros(dense, m).index_copy_(0, live, bank)
        position = torch.zeros(dense, dtype=torch.long, device=device)
        position[live] = torch.arange(rows_now, device=device)
    flat = candidates.view(batch, k * m)
    banks = phrases.total.max().item() + 1 if phrases.total.numel() else 1
    if banks == 1:
        score, index = flat.topk(k, dim=1)  # beam search's own choice
    else:
        score, index = _allocate(flat, dense_bank.view(batch, k * m), k, int(banks))
    parent = torch.div(index, m, rounding_mode="floor")
    column = index - parent * m
    greedy = beams.greedy
    g_slot = greedy.clamp(min=0)
    g_dense = sentences * k + g_slot
    g_row = g_dense if position is None else position[g_dense]
    g_token = log_probs[g_row].argmax(dim=-1)
    source = sentences[:, None] * k + parent
    row = source if position is None else position[source]
    token = cand_token[row, column]
    g_kept = (greedy >= 0)[:, None] & (parent == g_slot[:, None]) & (token == g_token[:, None])
    missing = (greedy >= 0) & ~g_kept.any(dim=1)
    g_score = beams.alive.view(-1)[g_dense] + log_probs[g_row, g_token]
    score[:, -1] = torch.where(missing, g_score, score[:, -1])
    parent[:, -1] = torch.where(missing, g_slot, parent[:, -1])
    token[:, -1] = torch.where(missing, g_token, token[:, -1])
    row[:, -1] = torch.where(missing, g_row, row[:, -1])
    # The greedy path is kept only in sentences without constraints, where every candidate
    # has the same (empty) tracks: the column need not name its token.
    column[:, -1] = torch.where(missing, 0, column[:, -1])
    g_kept[:, -1] |= missing
    token_lp = log_probs[row, token]
    new_tracks = Tracks(
        new_met[row, column],
        new_progress[row, column],
        new_recent[row, column],
        new_occurs[row, column],
    )
    live_slot = torch.isfinite(score)
    ends = live_slot & ((token == Vocab.eos_id) | (beams.limits <= t + 1)[:, None])
    final = score / length_penalty(t + 1, options.alpha)
    if options.beta:
        assert coverage is not None
        penalty = coverage_penalty(coverage[row], beams.memory.mask[:, None, :], options.beta)
        final = final + penalty.to(final.dtype)
    # At the limit, a beam that has not met every constraint ranks below every one that has
    # (-inf: below every score, above an empty place of the pool).
    short = new_tracks.met.sum(dim=2) < phrases.total[:, None]
    final = final.masked_fill(short, float("-inf"))
    step_index = len(beams.history)
    pool = beams.pool.add(torch.where(ends, final, float("-inf")), ends, step_index)
    alive = torch.where(ends, float("-inf"), score)
    g_on = g_kept & ~ends
    greedy = torch.where(g_on.any(dim=1), g_on.int().argmax(dim=1), -1)
    if beams.floor is not None:
        alive = alive.masked_fill((alive < beams.floor[:, None]) & ~g_on, float("-inf"))
    step = Step(token, parent, token_lp, row, weights)
    broken = torch.isnan(row_lp).any()
    advanced = replace(beams, alive=alive, greedy=greedy, pool=pool, history=(*beams.history, step))
    return advanced, new_tracks, broken


def _allocate(score: Tensor, bank: Tensor, k: int, banks: int) -> tuple[Tensor, Tensor]:
    """The ``k`` candidates of each sentence dealt round-robin over the banks: score and
    bank ``[B, N]`` -> the chosen scores and places ``[B, k]``, in the order dealt (round
    by round, the bank that meets the most first; within a bank, by score). Candidates
    that are -inf come last."""
    order = score.sort(dim=1, descending=True, stable=True).indices  # [B, N]
    sorted_bank = bank.gather(1, order)
    # Each candidate's rank within its bank: the candidates of its bank before it.
    one_hot = torch.nn.functional.one_hot(sorted_bank, banks)  # [B, N, banks]
    rank = one_hot.cumsum(dim=1).gather(2, sorted_bank[:, :, None]).squeeze(2) - 1
    key = rank * banks + (banks - 1 - sorted_bank)
    dead = ~torch.isfinite(score.gather(1, order))
    n = score.shape[1]
    key = torch.where(dead, n * banks + torch.arange(n, device=score.device), key)
    chosen = key.topk(min(k, n), dim=1, largest=False).indices  # [B, k], in key order
    index = order.gather(1, chosen)
    return score.gather(1, index), index
