"""Text as tensors: padding, masks, source strings as a batch, parallel data, and batches of
similar lengths.

Shapes: ``N`` pairs, ``B`` batch, ``S`` source length, ``T`` target length (with BOS and EOS).
Padding is ``Vocab.pad_id`` (0) after the real ids; a mask is True at real positions
(``luong.model.attention.length_mask``).
"""

from __future__ import annotations

import array
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sentencepiece as spm
import torch
from torch import Tensor

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError
from luong.data.subword import SubwordVocab
from luong.data.vocab import Vocab
from luong.model.attention import length_mask

__all__ = [
    "Batch",
    "Lengths",
    "ParallelData",
    "TooLong",
    "bucketed_batches",
    "check_batch",
    "encode_sources",
    "pad_batch",
    "source_mask",
    "token_batches",
]


def pad_batch(
    ids: Sequence[Sequence[int]], device: torch.device | str = "cpu"
) -> tuple[Tensor, Tensor]:
    """Id lists -> a padded ``[B, S]`` long tensor (pad id 0) and the lengths ``[B]``."""
    width = max((len(x) for x in ids), default=0)
    rows = [list(x) + [Vocab.pad_id] * (width - len(x)) for x in ids]
    batch = torch.tensor(rows, dtype=torch.long).view(len(ids), width)
    lengths = torch.tensor([len(x) for x in ids], dtype=torch.long)
    return batch.to(device), lengths.to(device)


def encode_sources(
    vocab: Vocab, texts: Sequence[str], device: torch.device | str = "cpu"
) -> tuple[Tensor, Tensor]:
    """Raw strings -> src ``[B, S]`` (ids, EOS appended, padded) and lengths ``[B]``."""
    return pad_batch([vocab.encode(text, eos=True) for text in texts], device)


def source_mask(src: Tensor, src_lengths: Tensor) -> Tensor:
    """The mask ``[B, S]`` of a padded batch src ``[B, S]``: True at real positions."""
    return length_mask(src_lengths.to(src.device), src.shape[1])


def check_batch(src: Tensor, src_lengths: Tensor) -> None:
    """Check a source batch at a public boundary: src a long tensor ``[B, S]``, src_lengths
    ``[B]`` with every length in ``[1, S]``.

    Raises:
        ValueError: naming the tensor, the expected and the actual shape or values.
    """
    if not isinstance(src, Tensor) or src.dim() != 2 or src.dtype != torch.long:
        got = f"{src.dtype} {tuple(src.shape)}" if isinstance(src, Tensor) else type(src).__name__
        raise LuongError(f"src: expected a long tensor [B, S], got {got}")
    if (
        not isinstance(src_lengths, Tensor)
        or src_lengths.dim() != 1
        or src_lengths.shape[0] != src.shape[0]
    ):
        found = (
            str(tuple(src_lengths.shape))
            if isinstance(src_lengths, Tensor)
            else type(src_lengths).__name__
        )
        raise LuongError(f"src_lengths: expected shape [B] = ({src.shape[0]},), got {found}")
    if src_lengths.numel() and not (
        int(src_lengths.min()) >= 1 and int(src_lengths.max()) <= src.shape[1]
    ):
        raise LuongError(
            f"src_lengths: expected lengths in [1, S = {src.shape[1]}], got {src_lengths.tolist()}"
        )


@dataclass(frozen=True)
class Batch:
    """One training batch: src ``[B, S]``, src_lengths ``[B]``, tgt ``[B, T]`` (BOS y EOS,
    padded); the decoder reads ``tgt[:, :-1]`` and predicts ``tgt[:, 1:]``."""

    src: Tensor
    src_lengths: Tensor
    tgt: Tensor

    @property
    def target_tokens(self) -> int:
        """Real target tokens predicted (EOS included, BOS not)."""
        return int((self.tgt[:, 1:] != Vocab.pad_id).sum())

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.src.to(device), self.src_lengths.to(device), self.tgt.to(device))


