"""Several trained models decoding as one (Luong et al.'s best results are ensembles of 8).

At every output step each member runs its own decoder step (its own encoder memory,
attention and input feed) on the same rows, and the members' next-token distributions are
combined into one:

    "logprob" (the default):  log p(y) = mean_k log p_k(y), renormalised over y
                              (a normalised geometric mean of the members' distributions)
    "prob":                   log p(y) = log mean_k p_k(y)   (the arithmetic mean)

Which of the two is a decoding option (``SearchOptions.combine``): the same loaded members
decode either way. Search (``luong.search``) then treats the combination as one model's
distribution: greedy search, beam search, n-best lists and the penalties work unchanged. The
attention an ensemble reports, and the coverage its coverage penalty reads, is the mean of
its members' attention weights.

Members must share the target vocabulary (the rows of every member's output layer mean the
same symbols; for subwords, the same sentencepiece model). The source side may differ per
member (its own vocabulary, its own ids) as long as every member cuts a source into the same
number of symbols: the attention matrices are averaged position by position.

An ensemble of one member decodes exactly as the member does (its logits are passed on
untouched).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import folder_list
from luong.config.search import COMBINE, OptionError
from luong.data.batching import encode_sources
from luong.data.subword import SubwordVocab
from luong.data.vocab import Vocab
from luong.model.decoder import DecoderState, Memory, OutputRows
from luong.model.seq2seq import Seq2Seq

__all__ = [
    "Columns",
    "Ensemble",
    "EnsembleMemory",
    "EnsembleState",
    "decoder_step",
    "encode_texts",
    "check_shortlist",
    "members_of",
    "shortlist_columns",
]


@dataclass(frozen=True)
class EnsembleMemory:
    """Each member's ``Memory`` of the same rows; ``mask`` ``[B, S]`` is common to all."""

    memories: tuple[Memory, ...]

    @property
    def mask(self) -> Tensor:
        return self.memories[0].mask

    @property
    def dtype(self) -> torch.dtype:
        """The first member's (``Memory.dtype``)."""
        return self.memories[0].dtype

    def repeat(self, k: int) -> EnsembleMemory:
        """Every member's rows repeated k times in a row (``Memory.repeat``)."""
        return EnsembleMemory(tuple(m.repeat(k) for m in self.memories))

    def for_beams(self, k: int, slots: Tensor | None = None) -> EnsembleMemory:
        """Every member's memory read by beams (``Memory.for_beams``)."""
        return EnsembleMemory(tuple(m.for_beams(k, slots) for m in self.memories))

    def select(self, rows: Tensor) -> EnsembleMemory:
        """Every member's rows ``rows`` ``[B']`` (``Memory.select``)."""
        return EnsembleMemory(tuple(m.select(rows) for m in self.memories))


@dataclass(frozen=True)
class EnsembleState:
    """Each member's ``DecoderState`` of the same rows."""

    states: tuple[DecoderState, ...]

    @property
    def coverage(self) -> Tensor | None:
        """The mean of the members' coverage ``[B, S]`` (the attention of the ensemble summed
        over the steps), or None when not tracked."""
        covered = [s.coverage for s in self.states]
        if any(c is None for c in covered):
            return None
        return torch.stack(covered).mean(dim=0)  # type: ignore[arg-type]

    def with_coverage(self, coverage: Tensor) -> EnsembleState:
        """Every member tracks coverage from ``coverage`` ``[B, S]``."""
        return EnsembleState(tuple(s.with_coverage(coverage) for s in self.states))

    def reorder(self, indices: Tensor) -> EnsembleState:
        """The rows ``indices`` ``[B']`` of every member's state: one index for all members."""
        return EnsembleState(tuple(s.reorder(indices) for s in self.states))


def _tokenization(vocab: Vocab) -> tuple[object, ...]:
    """What decides how a vocabulary cuts a text into symbols (not which ids it gives them)."""
    if isinstance(vocab, SubwordVocab):
        return ("subword", vocab.kind, vocab.lowercase, vocab.model)
    return (vocab.tokens, vocab.lowercase, vocab.normalization)


def _describe(vocab: Vocab) -> str:
    if isinstance(vocab, SubwordVocab):
        return f"{len(vocab)} {vocab.kind} subword pieces"
    return f"{len(vocab)} {vocab.tokens} symbols"


