"""Lexical shortlists: the target pieces a batch of sources may need, so that decoding runs
the output layer and the softmax over those columns only (Marian's shortlists; Junczys-
Dowmunt et al. 2018, "Marian: Cost-effective High-Quality Neural Machine Translation in C++").

A shortlist is a lexical table cut short: for each source piece s its ``K`` most likely
target pieces by p(t | s), counted from word alignments of the training data
(``luong.translation.lexicon``), plus the ``N`` most frequent target pieces. A batch's candidates
are the union of its source pieces' rows, the frequent pieces and the special symbols
(``Shortlist.candidates``), sorted: the specials, the lowest ids, keep their ids, so a search
over the candidates' columns reads PAD, BOS and EOS where it always does.

The table is a file of the model folder (``SHORTLIST``, safetensors): ``targets`` int32
``[V_src, K]`` (each row best first, rows with fewer than ``K`` pieces seen padded with EOS,
which every batch holds anyway) and ``frequent`` int32 ``[N]``; its metadata names the
format and the two vocabularies it was counted for (a SHA-256 of each one's JSON), so that a
table of another model is refused on load (``Shortlist.load``).

Shapes: ``B`` batch, ``S`` source length, ``V`` target vocabulary, ``V'`` the candidates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from luong.common.errors import LuongError, LuongTypeError
from luong.common.folder_files import SHORTLIST
from luong.common.tensor_files import (
    read_tensor_metadata,
    read_tensor_shapes,
    read_tensors,
    write_tensors,
)
from luong.data.vocab import Vocab

__all__ = ["FORMAT", "NEVER_LISTED", "SPECIAL_IDS", "Shortlist", "vocab_fingerprint"]

FORMAT = "luong-shortlist"
"""The ``format`` of a shortlist file's metadata."""

SPECIAL_IDS = (Vocab.pad_id, Vocab.bos_id, Vocab.eos_id, Vocab.unk_id)
"""The special symbols, ids 0 to 3: in every batch's candidates, at their own ids."""

_TENSORS = ("frequent", "targets")