class ParallelData:
    """Pairs encoded once into padded tensors: src ``[N, S_max]`` (EOS-terminated) and tgt
    ``[N, T_max]`` (BOS, target, EOS), with their lengths.

    Lengths are checked pair by pair as the pairs are encoded, before anything is padded: one
    long line among short ones would otherwise pad every row to its length (a 200,000-symbol
    line in 211 KB of pairs took 3 GB).

    Args:
        pairs: (source, target) strings.
        src_vocab: encodes the sources; unknown symbols become unk.
        tgt_vocab: encodes the targets.
        sampling: subword regularisation: with both vocabularies ``SubwordVocab``, each
            sentence gets a sampled segmentation (``SubwordVocab.sample`` with this alpha)
            instead of the most probable one; 0 for none.
        seed: seeds sentencepiece's generator for the sampling, so an epoch's segmentations
            follow from it.
        max_src_len: the longest source, in symbols (EOS not counted); None: no limit.
        max_tgt_len: the longest target, in symbols (BOS and EOS not counted); None: no limit.
        name: the pairs' name in messages.

    Raises:
        ValueError: no pairs.
        TooLong: sources or targets longer than their limit (how many, the longest, and the
            first such pair).
    """

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        *,
        sampling: float = 0.0,
        seed: int = 0,
        max_src_len: int | None = None,
        max_tgt_len: int | None = None,
        name: str = "pairs",
    ) -> None:
        if not pairs:
            raise LuongError(f"{name}: expected at least one (source, target) pair, got none")
        self.pairs = list(pairs)
        if sampling:
            if not (isinstance(src_vocab, SubwordVocab) and isinstance(tgt_vocab, SubwordVocab)):
                raise LuongError("sampling: needs subword vocabularies on both sides")
            spm.set_random_generator_seed(seed)
            src = [src_vocab.sample(s, sampling) for s, _ in self.pairs]
            tgt = [[Vocab.bos_id, *tgt_vocab.sample(t, sampling)] for _, t in self.pairs]
        else:
            src = [src_vocab.encode(s, eos=True) for s, _ in self.pairs]
            tgt = [tgt_vocab.encode(t, bos=True, eos=True) for _, t in self.pairs]
        _check_lengths(name, "sources", [len(ids) - 1 for ids in src], max_src_len)
        _check_lengths(name, "targets", [len(ids) - 2 for ids in tgt], max_tgt_len)
        self.src, self.src_lengths = pad_batch(src)
        self.tgt, self.tgt_lengths = pad_batch(tgt)

    def __len__(self) -> int:
        return len(self.pairs)

    def batch(self, indices: Sequence[int] | np.ndarray) -> Batch:
        """The pairs at ``indices``, trimmed to the longest of them."""
        index = torch.as_tensor(indices, dtype=torch.long)
        src_lengths = self.src_lengths[index]
        tgt_lengths = self.tgt_lengths[index]
        return Batch(
            self.src[index, : int(src_lengths.max())],
            src_lengths,
            self.tgt[index, : int(tgt_lengths.max())],
        )


class TooLong(LuongError):
    """Sources or targets longer than their limit (``ParallelData``): ``side`` is
    ``"sources"`` or ``"targets"``, ``longest`` the longest of them, in symbols."""

    def __init__(self, message: str, side: str, longest: int) -> None:
        super().__init__(message)
        self.side = side
        self.longest = longest


def _check_lengths(name: str, side: str, lengths: list[int], limit: int | None) -> None:
    if limit is None:
        return
    too_long = [i for i, length in enumerate(lengths) if length > limit]
    if too_long:
        longest = max(lengths)
        what = "the model's max_src_len" if side == "sources" else "the longest output allowed"
        raise TooLong(
            f"{name}: {len(too_long)} {side} are longer than {what}={limit} symbols (the "
            f"longest has {longest}; the first is pair {too_long[0] + 1})",
            side,
            longest,
        )


Lengths = Sequence[int] | np.ndarray | Tensor
"""One length per example: a list, a 1-D numpy array or a 1-D tensor."""


def _lengths(name: str, lengths: Lengths) -> np.ndarray:
    """``lengths`` as a 1-D integer array (a view of the caller's where it is one)."""
    held = np.asarray(lengths.cpu() if isinstance(lengths, Tensor) else lengths)
    if held.ndim != 1 or not (held.size == 0 or np.issubdtype(held.dtype, np.integer)):
        raise LuongError(
            f"{name}: expected one int per example, got an array of shape {held.shape} and "
            f"dtype {held.dtype}"
        )
    # int32 (a prepared corpus's) and int64 (a tensor's) are used as they are.
    return held if held.dtype == np.int32 else held.astype(np.int64, copy=False)


def _shuffled(count: int, rng: random.Random) -> np.ndarray:
    """``0 .. count - 1`` in the order ``rng.shuffle`` gives a list of them, held as 4 bytes
    an example (8 past 2**31 examples): a list of Python ints costs 36 (its pointer and the
    int), which at millions of pairs is most of a run's memory besides the model."""
    order = array.array("i" if count < 2**31 else "q", range(count))
    rng.shuffle(order)  # the same swaps, from the same draws, as on a list
    return np.frombuffer(order, dtype=np.int32 if order.typecode == "i" else np.int64)


