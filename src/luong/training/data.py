"""What the trainer trains on: the training pairs checked against the model's limits
(``training_data``: text's pairs as ``ParallelData``, or a prepared corpus read from disk),
the dev sources likewise (``check_dev_lengths``), and each epoch's optimizer steps in an
order that follows from the seed and the epoch alone (``epoch_steps``), so that a resumed
run replays it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import torch

from luong.batching import ParallelData, TooLong, bucketed_batches, token_batches
from luong.config.train import TrainConfig
from luong.distributed import World, shard
from luong.errors import LuongError
from luong.model import Seq2Seq
from luong.prepared import PreparedData
from luong.search import default_max_len

__all__ = ["check_dev_lengths", "epoch_seed", "epoch_steps", "training_data"]

Pair = tuple[str, str]


def training_data(
    pairs: Sequence[Pair] | PreparedData, model: Seq2Seq, config: TrainConfig
) -> ParallelData | PreparedData:
    """``pairs`` as the trainer reads them, checked before anything is padded: sources
    against the model's ``max_src_len``, targets against the longest output search gives
    such a source.

    Raises:
        ValueError: naming the data and what to change.
    """
    limit = model.config.max_src_len
    longest_output = int(default_max_len(torch.tensor(limit + 1))) - 1  # EOS not counted
    if isinstance(pairs, PreparedData):
        return _checked_prepared(pairs, model, config, limit, longest_output)
    try:
        return ParallelData(
            pairs,
            model.src_vocab,
            model.tgt_vocab,
            max_src_len=limit,
            max_tgt_len=longest_output,
            name="train_pairs",
        )
    except TooLong as error:
        # The output limit is 2 (max_src_len + 1) + 10 tokens, EOS included.
        needed = error.longest if error.side == "sources" else (error.longest - 11 + 1) // 2
        raise LuongError(f"{error}; raise max_src_len (--max-src-len {needed})") from None


def _checked_prepared(
    data: PreparedData, model: Seq2Seq, config: TrainConfig, limit: int, longest_output: int
) -> PreparedData:
    """A prepared corpus the model can train on: its vocabularies, lengths within the
    model's limits (as ``ParallelData`` checks text), no subword sampling (its segmentation
    is fixed on disk).

    Raises:
        ValueError: naming the corpus and what to change.
    """
    data.check_vocabularies(model.src_vocab, model.tgt_vocab)
    if config.subword_sampling:
        raise LuongError(
            f"subword_sampling: a prepared corpus ({data.folder}) holds one segmentation of "
            "each pair; train from text to sample segmentations"
        )
    source, target = data.longest()
    if source > limit:
        count = int((data.src_lengths - 1 > limit).sum())
        raise LuongError(
            f"{data.folder}: {count} sources are longer than the model's max_src_len={limit} "
            f"symbols (the longest has {source}); raise max_src_len (--max-src-len {source}) "
            f"or prepare with --max-src-len {limit}"
        )
    if target > longest_output:
        count = int((data.tgt_lengths - 2 > longest_output).sum())
        raise LuongError(
            f"{data.folder}: {count} targets are longer than the longest output allowed="
            f"{longest_output} symbols (the longest has {target}); raise max_src_len "
            f"(--max-src-len {(target - 11 + 1) // 2}) or prepare with --max-tgt-len "
            f"{longest_output}"
        )
    return data


def check_dev_lengths(model: Seq2Seq, dev_pairs: Sequence[Pair]) -> None:
    """Raises ValueError when a dev source is longer than the model's ``max_src_len``."""
    limit = model.config.max_src_len
    dev_lengths = [len(model.src_vocab.tokenize(s)) for s, _ in dev_pairs]
    if max(dev_lengths, default=0) > limit:
        longest = max(dev_lengths)
        raise LuongError(
            f"dev_pairs: {sum(n > limit for n in dev_lengths)} sources are longer than the "
            f"model's max_src_len={limit} symbols (the longest has {longest}); raise "
            f"max_src_len (--max-src-len {longest})"
        )


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of an epoch's batch order (and subword sampling)."""
    return seed * 1_000_003 + epoch


def epoch_steps(
    data: ParallelData | PreparedData, config: TrainConfig, world: World, epoch: int
) -> list[list[np.ndarray]]:
    """This rank's optimizer steps of ``epoch``, each a list of ``accumulate`` batches
    (the last may have fewer), each batch an array of example indices. The order follows
    from the seed and the epoch alone, so a resumed run replays it."""
    rng = random.Random(epoch_seed(config.seed, epoch))
    if config.batch_tokens:
        batches = token_batches(data.src_lengths, data.tgt_lengths, config.batch_tokens, rng)
    else:
        batches = bucketed_batches(data.src_lengths, config.batch_size, rng)
    batches = shard(batches, world)
    k = config.accumulate
    return [batches[i : i + k] for i in range(0, len(batches), k)]