def vocab_fingerprint(vocab: Vocab) -> str:
    """The SHA-256 of a vocabulary's JSON (its symbols, or its sentencepiece model's hash):
    what a shortlist file records of the vocabularies it was counted for."""
    text = json.dumps(vocab.to_json(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Shortlist:
    """A lexical shortlist (module docstring).

    targets: long ``[V_src, K]``, each source piece's ``K`` most likely target pieces, best
    first; frequent: long ``[N]``, the most frequent target pieces; tgt_size: V.
    """

    targets: Tensor
    frequent: Tensor
    tgt_size: int

    @property
    def k(self) -> int:
        """The target pieces the table holds per source piece."""
        return int(self.targets.shape[1])

    @classmethod
    def from_counts(cls, counts: Tensor, k: int, n: int) -> Shortlist:
        """The shortlist of a table of link counts ``[V_src, V]`` (how often target piece t
        was aligned to source piece s): each row's ``k`` most counted pieces (p(t | s) =
        count / row total orders them as the counts do; a piece never seen is not kept, its
        place EOS), and the ``n`` most frequent target pieces (by their links). A ``k`` above
        V keeps all V (a table wider than the target vocabulary would be refused when a model
        reads it, and ``luong shortlist --per-source 99999999999`` once tried to allocate its
        padding: 3 PB).

        Raises:
            ValueError: ``k`` below 1, ``n`` below 0, counts not 2-D.
        """
        if not isinstance(counts, Tensor) or counts.dim() != 2:
            raise LuongTypeError(f"counts: expected a 2-D tensor [V_src, V], got {counts!r:.60}")
        for name, value, low in (("k", k, 1), ("n", n, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LuongError(f"{name}: expected an int >= {low}, got {value!r:.60}")
        size = counts.shape[1]
        k = min(k, size)
        counts = counts.double()
        counts[:, list(SPECIAL_IDS)] = 0  # always candidates: no place of a row goes to them
        top, ids = counts.topk(k, dim=1, sorted=True)
        targets = torch.where(top > 0, ids, Vocab.eos_id)
        totals = counts.sum(dim=0)
        seen = int((totals > 0).sum())
        frequent = totals.topk(min(n, seen)).indices
        return cls(targets.long(), frequent.long(), size)

    def candidates(self, sources: Iterable[Tensor], k: int, extra: Iterable[int] = ()) -> Tensor:
        """The sorted target ids ``[V']`` a batch may need: the specials, the frequent pieces,
        ``extra`` (a prefix's ids) and the first ``k`` of each source id's row, for every
        tensor of ``sources`` (the ids of the batch's sources, any shape; PAD reads its own
        row, which holds nothing but what every batch holds).

        Raises:
            ValueError: ``k`` out of [1, K], a source id out of the table's range.
        """
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.k:
            raise LuongError(
                f"shortlist: expected 1 to {self.k} (the pieces the model's shortlist holds per "
                f"source piece), got {k!r}"
            )
        keep = torch.zeros(self.tgt_size, dtype=torch.bool, device=self.targets.device)
        keep[list(SPECIAL_IDS)] = True
        keep[self.frequent] = True
        extra = list(extra)
        if extra:
            keep[torch.tensor(extra, dtype=torch.long, device=keep.device)] = True
        rows = self.targets[:, :k]
        for ids in sources:
            flat = ids.reshape(-1).to(rows.device)
            if flat.numel() and not 0 <= int(flat.min()) <= int(flat.max()) < len(rows):
                raise LuongError(
                    f"sources: expected ids below {len(rows)} (the shortlist's source "
                    f"pieces), got {int(flat.max())}"
                )
            keep[rows.index_select(0, flat.unique()).reshape(-1)] = True
        return keep.nonzero().squeeze(1)

    def save(self, folder: str | Path, src_vocab: Vocab, tgt_vocab: Vocab) -> Path:
        """Write ``folder/SHORTLIST`` atomically, recording the two vocabularies; its path."""
        path = Path(folder) / SHORTLIST
        metadata = {
            "format": FORMAT,
            "src_vocab": vocab_fingerprint(src_vocab),
            "tgt_vocab": vocab_fingerprint(tgt_vocab),
        }
        tensors = {"targets": self.targets.int(), "frequent": self.frequent.int()}
        write_tensors(path, tensors, metadata)
        return path

    @classmethod
    def load(cls, folder: str | Path, src_vocab: Vocab, tgt_vocab: Vocab) -> Shortlist:
        """Read ``folder/SHORTLIST`` and check it against the model's vocabularies.

        Raises:
            FileNotFoundError: no such file.
            ValueError: not a readable safetensors file, another format, a table counted for
                other vocabularies, tensors missing or extra, of another dtype or shape, a
                ``K`` above the target vocabulary's size (read from the file's header, before
                the table), ids out of range or ids no row holds (PAD, BOS); the message
                names the file and what is wrong.
        """
        path = Path(folder) / SHORTLIST
        # K bounded from the header before a byte of the table is read: a sparse file of a
        # few MB may declare a [V_src, 250000] table of gigabytes.
        problem = _shape_problem(read_tensor_shapes(path), len(tgt_vocab))
        if problem is None:
            tensors = read_tensors(path)
            problem = _problem(tensors, read_tensor_metadata(path), src_vocab, tgt_vocab)
        if problem is not None:
            raise LuongError(
                f"{path}: not a shortlist of this model ({problem}); build it again (luong "
                f"shortlist {Path(folder)}) or remove it"
            )
        return cls(tensors["targets"].long(), tensors["frequent"].long(), len(tgt_vocab))


NEVER_LISTED = (Vocab.pad_id, Vocab.bos_id)
"""Ids no shortlist holds: no output writes PAD or BOS (a row of unseen pieces is padded
with EOS; the specials are every batch's candidates anyway)."""


def _shape_problem(shapes: dict[str, tuple[int, ...]], tgt_size: int) -> str | None:
    """What is wrong with the table's shape as the file's header declares it: more target
    pieces per source piece (``K``) than the target vocabulary has, or than a row can hold
    (``[V_src, K]``); None otherwise (the rest is ``_problem``'s)."""
    shape = shapes.get("targets")
    if shape is not None and len(shape) == 2 and shape[1] > tgt_size:
        return (
            f"targets: K = {shape[1]} pieces per source piece, above the {tgt_size} of the "
            "target vocabulary"
        )
    return None


def _problem(
    tensors: dict[str, Tensor], metadata: dict[str, str], src_vocab: Vocab, tgt_vocab: Vocab
) -> str | None:
    """What is wrong with a shortlist file's contents, or None."""
    if metadata.get("format") != FORMAT:
        return f"format {metadata.get('format')!r}, expected {FORMAT!r}"
    for side, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if metadata.get(side) != vocab_fingerprint(vocab):
            return f"counted for another {side.replace('_', ' ')}ulary than the folder's"
    if sorted(tensors) != list(_TENSORS):
        return f"tensors {', '.join(sorted(tensors)) or 'none'}, expected frequent and targets"
    targets, frequent = tensors["targets"], tensors["frequent"]
    for name, tensor, dims in (("targets", targets, 2), ("frequent", frequent, 1)):
        if tensor.dtype not in (torch.int32, torch.int64) or tensor.dim() != dims:
            return f"{name}: {tensor.dtype} of shape {tuple(tensor.shape)}, expected {dims}-D ints"
    if targets.shape[0] != len(src_vocab) or targets.shape[1] < 1:
        return (
            f"targets: shape {tuple(targets.shape)}, expected [{len(src_vocab)}, K >= 1] (a row "
            "per source piece)"
        )
    for name, tensor in (("targets", targets), ("frequent", frequent)):
        if tensor.numel() and not 0 <= int(tensor.min()) <= int(tensor.max()) < len(tgt_vocab):
            return f"{name}: ids out of [0, {len(tgt_vocab)}), got {int(tensor.max())}"
        never = [i for i in NEVER_LISTED if bool((tensor == i).any())]
        if never:
            return f"{name}: holds id {never[0]} (PAD or BOS), which no shortlist lists"
    return _shape_problem({"targets": tuple(targets.shape)}, len(tgt_vocab))
