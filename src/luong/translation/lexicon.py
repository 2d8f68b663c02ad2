"""The lexical table a shortlist is cut from (``luong.data.shortlist``), learned from a model's
training pairs with the model's own attention: ``luong shortlist FOLDER``.

1. Teacher-force each batch of training pairs through the model (one forward pass, no
   search): attention weights ``[B, T, S]``.
2. Link each target piece y_t to the source piece it attended to most (the source's EOS
   included; the target's EOS is a special, in every batch's candidates anyway).
3. Count the links: ``counts[s, t]``, over all pairs; p(t | s) = counts[s, t] / counts[s].
4. Keep each source piece's ``k`` most likely target pieces and the ``n`` target pieces
   linked most often (``Shortlist.from_counts``).

Why attention and not eflomal (the ``align`` extra): the links come in the model's own
pieces, from the model that will decode, with no C build, no second segmentation and one
forward pass per batch; a shortlist needs recall more than precision (each source piece
brings ``k`` candidates, a hundred or so, and the frequent pieces are always in), and the
preset's attention links reach a recall of 0.73 against eflomal's (docs/results.md, "Word
alignments from attention").

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``V`` target vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import locked
from luong.data.batching import encode_sources, pad_batch, source_mask
from luong.data.shortlist import Shortlist
from luong.data.vocab import Vocab
from luong.model.seq2seq import Seq2Seq, evaluating

__all__ = ["DEFAULT_FREQUENT", "DEFAULT_PER_SOURCE", "lexical_counts", "shortlist_folder"]

DEFAULT_PER_SOURCE = 100
"""Target pieces kept per source piece (Marian's shortlists keep 100 and the 100 most
frequent words)."""

DEFAULT_FREQUENT = 100
"""The most frequent target pieces every batch's candidates hold."""

Pair = tuple[str, str]


def lexical_counts(model: Seq2Seq, pairs: Sequence[Pair], batch_size: int = 64) -> torch.Tensor:
    """How often each target piece is linked to each source piece in ``pairs``, by the
    model's attention (the module docstring): counts ``[V_src, V]``, float64.

    Raises:
        TypeError: ``model`` is not a ``Seq2Seq``, ``pairs`` not (source, target) strings.
        ValueError: no pairs, ``batch_size`` below 1.
    """
    if not isinstance(model, Seq2Seq):
        raise LuongTypeError(f"model: expected a Seq2Seq, got {type(model).__name__}")
    if isinstance(pairs, str) or not all(
        isinstance(p, Sequence) and len(p) == 2 and all(isinstance(x, str) for x in p)
        for p in pairs
    ):
        raise LuongTypeError("pairs: expected a sequence of (source, target) strings")
    if not pairs:
        raise LuongError("pairs: expected at least one (source, target) pair, got none")
    check_positive_int("batch_size", batch_size)
    counts = torch.zeros(len(model.src_vocab) * len(model.tgt_vocab), dtype=torch.float64)
    kept = [p for p in pairs if p[0].strip() and p[1].strip()]
    kept.sort(key=lambda p: len(p[0]))  # less padding
    with evaluating(model), torch.inference_mode():
        for start in range(0, len(kept), batch_size):
            batch = kept[start : start + batch_size]
            src, lengths = encode_sources(model.src_vocab, [s for s, _ in batch], model.device)
            targets = [model.tgt_vocab.encode(t) for _, t in batch]  # y ... EOS
            tgt, _ = pad_batch(targets, model.device)  # [B, T]
            tgt_in = torch.cat([torch.full_like(tgt[:, :1], Vocab.bos_id), tgt[:, :-1]], 1)
            memory, state = model.encode(src, lengths)
            _, weights = model.decoder(tgt_in, state, memory)  # [B, T, S]
            weights = weights.masked_fill(~source_mask(src, lengths)[:, None, :], -1.0)
            linked = src.gather(1, weights.argmax(dim=2))  # [B, T] the source piece of each
            real = tgt > Vocab.unk_id  # no PAD, no specials
            index = linked[real] * len(model.tgt_vocab) + tgt[real]
            counts.index_add_(0, index.cpu(), torch.ones(index.numel(), dtype=torch.float64))
    return counts.view(len(model.src_vocab), len(model.tgt_vocab))


def shortlist_folder(
    folder: str | Path,
    pairs: Sequence[Pair],
    k: int = DEFAULT_PER_SOURCE,
    n: int = DEFAULT_FREQUENT,
    batch_size: int = 64,
) -> Shortlist:
    """Learn the shortlist of the model in ``folder`` from ``pairs`` (its training data)
    and write it there (``SHORTLIST``, replacing one), the folder locked meanwhile.

    Raises:
        FileNotFoundError: not a model folder.
        ValueError: as ``lexical_counts`` and ``Shortlist.from_counts``; the folder locked by
            another process.
    """
    path = Path(folder)
    model = Seq2Seq.from_pretrained(path, shortlist=False)  # an earlier one is replaced
    table = Shortlist.from_counts(lexical_counts(model, pairs, batch_size), k, n)
    with locked(path):
        table.save(path, model.src_vocab, model.tgt_vocab)
    return table
