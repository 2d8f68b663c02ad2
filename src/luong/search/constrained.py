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
candidates, the same greedy path, the same pruning, the same scores). The search is beam
search's own loop with a strategy of its own (``Constrained``, a ``luong.search.beam
.Strategy``): this module proposes the candidates, deals out the places and tracks the
constraints; the loop does the rest.

With ``exact``, a token that would complete an occurrence of a phrase beyond its listed count
is forbidden too, so each phrase appears exactly as often as listed (occurrences counted in
the output as written, overlapping ones included; a phrase that contains another cannot be
held exactly: such a sentence's list then comes from its limit). ``exact`` may name the
phrases held so one by one (``Exact``: a terminology phrase held at least as often as
listed beside placeholders held exactly,
``luong.translation.placeholder_search.with_placeholders``). With a sentencepiece vocabulary
a phrase's first piece may be any piece that ends with its text (``first_alternatives``), so
a phrase glued to punctuation counts. Scores are beam search's (``s(Y, X)``,
``luong.search.penalties``); the prefix's tokens do not count as constraint tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from luong.common.errors import LuongError, LuongTypeError
from luong.config.search import MAX_CONSTRAINT_PIECES, MAX_PHRASE_PIECES, SearchOptions
from luong.data.vocab import Vocab
from luong.model.ensemble import Decodable
from luong.search.beam import search_beams
from luong.search.hypothesis import AnyMemory, AnyState, Hypothesis

__all__ = [
    "Constrained",
    "Exact",
    "Phrases",
    "check_exact",
    "constrained_search",
    "constraint_ids",
    "count_occurrences",
    "first_alternatives",
]

Constraints = Sequence[Sequence[Sequence[int]]]
"""Per sentence, its phrases, each a list of target ids."""