def bucketed_batches(
    lengths: Lengths, batch_size: int, rng: random.Random, pool: int = 32
) -> list[np.ndarray]:
    """Shuffle, then sort by length inside pools of ``pool`` batches, cut into batches and
    shuffle the batches: little padding, and still a different mix every epoch.

    Args:
        lengths: a length per example (the source's).
        batch_size: examples per batch (the last batch of a pool may be smaller).
        rng: the only source of randomness, so an epoch's order follows from its seed.
        pool: batches per sorting pool.

    Returns:
        one integer array of example indices per batch (int32 below 2**31 examples).

    Raises:
        ValueError: ``batch_size`` or ``pool`` below 1, or lengths that are not one int an
            example.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("pool", pool)
    lengths = _lengths("lengths", lengths)
    order = _shuffled(len(lengths), rng)
    batches: list[np.ndarray] = []
    span = batch_size * pool
    for start in range(0, len(order), span):
        chunk = order[start : start + span]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]  # as sorted(key=length)
        batches.extend(chunk[i : i + batch_size].copy() for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def token_batches(
    src_lengths: Lengths,
    tgt_lengths: Lengths,
    max_tokens: int,
    rng: random.Random,
    pool: int = 32,
) -> list[np.ndarray]:
    """Batches of at most ``max_tokens`` tokens, padding counted, with lengths bucketed as
    ``bucketed_batches`` does: shuffle, sort by length inside pools, cut, shuffle the batches.

    A batch of rows r costs ``len(r) * (max source length + max target length)`` tokens: every
    position the encoder and the decoder compute, padding included. Every example is in
    exactly one batch. Only a pool's worth of Python ints exists at a time: the lengths, the
    order and the batches are numpy arrays (4 bytes an example for the order and the
    batches), so that millions of pairs (a prepared corpus) cost megabytes, not hundreds.

    Args:
        src_lengths: a length per example (the source's, EOS included).
        tgt_lengths: the target's (BOS and EOS included).
        max_tokens: the most tokens a batch may cost.
        rng: the only source of randomness.
        pool: batches per sorting pool (measured in examples from the mean batch).

    Returns:
        one integer array of example indices per batch (int32 below 2**31 examples).

    Raises:
        ValueError: ``max_tokens`` or ``pool`` below 1, lengths of different counts or not
            one int an example, or an example that alone costs more than ``max_tokens``.
    """
    check_positive_int("max_tokens", max_tokens)
    check_positive_int("pool", pool)
    src_all = _lengths("src_lengths", src_lengths)
    tgt_all = _lengths("tgt_lengths", tgt_lengths)
    if len(src_all) != len(tgt_all):
        raise LuongError(
            f"tgt_lengths: expected {len(src_all)} lengths (one per source), got {len(tgt_all)}"
        )
    sizes = src_all + tgt_all  # lengths are far below 2**30: no overflow
    too_big = int((sizes > max_tokens).sum())
    if too_big:
        raise LuongError(
            f"batch_tokens: {too_big} pairs cost more than {max_tokens} tokens alone (the "
            f"largest {int(sizes.max())}: source + target, EOS and BOS included); raise "
            "batch_tokens"
        )
    order = _shuffled(len(sizes), rng)
    mean = int(sizes.sum(dtype=np.int64)) / len(sizes) if len(sizes) else 1.0
    span = max(1, int(pool * max_tokens / mean))  # examples per pool: about pool batches
    batches: list[np.ndarray] = []
    for start in range(0, len(order), span):
        chunk = order[start : start + span]
        chunk = chunk[np.lexsort((src_all[chunk], sizes[chunk]))]  # by (size, source), stable
        cuts = _cuts(src_all[chunk].tolist(), tgt_all[chunk].tolist(), max_tokens)
        batches.extend(np.split(chunk, cuts))
    rng.shuffle(batches)
    return batches


def _cuts(src_lengths: list[int], tgt_lengths: list[int], max_tokens: int) -> list[int]:
    """Where to cut examples taken in this order into batches of at most ``max_tokens``
    tokens each (a batch costs its size times its longest source plus its longest target):
    greedily, a new batch when the next example would overflow this one."""
    cuts: list[int] = []
    size = longest_src = longest_tgt = 0
    for k, (src_length, tgt_length) in enumerate(zip(src_lengths, tgt_lengths, strict=True)):
        src, tgt = max(longest_src, src_length), max(longest_tgt, tgt_length)
        if size and (size + 1) * (src + tgt) > max_tokens:
            cuts.append(k)
            size, src, tgt = 0, src_length, tgt_length
        size += 1
        longest_src, longest_tgt = src, tgt
    return cuts