class Ensemble(nn.Module):
    """Members that decode as one model (module docstring); search takes it in place of a
    ``Seq2Seq``.

    Args:
        members: the models, at least one, all on one device.
        names: a name per member for messages (its folder); default ``member 1``, ...

    Raises:
        TypeError: a member is not a ``Seq2Seq``.
        ValueError: no members; members whose target vocabularies
            differ, whose sources are cut into symbols differently, or on different devices
            (the message names the members and what differs).
    """

    def __init__(
        self,
        members: Sequence[Seq2Seq],
        names: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(members, Seq2Seq) or not isinstance(members, Sequence):
            raise LuongTypeError(f"members: expected a sequence of Seq2Seq, got {type(members)}")
        if not members:
            raise LuongError("members: expected at least one model, got none")
        for i, member in enumerate(members):
            if not isinstance(member, Seq2Seq):
                raise LuongTypeError(
                    f"members[{i}]: expected a Seq2Seq, got {type(member).__name__}"
                )
        labels = (
            list(names) if names is not None else [f"member {i + 1}" for i in range(len(members))]
        )
        if len(labels) != len(members):
            raise LuongError(f"names: expected {len(members)}, got {len(labels)}")
        first, name = members[0], labels[0]
        for member, other in zip(members[1:], labels[1:], strict=True):
            if member.tgt_vocab != first.tgt_vocab:
                raise LuongError(
                    f"{name} and {other}: the target vocabularies differ "
                    f"({_describe(first.tgt_vocab)} against {_describe(member.tgt_vocab)}"
                    f"{'' if len(first.tgt_vocab) != len(member.tgt_vocab) else ', other symbols'}"
                    "); the members of an ensemble must share the target vocabulary"
                )
            if _tokenization(member.src_vocab) != _tokenization(first.src_vocab):
                raise LuongError(
                    f"{name} and {other}: the sources are cut into symbols differently "
                    f"({_describe(first.src_vocab)} against {_describe(member.src_vocab)}); "
                    "the members' attention could not be averaged"
                )
            if member.device != first.device:
                raise LuongError(
                    f"{name} and {other}: on different devices ({first.device}, {member.device})"
                )
        self.members = nn.ModuleList(members)
        self.names = labels

    @classmethod
    def from_pretrained(
        cls,
        directories: Sequence[str | Path],
        device: str | torch.device = "cpu",
    ) -> Ensemble:
        """Load each model folder (``Seq2Seq.from_pretrained``) as a member."""
        folders = folder_list("directories", directories)
        models = [Seq2Seq.from_pretrained(d, device=device) for d in folders]
        return cls(models, [str(d) for d in folders])

    def member_list(self) -> list[Seq2Seq]:
        return [m for m in self.members if isinstance(m, Seq2Seq)]

    @property
    def device(self) -> torch.device:
        return self.member_list()[0].device

    @property
    def src_vocab(self) -> Vocab:
        """The first member's source vocabulary (the symbols an output's attention is over)."""
        return self.member_list()[0].src_vocab

    @property
    def tgt_vocab(self) -> Vocab:
        return self.member_list()[0].tgt_vocab

    def encode_texts(self, texts: Sequence[str]) -> tuple[EnsembleMemory, EnsembleState, Tensor]:
        """Encode ``texts`` with every member's own vocabulary and encoder: the memory, the
        initial state and the source lengths ``[B]`` (EOS included).

        Raises:
            ValueError: members that read a text as different numbers of symbols.
        """
        memories, states = [], []
        lengths: Tensor | None = None
        for member, name in zip(self.member_list(), self.names, strict=True):
            src, own = encode_sources(member.src_vocab, texts, member.device)
            if lengths is not None and not torch.equal(own, lengths):
                row = int((own != lengths).nonzero()[0, 0])
                raise LuongError(
                    f"{self.names[0]} and {name} read source {texts[row]!r} as "
                    f"{int(lengths[row]) - 1} and {int(own[row]) - 1} symbols"
                )
            lengths = own
            memory, state = member.encode(src, own)
            memories.append(memory)
            states.append(state)
        assert lengths is not None
        return EnsembleMemory(tuple(memories)), EnsembleState(tuple(states)), lengths

    def step(
        self,
        tokens: Tensor,
        state: EnsembleState,
        memory: EnsembleMemory,
        combine: str = COMBINE[0],
        rows: Sequence[OutputRows] | None = None,
    ) -> tuple[Tensor, EnsembleState, Tensor]:
        """One search step of every member on the same rows: scores ``[R, V]`` whose
        log_softmax is the members' distributions combined as ``combine`` says (``COMBINE``:
        ``"prob"`` gives the log of the mean probability itself, ``"logprob"`` the mean of
        the members' logits, which normalises to the normalised mean of their
        log-probabilities; a single member's logits as they are), the new state and the
        mean attention ``[R, S]``. With ``rows`` (a member's ``OutputRows`` each), the scores
        of those rows' ids only ``[R, V']``."""
        members = self.member_list()
        outs: list[OutputRows | None] = [None] * len(members) if rows is None else list(rows)
        outputs = [
            member.decoder.step(tokens, s, m, out)
            for member, s, m, out in zip(members, state.states, memory.memories, outs, strict=True)
        ]
        new_state = EnsembleState(tuple(s for _, s, _ in outputs))
        if len(outputs) == 1:
            logits, _, weights = outputs[0]
            return logits, new_state, weights
        wide = torch.promote_types(outputs[0][0].dtype, torch.float32)  # float64 stays
        if combine == "prob":
            log_probs = [torch.log_softmax(o.to(wide), dim=-1) for o, _, _ in outputs]
            combined = torch.logsumexp(torch.stack(log_probs), dim=0) - math.log(len(outputs))
        else:
            # The mean of the members' log-probabilities is the mean of their logits less a
            # constant per row, which the search's log_softmax takes off again: the logits'
            # mean, summed member by member into one [R, V] tensor, is the same distribution
            # without a log_softmax per member or a stack of M x R x V numbers (together a
            # quarter of an ensemble's beam search with a 4,000-piece vocabulary).
            combined = outputs[0][0].to(wide, copy=True)
            for other, _, _ in outputs[1:]:
                combined = combined.add_(other.to(wide))
            combined = combined.div_(len(outputs))
        weights = torch.stack([w for _, _, w in outputs]).mean(dim=0)
        return combined, new_state, weights


Decodable = Seq2Seq | Ensemble
"""What search decodes with: one model or an ensemble."""


def members_of(model: Decodable) -> list[Seq2Seq]:
    """The models of ``model``: itself, or an ensemble's members."""
    return model.member_list() if isinstance(model, Ensemble) else [model]


def encode_texts(
    model: Decodable, texts: Sequence[str]
) -> tuple[Memory | EnsembleMemory, DecoderState | EnsembleState, Tensor]:
    """Encode raw ``texts`` (non-empty) for search: memory, initial state, lengths ``[B]``."""
    if isinstance(model, Ensemble):
        return model.encode_texts(texts)
    src, lengths = encode_sources(model.src_vocab, texts, model.device)
    memory, state = model.encode(src, lengths)
    return memory, state, lengths


@dataclass(frozen=True)
class Columns:
    """A search over some target ids only (a lexical shortlist, ``luong.data.shortlist``): ids
    ``[V']``, sorted, the special symbols among them at their own ids (0 to 3); and each
    member's output layer cut to those rows, once per batch. The search then works in
    columns: token i is ``ids[i]`` (``decoder_step`` reads it so; the search's caller maps
    the outputs back), and PAD, BOS and EOS are where they always are."""

    ids: Tensor
    rows: tuple[OutputRows, ...]

    def to_columns(self, ids: Sequence[int]) -> list[int]:
        """Target ids (each among ``ids``) -> their columns."""
        index = {t: c for c, t in enumerate(self.ids.tolist())}
        return [index[t] for t in ids]


def check_shortlist(model: Decodable, k: int | None) -> None:
    """That ``model`` can decode with ``SearchOptions.shortlist`` ``k``: with K >= 1 every
    member has a shortlist holding at least K pieces per source piece (None, 0: anything).

    Raises:
        OptionError: a member without a shortlist, or one that holds fewer pieces.
    """
    if not k:
        return
    names = model.names if isinstance(model, Ensemble) else ["the model"]
    for member, name in zip(members_of(model), names, strict=True):
        table = member.shortlist
        if table is None:
            raise OptionError(
                "shortlist",
                f"{name} has no lexical shortlist (build one: luong shortlist FOLDER), got {k}",
            )
        if k > table.k:
            raise OptionError(
                "shortlist",
                f"expected at most {table.k} (the pieces {name}'s shortlist holds per source "
                f"piece), got {k}",
            )


def shortlist_columns(
    model: Decodable, texts: Sequence[str], k: int | None, extra: Sequence[int] = ()
) -> Columns | None:
    """The columns a batch of ``texts`` decodes over: the union of every member's shortlist
    candidates for its own encoding of the texts (``Shortlist.candidates``, ``extra`` ids
    added), each member's output rows cut to them. ``k``: the pieces per source piece
    (``SearchOptions.shortlist``, checked by ``check_shortlist``); None: each member's own
    table whole, and no shortlist (None) when a member has none; 0: None (the full
    vocabulary)."""
    members = members_of(model)
    if k == 0 or any(m.shortlist is None for m in members):
        return None
    keep = torch.zeros(len(model.tgt_vocab), dtype=torch.bool)
    for member in members:
        table = member.shortlist
        assert table is not None
        src, _ = encode_sources(member.src_vocab, texts, torch.device("cpu"))
        keep[table.candidates([src], table.k if k is None else k, extra)] = True
    ids = keep.nonzero().squeeze(1).to(model.device)
    return Columns(ids, tuple(m.decoder.output_rows(ids) for m in members))


def decoder_step(
    model: Decodable,
    tokens: Tensor,
    state: DecoderState | EnsembleState,
    memory: Memory | EnsembleMemory,
    combine: str = COMBINE[0],
    columns: Columns | None = None,
) -> tuple[Tensor, DecoderState | EnsembleState, Tensor]:
    """One search step of a model or an ensemble: logits (or an ensemble's log-probabilities
    combined as ``combine`` says) ``[R, V]``, the new state, attention ``[R, S]``. With
    ``columns``, ``tokens`` are columns and the logits those of the columns ``[R, V']``."""
    rows = None
    if columns is not None:
        tokens, rows = columns.ids[tokens], columns.rows
    if isinstance(model, Ensemble):
        assert isinstance(state, EnsembleState) and isinstance(memory, EnsembleMemory)
        return model.step(tokens, state, memory, combine, rows)
    assert isinstance(state, DecoderState) and isinstance(memory, Memory)
    return model.decoder.step(tokens, state, memory, None if rows is None else rows[0])
