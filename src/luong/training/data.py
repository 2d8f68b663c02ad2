"""What the trainer trains on: the training pairs checked against the model's limits
(``training_data``: text's pairs as ``ParallelData``, or a prepared corpus read from disk),
the dev and test sources likewise (``check_lengths``), each epoch's optimizer steps in an
order that follows from the seed and the epoch alone (``epoch_steps``), so that a resumed
run replays it, and how many steps the run takes (``StepCounts``: the schedule's total).
"""

from __future__ import annotations

import multiprocessing
import random
import signal
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch

from luong.common.errors import LuongError
from luong.config.train import TrainConfig
from luong.data.batching import ParallelData, TooLong, bucketed_batches, token_batches
from luong.data.prepared import PreparedData
from luong.model.seq2seq import Seq2Seq
from luong.search import default_max_len
from luong.training.distributed import World, shard
from luong.translation.admission import admit, refusals

__all__ = [
    "COUNT_AFTER_START",
    "StepCounts",
    "check_lengths",
    "epoch_seed",
    "epoch_step_count",
    "epoch_steps",
    "training_data",
]

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
        raise LuongError(f"{error}; {_longer(config.init_from, needed, error.side)}") from None


def _longer(init_from: str, needed: int, side: str = "sources") -> str:
    """What to do about pairs too long for the model: raise its ``max_src_len`` to
    ``needed``, or, for a model a fine-tuning run starts from (``init_from``), which keeps
    its own (``luong.training.fine_tuning``), shorten them."""
    if not init_from:
        return f"raise max_src_len (--max-src-len {needed})"
    return (
        f"the model of --init-from {init_from} keeps its max_src_len, which a fine-tuning run "
        f"cannot raise: shorten those {side} or leave their pairs out"
    )


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


def check_lengths(
    model: Seq2Seq, pairs: Sequence[Pair], name: str = "dev_pairs", init_from: str = ""
) -> None:
    """Raises ValueError when a source of ``pairs`` (a run's dev or test split, called
    ``name``) is one the model does not take (``luong.translation.admission.admit``, the rule
    of every face: longer than its ``max_src_len``, not valid Unicode), before the first
    step, rather than when the split is decoded (the message for a model ``init_from``
    names, which a fine-tuning run keeps, says so)."""
    refused = refusals(admit(model, [source for source, _ in pairs]))
    too_long = [verdict for _, verdict in refused if verdict.kind == "too_long"]
    if too_long:
        longest, limit = max(verdict.length for verdict in too_long), too_long[0].limit
        raise LuongError(
            f"{name}: {len(too_long)} sources are longer than the model's max_src_len={limit} "
            f"symbols (the longest has {longest}); " + _longer(init_from, longest)
        )
    if refused:
        first, verdict = refused[0]
        raise LuongError(f"{name}: pair {first + 1}: its source is {verdict.detail}")


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


def epoch_step_count(
    data: ParallelData | PreparedData, config: TrainConfig, world: World, epoch: int
) -> int:
    """``len(epoch_steps(data, config, world, epoch))``; with batches of ``batch_size``
    examples, from the sizes alone (every pool of ``bucketed_batches`` but the last is cut
    into whole batches: ``ceil(examples / batch_size)`` batches, whatever the order), without
    building them."""
    if config.batch_tokens:
        return len(epoch_steps(data, config, world, epoch))
    batches = -(-len(data.src_lengths) // config.batch_size)
    return -(-(batches // world.size) // config.accumulate)  # shard, then accumulate


COUNT_AFTER_START = 1_000_000
"""Examples times epochs (after the first) above which ``StepCounts`` counts the later
epochs' steps in a child process while training starts: batches of tokens must be built to
be counted (each epoch's order decides how its pools are cut), 1.6 to 3.8 s an epoch at 2M
pairs, which at 24 epochs kept the first step 40 to 84 s away (``benchmarks/
startup_epochs.py``); below it the count takes about a second."""


class StepCounts:
    """The optimizer steps of each epoch of a run (``epoch_step_count``), whose sum is the
    schedule's total: counted at once where that is quick (batches of ``batch_size``
    examples; fewer than ``COUNT_AFTER_START`` examples times epochs), else by a child
    process (forked, so it reads the data as the trainer holds it) while training starts.
    ``total`` waits for the child the first time it is needed (a learning rate after the
    warm-up that decays over the run); ``known`` does not wait.

    Args:
        data: the training data (its lengths: the batches are cut from them).
        config: the batching (``batch_size`` or ``batch_tokens``, ``accumulate``), ``seed``
            and ``epochs``.
        world: this rank's place among the processes (its share of each epoch).
        first: the first epoch's steps, built already.

    Raises:
        ValueError: an epoch with fewer batches than there are ranks (``total``, when the
            child counted it).
    """

    def __init__(
        self, data: ParallelData | PreparedData, config: TrainConfig, world: World, first: int
    ) -> None:
        self.data, self.config, self.world = data, config, world
        self.first = first
        self.epochs = config.epochs
        self._counts: list[int] | None = None
        self._child: Any = None
        self._receive: Connection | None = None
        later = range(2, config.epochs + 1)
        forks = "fork" in multiprocessing.get_all_start_methods()
        if not config.batch_tokens or len(data) * len(later) <= COUNT_AFTER_START or not forks:
            self._settle([epoch_step_count(data, config, world, epoch) for epoch in later])
            return
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._child = context.Process(
            target=_count_epochs, args=(send, data, config, world, later), daemon=True
        )
        self._child.start()
        send.close()

    @property
    def at_least(self) -> int:
        """A floor of ``total``, without waiting: the first epoch's steps and one a later
        epoch (the total itself once known)."""
        return sum(self._counts) if self._counts is not None else self.first + self.epochs - 1

    def known(self) -> int | None:
        """``total`` if the later epochs are counted, else None (without waiting)."""
        if self._counts is None and self._receive is not None and self._receive.poll():
            return self.total
        return sum(self._counts) if self._counts is not None else None

    @property
    def total(self) -> int:
        """The run's steps: every epoch's, summed (waits for the child if it is counting)."""
        if self._counts is None:
            assert self._receive is not None and self._child is not None
            try:
                later: list[int] = self._receive.recv()
            except EOFError:  # the child died: count here
                later = [
                    epoch_step_count(self.data, self.config, self.world, epoch)
                    for epoch in range(2, self.epochs + 1)
                ]
            self._receive.close()
            self._child.join()
            self._settle(later)
        assert self._counts is not None
        return sum(self._counts)

    def _settle(self, later: list[int]) -> None:
        counts = [self.first, *later]
        if min(counts) < 1:
            config = self.config
            size = f"{config.batch_tokens} tokens" if config.batch_tokens else config.batch_size
            raise LuongError(
                f"train_pairs: {len(self.data)} pairs make fewer batches of {size} "
                f"than there are ranks ({self.world.size})"
            )
        self._counts = counts


def _count_epochs(
    send: Connection,
    data: ParallelData | PreparedData,
    config: TrainConfig,
    world: World,
    epochs: range,
) -> None:
    """The child of ``StepCounts``: each of ``epochs``' steps counted, sent as a list. It
    leaves SIGINT to its parent (which finishes its step and checkpoint) and dies of SIGTERM
    (the parent then counts for itself, if it still needs the total)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        send.send([epoch_step_count(data, config, world, epoch) for epoch in epochs])
    finally:
        send.close()