Exact = bool | Sequence[Sequence[bool]]
"""Which phrases are held exactly as often as listed (the others at least as often): all
(True), none (False), or per sentence, per phrase."""


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
        ValueError: an empty phrase, one with a symbol the target vocabulary cannot
            produce, a phrase of more than ``MAX_PHRASE_PIECES`` symbols or a sentence's of
            more than ``MAX_CONSTRAINT_PIECES`` (named with its sentence's 0-based index).
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
            if len(encoded) > MAX_PHRASE_PIECES:
                shown = phrase if len(phrase) <= 40 else phrase[:37] + "..."
                raise LuongError(
                    f"constraints[{i}]: the phrase {shown!r} is {len(encoded)} target "
                    f"symbols, above the most a phrase may have ({MAX_PHRASE_PIECES})"
                )
            ids.append(encoded)
        pieces = sum(len(encoded) for encoded in ids)
        if pieces > MAX_CONSTRAINT_PIECES:
            raise LuongError(
                f"constraints[{i}]: {len(ids)} phrases of {pieces} target symbols in all, "
                f"above the most a sentence's constraints may have ({MAX_CONSTRAINT_PIECES})"
            )
        result.append(ids)
    return result


def check_exact(exact: Exact, constraints: Sequence[Sequence[object]]) -> list[list[bool]]:
    """``exact`` (``Exact``) as a flag per phrase of each sentence of ``constraints``.

    Raises:
        TypeError: ``exact`` is neither a bool nor a list of lists of bools.
        ValueError: not a flag per phrase (named with its sentence's 0-based index).
    """
    if isinstance(exact, bool):
        return [[exact] * len(phrases) for phrases in constraints]
    if isinstance(exact, str) or not isinstance(exact, Sequence):
        raise LuongTypeError(
            f"exact: expected a bool or a list of lists of bools, got {exact!r:.60}"
        )
    if len(exact) != len(constraints):
        raise LuongError(
            f"exact: expected one list per sentence ({len(constraints)}), got {len(exact)}"
        )
    flags = []
    for i, (marks, phrases) in enumerate(zip(exact, constraints, strict=True)):
        if (
            isinstance(marks, str)
            or not isinstance(marks, Sequence)
            or not all(isinstance(mark, bool) for mark in marks)
        ):
            raise LuongTypeError(f"exact[{i}]: expected a list of bools, got {marks!r:.60}")
        if len(marks) != len(phrases):
            raise LuongError(
                f"exact[{i}]: expected a flag per phrase ({len(phrases)}), got {len(marks)}"
            )
        flags.append(list(marks))
    return flags


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
    exact (whether it is held exactly: one of its listings is),
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
    exact: Tensor
    head: Tensor
    lead: Tensor
    opening: Tensor
    banned: Tensor
    alts: Tensor

    @staticmethod
    def of(
        constraints: Constraints,
        device: torch.device,
        vocab: Vocab | None = None,
        exact: Exact = True,
    ) -> Phrases:
        """The tables of ``constraints``; with ``vocab``, a phrase's first token may be any
        of its ``first_alternatives``; ``exact``: which phrases are held exactly
        (``check_exact``)."""
        batch = len(constraints)
        flags = check_exact(exact, constraints)
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
        held = torch.zeros(batch, kinds, dtype=torch.bool)
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
                held[b, d] = any(
                    f for p, f in zip(phrases, flags[b], strict=True) if tuple(p) == phrase
                )
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
        tables = (
            token, first, last, start, total, end, count, held, head, lead, opening, banned, alts
        )  # fmt: skip
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
                    self.exact,
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

    def select(self, *index: Tensor) -> Tracks:
        """The tracks at ``index`` (the sentences ``[B']``; or, of the tracks of each
        candidate ``[R, M, ...]``, the rows and columns ``[B, k]`` kept)."""
        return Tracks(*(t[index] for t in (self.met, self.progress, self.recent, self.occurs)))


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
    exact: Exact = False,
    prune: bool = True,
) -> list[list[Hypothesis]]:
    """Constrained beam search from an encoded batch (``model.encode``, or an ensemble's
    ``encode_texts``); call it under ``torch.inference_mode``. The module docstring says
    how; the rest is ``luong.search.beam.search_beams``, with the ``Constrained`` strategy.

    A sentence's output limit is raised to hold its prefix, its constraint tokens and EOS.
    Should a sentence reach its limit with open beams that have not met every constraint,
    they join its list (a list is never empty) after the ones that have.

    Args:
        model, memory, state, src_lengths, limits, options, prefix, prune: as
            ``search_beams``.
        constraints: per sentence (``[B]``), its phrases of target ids (none: ``[]``).
        exact: forbid a token that would complete an occurrence of a phrase beyond its
            listed count: of every phrase (True), of none (False), or per sentence of the
            phrases flagged (``Exact``).

    Returns:
        per sentence, in order, its n-best list, as ``search_beams``.

    Raises:
        ValueError: a list of constraints per sentence that does not fit the batch, an empty
            phrase, a token outside the target vocabulary, BOS, PAD or EOS in a phrase, an
            ``exact`` that is not a flag per phrase; the model's scores are NaN.
    """
    _check_constraints(constraints, memory.mask.shape[0], len(model.tgt_vocab))
    phrases = Phrases.of(constraints, memory.mask.device, model.tgt_vocab, exact)
    limits = torch.maximum(limits, len(prefix) + phrases.total + 1)
    banning = bool(phrases.exact.any())
    strategy = Constrained(phrases, Tracks.start(phrases, options.beam), banning)
    lists = search_beams(
        model, memory, state, src_lengths, limits, options, prefix, prune=prune, strategy=strategy
    )
    return [_complete_first(hyps, c) for hyps, c in zip(lists, constraints, strict=True)]


def _check_constraints(constraints: Constraints, batch: int, vocab_size: int) -> None:
    """Raise unless ``constraints`` are ``batch`` lists of non-empty phrases of target ids
    below ``vocab_size``, none PAD, BOS or EOS (``constrained_search``)."""
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


@dataclass(frozen=True)
class Constrained:
    """Constrained beam search as a strategy of beam search (``luong.search.beam
    .Strategy``): the batch's phrases, what each slot has met of them, and ``exact``
    (whether a phrase of the batch is held exactly: a surplus is then forbidden). A step's
    candidates are each open row's ``k`` best tokens and the tokens that advance its
    constraints; they are dealt into banks and the ``k`` places allocated round-robin
    (``_allocate``). No greedy path is kept where a sentence has constraints."""

    phrases: Phrases
    tracks: Tracks
    exact: bool

    def off_greedy(self) -> Tensor:
        return self.phrases.total > 0

    def select(self, keep: Tensor) -> Constrained:
        return Constrained(self.phrases.select(keep), self.tracks.select(keep), self.exact)

    def propose(self, log_probs: Tensor, live: Tensor, k: int) -> _Banked:
        """Forbids EOS before every constraint is met, and with ``exact`` a token that
        completes a phrase once more than listed; proposes each row's ``k`` best tokens and
        the tokens that advance its constraints, less those already among its best."""
        phrases, tracks = self.phrases, self.tracks
        sentence = torch.div(live, k, rounding_mode="floor")  # [R]
        met_now = tracks.met.flatten(0, 1)[live]  # [R, C]
        unmet = met_now.sum(dim=1) < phrases.total[sentence]
        log_probs[:, Vocab.eos_id] = log_probs[:, Vocab.eos_id].masked_fill(unmet, float("-inf"))
        if self.exact and phrases.end.shape[1]:
            _ban_surplus(phrases, tracks, sentence, live, log_probs)
        width = min(k, log_probs.shape[-1])
        row_lp, row_token = log_probs.topk(width, dim=1)  # [R, w]
        progress = tracks.progress.view(-1)[live]
        advancing = _advancing(phrases, sentence, met_now, progress, row_token)  # [R, C]
        extra = phrases.token[sentence].clamp(min=0)
        extra_lp = torch.where(advancing, log_probs.gather(1, extra), float("-inf"))
        token = torch.cat([row_token, extra], dim=1)  # [R, M]
        met, progress, recent, occurs = _track(phrases, sentence, tracks, live, token)
        follows = Tracks(met, progress, recent, occurs)
        log_prob = torch.cat([row_lp, extra_lp], dim=1)
        return _Banked(token, log_prob, met.sum(dim=2), follows, self)


@dataclass(frozen=True)
class _Banked:
    """``Constrained``'s proposal: per open row ``[R, M]`` the candidates' tokens, their
    log-probabilities, their banks (the constraint tokens they meet) and what each meets
    (``Tracks`` per candidate ``[R, M, ...]``); and the strategy it came from."""

    token: Tensor
    log_prob: Tensor
    bank: Tensor
    follows: Tracks
    strategy: Constrained

    def allocate(self, score: Tensor, live: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """One bank: beam search's own choice; more: round-robin (``_allocate``)."""
        total = self.strategy.phrases.total
        banks = int(total.max().item()) + 1 if total.numel() else 1
        if banks == 1:
            values, index = score.topk(k, dim=1)
            return values, index
        batch, m = score.shape[0], self.token.shape[1]
        bank = self.bank
        if live.shape[0] != batch * k:
            bank = bank.new_zeros(batch * k, m).index_copy_(0, live, bank)
        return _allocate(score, bank.view(batch, k * m), k, banks)

    def follow(self, row: Tensor, column: Tensor) -> tuple[Constrained, Tensor]:
        """The kept candidates' tracks; the slots that have not met every constraint (at
        the limit they rank below every one that has)."""
        tracks = self.follows.select(row, column)
        short = tracks.met.sum(dim=2) < self.strategy.phrases.total[:, None]
        return replace(self.strategy, tracks=tracks), short


def _ban_surplus(
    phrases: Phrases, tracks: Tracks, sentence: Tensor, live: Tensor, log_probs: Tensor
) -> None:
    """Set to -inf in ``log_probs`` ``[R, V]`` each row's tokens that would complete a
    phrase listed as often as the row holds it already (``exact``)."""
    matched = _matched(phrases, sentence, tracks.recent.flatten(0, 1)[live])  # [R, D]
    full = (tracks.occurs.flatten(0, 1)[live] >= phrases.count[sentence]) & phrases.exact[sentence]
    ban = phrases.banned[sentence]  # [R, D, A]
    at = ((matched & full)[:, :, None] & (ban >= 0)).nonzero()
    log_probs[at[:, 0], ban[at[:, 0], at[:, 1], at[:, 2]]] = float("-inf")


def _advancing(
    phrases: Phrases, sentence: Tensor, met: Tensor, progress: Tensor, best: Tensor
) -> Tensor:
    """Which constraint places ``[R, C]`` hold a token that advances each row's
    constraints: the next token of the phrase in progress, or else the first of each unmet
    phrase, for rows that have met ``met`` ``[R, C]`` with ``progress`` ``[R]``; less the
    tokens among its ``best`` ``[R, w]`` and those an earlier place holds already."""
    table = phrases.token[sentence]  # [R, C]
    places = torch.arange(table.shape[1], device=table.device)
    advancing = torch.where(
        (progress >= 0)[:, None],
        places == (progress + 1)[:, None],
        phrases.first[sentence] & ~met,
    ) & (table >= 0)
    seen = (table[:, :, None] == best[:, None, :]).any(dim=2)
    twice = (table[:, :, None] == table[:, None, :]) & advancing[:, None, :]
    twice = (twice & (places[None, :] < places[:, None])[None]).any(dim=2)  # an earlier one
    return advancing & ~seen & ~twice


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
