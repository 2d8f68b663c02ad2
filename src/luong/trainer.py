"""Training: the loop on given pairs, the loss, Adam or SGD, clipping, the schedule, dev
evaluation, early stopping and checkpoints.

``Trainer`` runs the loop; ``luong.run.train`` does everything ``luong train`` does around it
(the task's data, vocabularies, the model, the test set and the run folder).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import math
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from luong.batching import Batch, ParallelData, TooLong, bucketed_batches, token_batches
from luong.checkpoint import find_latest, read_checkpoint, write_checkpoint
from luong.config import TrainConfig
from luong.devices import autocast, check_precision
from luong.distributed import World, shard
from luong.errors import LuongError, LuongTypeError
from luong.evaluation import dev_loss, evaluate
from luong.files import write_text
from luong.folder_files import BEST, CHECKPOINTS, RECORDS, STATE, TENSORBOARD
from luong.model import Seq2Seq
from luong.prepared import PreparedData
from luong.search import default_max_len
from luong.subword import SubwordVocab
from luong.tensor_files import read_tensors
from luong.vocab import Vocab

__all__ = [
    "Progress",
    "Trainer",
    "TrainingDiverged",
    "TrainingInterrupted",
    "loss_of",
    "lr_factor",
    "resolve_select",
]

Pair = tuple[str, str]
LOGGER = logging.getLogger("luong")


def lr_factor(
    step: int, total: int, warmup: int, schedule: str, *, epoch: int = 1, halve_after: int = 0
) -> float:
    """The learning rate at ``step`` (0-based) of ``epoch`` (from 1) as a fraction of the
    peak: ``schedule`` "halving" keeps the peak for ``halve_after`` epochs and halves it at
    every later epoch (epoch ``halve_after + k`` gets ``0.5 ** k``), the others follow the
    step."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "halving":
        return 0.5 ** max(0, epoch - halve_after)
    if schedule == "constant" or total <= warmup:
        return 1.0
    progress = min(1.0, (step - warmup) / (total - warmup))
    if schedule == "linear":
        return 1.0 - progress
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def loss_of(
    model: Seq2Seq | torch.nn.Module,
    batch: Batch,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cross-entropy of a teacher-forced batch over its real target tokens (EOS included):
    their mean, or with ``reduction="sum"`` their sum (gradient accumulation divides the sums
    of several batches by their tokens in all).

    ``model`` is a ``Seq2Seq`` or a wrapper with its ``forward`` (DistributedDataParallel)."""
    logits = model(batch.src, batch.src_lengths, batch.tgt[:, :-1])  # [B, T, V]
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        batch.tgt[:, 1:].reshape(-1),
        ignore_index=Vocab.pad_id,
        label_smoothing=label_smoothing,
        reduction=reduction,
    )


def resolve_select(select: str, tgt_vocab: Vocab) -> str:
    """The dev figure a run selects on: ``select``, or for ``"auto"`` BLEU with a subword
    target vocabulary (translation) and exact match otherwise."""
    if select != "auto":
        return select
    return "bleu" if isinstance(tgt_vocab, SubwordVocab) else "exact"


class TrainingDiverged(LuongError):
    """Too many steps in a row had a non-finite loss or gradient."""


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; a resumable checkpoint was written first."""

    def __init__(self, checkpoint: Path | None, signum: int = signal.SIGINT) -> None:
        super().__init__(str(checkpoint) if checkpoint else "")
        self.checkpoint = checkpoint
        self.signum = signum  # the signal that stopped the run


@dataclass
class Progress:
    """Where a run stands; saved in every checkpoint so that a resumed run continues
    exactly where the checkpoint was taken."""

    step: int = 0  # optimizer steps taken (skipped non-finite steps included)
    epoch: int = 1  # the epoch under way, from 1
    batch: int = 0  # optimizer steps of that epoch done
    best: float | None = None  # best dev figure so far (the selected one; -loss for loss)
    best_step: int = 0  # the step of the best weights
    stale: int = 0  # evaluations since the best
    bad_in_row: int = 0  # consecutive non-finite steps
    skipped: int = 0  # non-finite steps skipped in all
    seconds: float = 0.0  # training wall time before this session
    losses: list[float] = field(default_factory=list)  # losses since the last evaluation
    curve: list[dict[str, Any]] = field(default_factory=list)  # one entry per evaluation
    # Since the last training record of log.jsonl: finite losses, gradient norms, tokens.
    interval_losses: list[float] = field(default_factory=list)
    interval_norms: list[float] = field(default_factory=list)
    interval_tokens: int = 0
    finished: bool = False
    stopped_early: bool = False
    # A mid-epoch dev evaluation is due at this step: a signal stopped the run before it
    # ended, so the resumed run does it first (an end-of-epoch one is done again anyway).
    eval_due: bool = False


class Trainer:
    """The training loop on given pairs.

    Args:
        model: the model to train (its vocabularies encode the pairs).
        train_pairs: (source, target) training pairs, or a prepared corpus
            (``luong.prepared``: segmented with the model's vocabularies, read from disk
            batch by batch).
        dev_pairs: pairs for evaluation during training and early stopping.
        config: the training settings.
        out: the run folder for checkpoints; None writes nothing.
        log: where to report resuming, skipped steps and evaluations (default: the "luong"
            logger at INFO).
        world: the data-parallel processes (``luong.distributed.setup``); one by default.
            Each rank trains on its shard of every epoch, DDP averages the gradients, and
            rank 0 alone evaluates, logs and writes.
    """

    def __init__(
        self,
        model: Seq2Seq,
        train_pairs: Sequence[Pair] | PreparedData,
        dev_pairs: Sequence[Pair],
        config: TrainConfig,
        out: str | Path | None = None,
        log: Callable[[str], None] | None = None,
        world: World | None = None,
    ) -> None:
        if not isinstance(config, TrainConfig):
            raise LuongTypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
        if not dev_pairs:
            raise LuongError("dev_pairs: expected at least one pair, got none")
        if model.int8_parts:
            raise LuongError(
                f"model: an int8 model ({', '.join(model.int8_parts)} in int8, luong quantize) "
                "decodes only; train the float model it was made from"
            )
        self.model = model
        self.config = config
        self.select = resolve_select(config.select, model.tgt_vocab)
        # BLEU and chrF at every dev evaluation: translation, or a run that selects on them.
        self.bleu = self.select in ("bleu", "chrf") or isinstance(model.tgt_vocab, SubwordVocab)
        if config.subword_sampling and not isinstance(model.src_vocab, SubwordVocab):
            raise LuongError(
                f"subword_sampling: needs subword vocabularies, got {config.subword_sampling} "
                "with a vocabulary of characters or tokens"
            )
        limit = model.config.max_src_len
        # Lengths are checked before anything is padded (batching.ParallelData): sources
        # against max_src_len, targets against the longest output search gives such a source.
        longest_output = int(default_max_len(torch.tensor(limit + 1))) - 1  # EOS not counted
        self.data: ParallelData | PreparedData
        self.train_pairs: list[Pair] = []  # text's pairs (a prepared corpus stays on disk)
        if isinstance(train_pairs, PreparedData):
            self.data = _checked_prepared(train_pairs, model, config, limit, longest_output)
        else:
            self.train_pairs = list(train_pairs)
            try:
                self.data = ParallelData(
                    train_pairs,
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
        dev_lengths = [len(model.src_vocab.tokenize(s)) for s, _ in dev_pairs]
        if max(dev_lengths, default=0) > limit:
            longest = max(dev_lengths)
            raise LuongError(
                f"dev_pairs: {sum(n > limit for n in dev_lengths)} sources are longer than the "
                f"model's max_src_len={limit} symbols (the longest has {longest}); raise "
                f"max_src_len (--max-src-len {longest})"
            )
        self.dev_pairs = list(dev_pairs)
        self.world = world or World()
        self.out = Path(out) if out is not None and self.world.main else None
        say = log or LOGGER.info
        self.log = say if self.world.main else (lambda message: None)
        if config.tensorboard and importlib.util.find_spec("tensorboard") is None:
            raise LuongError(
                "tensorboard: the tensorboard package is not installed; pip install "
                "'luong[tensorboard]'"
            )
        self._writer: Any = None  # torch.utils.tensorboard's SummaryWriter (--tensorboard)
        self._interval_start = time.perf_counter()
        self.optimizer: torch.optim.Optimizer
        if config.optimizer == "sgd":  # plain SGD, as Luong et al. 2015 trained
            self.optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
        else:
            self.optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        check_precision(config.precision, model.device)  # fp16 only on CUDA
        # fp16: the loss scaled up before its backward, so that small gradients do not
        # underflow float16; a step whose scaled gradient overflows is skipped and the scale
        # halves (torch.amp.GradScaler). Disabled, it changes nothing.
        self.scaler = torch.amp.GradScaler(model.device.type, enabled=config.precision == "fp16")
        # Every epoch's batches are built once to count the schedule's steps; the first
        # epoch's are kept for run() (the one a fresh run starts with), the rest dropped.
        first = self._epoch_steps(1)
        self._built: tuple[int, object, list[list[np.ndarray]]] | None = (1, self.data, first)
        steps = [len(first)] + [
            len(self._epoch_steps(epoch)) for epoch in range(2, config.epochs + 1)
        ]
        if min(steps) < 1:
            size = f"{config.batch_tokens} tokens" if config.batch_tokens else config.batch_size
            raise LuongError(
                f"train_pairs: {len(self.data)} pairs make fewer batches of {size} "
                f"than there are ranks ({self.world.size})"
            )
        self.steps_per_epoch = steps[0]
        # With subword sampling the batches of later epochs differ a little from these: the
        # schedule counts the steps of the most probable segmentation.
        self.total_steps = sum(steps)
        self.forward: torch.nn.Module = model  # DistributedDataParallel(model) while training
        self.progress = Progress()
        self.best_state: dict[str, torch.Tensor] | None = None
        self._bar: Any = None  # the progress bar of a run under way
        self._session_start = time.perf_counter()

    @property
    def checkpoints(self) -> Path | None:
        return self.out / CHECKPOINTS if self.out is not None else None

    def _checkpoints_to_read(self) -> Path | None:
        # Every rank resumes from rank 0's files.
        folder = self.world.broadcast(str(self.checkpoints) if self.checkpoints else None)
        return Path(folder) if folder else None

    def resume(self) -> bool:
        """Restore the latest checkpoint of the run folder, if there is one."""
        checkpoints = self._checkpoints_to_read()
        if checkpoints is None:
            return False
        if self.world.main:
            for partial in checkpoints.glob(".partial-*"):
                shutil.rmtree(partial, ignore_errors=True)  # a write a kill cut short
            for leftover in checkpoints.glob(".*.tmp"):
                leftover.unlink(missing_ok=True)
        folder = self.world.broadcast(find_latest(checkpoints) if self.world.main else None)
        if folder is None:
            return False
        state = read_checkpoint(folder, self.model, self.optimizer, rank=self.world.rank)
        try:
            self.progress = Progress(**state["progress"])
        except (KeyError, TypeError) as error:
            raise LuongError(f"{folder / STATE}: no valid progress ({error})") from None
        scaler = state.get("scaler", {})  # fp16's loss scale (none in an fp32 or bf16 run)
        try:
            if scaler and self.scaler.is_enabled():
                self.scaler.load_state_dict(scaler)
        except (KeyError, TypeError, AttributeError) as error:
            raise LuongError(f"{folder / STATE}: no valid scaler state ({error})") from None
        best = folder / BEST
        if best.is_file():
            self.best_state = read_tensors(best)
        p = self.progress
        where = "finished" if p.finished else f"epoch {p.epoch}, step {p.step}/{self.total_steps}"
        self.log(f"resuming from {folder} ({where})")
        return True

    def run(self, on_eval: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Train from where ``progress`` stands; afterwards the model holds the weights of
        the best dev evaluation (the latest of equally good ones).

        Args:
            on_eval: called with each dev evaluation's point of the curve (rank 0 only).

        Returns:
            metrics: ``dev_exact_match`` (the best), ``steps``, ``epochs``, ``train_seconds``,
            ``skipped_steps``, ``dev_curve`` (per evaluation: step, seconds, dev exact match,
            mean training loss) and ``seconds_to_dev_0.99`` (None when never reached).

        Raises:
            TrainingDiverged: ``max_bad_steps`` non-finite steps in a row.
            TrainingInterrupted: SIGINT (Ctrl-C) or SIGTERM (``kill``, a scheduler), after
                writing a checkpoint: the step under way ends, a dev evaluation under way
                stops at once (the resumed run does it again).
        """
        cfg, model, p, world = self.config, self.model, self.progress, self.world
        interrupted = _SignalFlag()
        saved: Path | None = None
        if cfg.warmup_steps > self.total_steps and world.main and not p.finished:
            LOGGER.warning(
                f"warning: warmup_steps={cfg.warmup_steps} is more than the run's "
                f"{self.total_steps} steps: the learning rate only rises to "
                f"{self.total_steps}/{cfg.warmup_steps} of lr={cfg.lr:g} and never decays; "
                f"lower --warmup-steps (to {max(1, self.total_steps // 10)}, say) or train longer"
            )
        self._bar = tqdm(
            total=self.total_steps,
            initial=p.step,
            # None: no bar where stderr is no terminal (a log file gets no \r updates)
            disable=None if cfg.progress and world.main else True,
            unit="step",
            leave=False,
        )
        self._session_start = self._interval_start = time.perf_counter()
        if self.out is not None:
            _keep_records(self.out / RECORDS, p.step)  # a killed run's records after its checkpoint
            if cfg.tensorboard:
                self._writer = _summary_writer(self.out / TENSORBOARD, p.step)
        if world.active:
            self.forward = DistributedDataParallel(model)
        model.train()
        try:
            with interrupted:
                while not p.finished:
                    if cfg.subword_sampling:
                        self.data = ParallelData(
                            self.train_pairs,
                            model.src_vocab,
                            model.tgt_vocab,
                            sampling=cfg.subword_sampling,
                            seed=_epoch_seed(cfg.seed, p.epoch),
                        )
                    steps = self._take_epoch_steps(p.epoch)
                    stop = self._evaluate(on_eval, interrupted) if p.eval_due else False
                    for group in [] if stop else steps[p.batch :]:
                        batches = [self.data.batch(ix) for ix in group]
                        p.interval_tokens += sum(b.target_tokens for b in batches)
                        batches = [b.to(model.device) for b in batches]
                        stop_now = self._step(batches, interrupted)
                        p.step += 1
                        p.batch += 1
                        self._bar.update(1)
                        if p.step % cfg.log_every == 0:
                            self._record_interval()
                        p.eval_due = p.step % cfg.eval_every == 0 and p.batch < len(steps)
                        if stop_now:  # before the evaluation, which the resumed run does
                            raise TrainingInterrupted(self._checkpoint(), interrupted.signum)
                        if p.eval_due:
                            stop = self._evaluate(on_eval, interrupted)
                        if stop:
                            break
                        if cfg.checkpoint_every and p.step % cfg.checkpoint_every == 0:
                            self._checkpoint()
                    if not stop:
                        stop = self._evaluate(on_eval, interrupted)  # the end of the epoch
                    if stop or p.epoch >= cfg.epochs:
                        p.finished, p.stopped_early = True, stop
                    else:
                        p.epoch, p.batch = p.epoch + 1, 0
                    saved = self._checkpoint()
                # A signal during the last evaluation (no step follows to notice it).
                if world.broadcast(interrupted.raised):
                    raise TrainingInterrupted(saved, interrupted.signum)
        finally:
            self._bar.close()
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            # DDP's reducer must not outlive the process group: drop it now.
            self.forward = model
        if self.best_state is not None:
            model.load_state_dict(self.best_state)
        world.share_weights(model)  # rank 0 kept the best weights: every rank ends with them
        model.eval()
        reached = next((q["seconds"] for q in p.curve if q["dev_exact_match"] >= 0.99), None)
        best = next((q for q in p.curve if q["step"] == p.best_step), {})
        return {
            "select": self.select,
            **{k: v for k, v in best.items() if k.startswith("dev_")},
            "best_step": p.best_step,
            "steps": p.step,
            "epochs": p.epoch,
            "stopped_early": p.stopped_early,
            "skipped_steps": p.skipped,
            "train_seconds": round(self._seconds(), 3),
            "seconds_to_dev_0.99": reached,
            "dev_curve": p.curve,
        }

    def _seconds(self) -> float:
        """Training wall time: earlier sessions' and this one's."""
        return self.progress.seconds + time.perf_counter() - self._session_start

    def _lr(self, step: int) -> float:
        """The learning rate of ``step`` (0-based), in the epoch under way."""
        cfg = self.config
        factor = lr_factor(
            step,
            self.total_steps,
            cfg.warmup_steps,
            cfg.schedule,
            epoch=self.progress.epoch,
            halve_after=cfg.halve_after,
        )
        return cfg.lr * factor

    def _record_interval(self) -> None:
        """A training record of log.jsonl (and TensorBoard): the mean loss and gradient norm
        of the interval's finite steps, the learning rate of its last step, tokens per
        second (all ranks)."""
        p = self.progress
        now = time.perf_counter()
        tokens, seconds = p.interval_tokens * self.world.size, now - self._interval_start
        losses, norms = p.interval_losses, p.interval_norms
        record = {
            "kind": "train",
            "step": p.step,
            "epoch": p.epoch,
            "seconds": round(self._seconds(), 3),
            "loss": round(sum(losses) / len(losses), 6) if losses else None,
            "lr": self._lr(p.step - 1),
            "grad_norm": round(sum(norms) / len(norms), 6) if norms else None,
            "tokens_per_second": round(tokens / seconds, 1) if seconds > 0 else None,
        }
        p.interval_losses, p.interval_norms, p.interval_tokens = [], [], 0
        self._interval_start = now
        if not self.world.main:
            return
        LOGGER.debug(
            "step %d (epoch %d): loss %s, lr %.3g, gradient norm %s, %s tokens/s",
            *(record[k] for k in ("step", "epoch", "loss", "lr", "grad_norm")),
            record["tokens_per_second"],
        )
        self._write_record(record)

    def _write_record(self, record: dict[str, Any]) -> None:
        """Append ``record`` to log.jsonl and its numbers to TensorBoard (rank 0)."""
        if self.out is None:
            return
        with open(self.out / RECORDS, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")
        if self._writer is not None:
            for key, value in record.items():
                if key not in ("kind", "step", "epoch") and isinstance(value, int | float):
                    self._writer.add_scalar(f"{record['kind']}/{key}", value, record["step"])
            self._writer.flush()

    def _evaluate(
        self, on_eval: Callable[[dict[str, Any]], None] | None, interrupted: _SignalFlag
    ) -> bool:
        """Rank 0 evaluates on dev; every rank learns whether to stop early.

        Raises:
            TrainingInterrupted: SIGINT or SIGTERM reached rank 0 before or during the
                scoring, which stops there (a long decode must not outlast the signal), after
                a checkpoint that keeps the evaluation due.
        """
        stop: bool | None = None
        if self.world.main:
            try:
                stop = self._evaluate_on_main(on_eval, interrupted)
            except _Cut:
                self.model.train()  # the state is as before the evaluation; none of it kept
        outcome = self.world.broadcast((stop, interrupted.signum))
        if outcome[0] is None:
            raise TrainingInterrupted(self._checkpoint(), outcome[1])
        self.progress.eval_due = False
        return bool(outcome[0])

    def _evaluate_on_main(
        self, on_eval: Callable[[dict[str, Any]], None] | None, interrupted: _SignalFlag
    ) -> bool:
        """Score dev, add a point to the curve, keep the best weights; whether to stop.
        Nothing changes before the scores are in: a signal raises ``_Cut`` until then."""
        cfg, model, p = self.config, self.model, self.progress
        with interrupted.cutting():
            scores = evaluate(
                model,
                self.dev_pairs,
                cfg.dev_search,
                references=False,
                bleu=self.bleu,
                batch_size=cfg.eval_batch_size,
            )
            loss = (
                dev_loss(model, self.dev_pairs, cfg.eval_batch_size)
                if self.select == "loss"
                else None
            )
        point: dict[str, Any] = {
            "step": p.step,
            "epoch": p.epoch,
            "seconds": round(self._seconds(), 3),
            "dev_exact_match": scores["exact_match"],
            "dev_char_accuracy": scores["char_accuracy"],
        }
        if self.bleu:
            point.update(dev_bleu=round(scores["bleu"], 4), dev_chrf=round(scores["chrf"], 4))
        if loss is not None:
            point["dev_loss"] = round(loss, 6)
        model.train()
        mean_loss = sum(p.losses) / len(p.losses) if p.losses else float("nan")
        p.losses = []
        point["train_loss"] = round(mean_loss, 5)
        p.curve.append(point)
        shown = "dev_bleu" if self.bleu else "dev_exact_match"
        self._bar.set_postfix(loss=f"{mean_loss:.3f}", **{shown: f"{point[shown]:.4f}"})
        if on_eval is not None:
            on_eval(point)
        self._write_record({"kind": "eval", **point})
        shown_name = shown.removeprefix("dev_").replace("_", " ")
        self.log(
            f"step {p.step} (epoch {p.epoch}): train loss {mean_loss:.4f}, dev {shown_name} "
            f"{point[shown]:.4f}"
        )
        value = {
            "exact": point["dev_exact_match"],
            "bleu": point.get("dev_bleu"),
            "chrf": point.get("dev_chrf"),
            "loss": -point.get("dev_loss", 0.0),
        }[self.select]
        # A tie keeps the later weights: a small dev set saturates (the dates dev set sits
        # at 1.0 from the second epoch on) and the later weights have trained longer. Only
        # a strict improvement resets the early-stopping count.
        p.stale = 0 if p.best is None or value > p.best else p.stale + 1
        if p.best is None or value >= p.best:
            p.best, p.best_step = value, p.step
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return bool(cfg.patience) and p.stale >= cfg.patience

    def _checkpoint(self) -> Path | None:
        """Write a checkpoint (rank 0; every rank joins the gathering of generator states)."""
        rng = self.world.gather(_rng_state(self.model.device))
        if self.checkpoints is None:
            return None
        saved = dataclasses.replace(self.progress, seconds=round(self._seconds(), 3))
        return write_checkpoint(
            self.checkpoints,
            self.progress.step,
            self.model,
            self.optimizer,
            {"progress": dataclasses.asdict(saved), "scaler": self.scaler.state_dict()},
            keep=max(1, self.config.keep_checkpoints),
            extra={BEST: self.best_state} if self.best_state is not None else None,
            rng=rng,
        )

    def _take_epoch_steps(self, epoch: int) -> list[list[np.ndarray]]:
        """``_epoch_steps(epoch)``, the ones ``__init__`` built when they are of this epoch
        and of the same data (not after subword sampling re-segmented it)."""
        built, self._built = self._built, None
        if built is not None and built[0] == epoch and built[1] is self.data:
            return built[2]
        return self._epoch_steps(epoch)

    def _epoch_steps(self, epoch: int) -> list[list[np.ndarray]]:
        """This rank's optimizer steps of ``epoch``, each a list of ``accumulate`` batches
        (the last may have fewer), each batch an array of example indices. The order follows
        from the seed and the epoch alone, so a resumed run replays it."""
        cfg = self.config
        rng = random.Random(_epoch_seed(cfg.seed, epoch))
        if cfg.batch_tokens:
            batches = token_batches(
                self.data.src_lengths, self.data.tgt_lengths, cfg.batch_tokens, rng
            )
        else:
            batches = bucketed_batches(self.data.src_lengths, cfg.batch_size, rng)
        batches = shard(batches, self.world)
        k = cfg.accumulate
        return [batches[i : i + k] for i in range(0, len(batches), k)]

    def _step(self, batches: list[Batch], interrupted: _SignalFlag) -> bool:
        """One optimizer step on the gradients of ``batches`` (the loss: their mean per real
        target token), skipped when the loss or the gradient is not finite on any rank.
        Returns whether SIGINT or SIGTERM arrived on any rank (all ranks then stop
        together)."""
        cfg, p = self.config, self.progress
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr(p.step)
        # Normalised per sentence: the per-token mean times tokens / sentences (the logged
        # loss stays the mean per token).
        per = 1.0
        if cfg.normalize == "sentences":
            per = sum(b.target_tokens for b in batches) / sum(int(b.src.shape[0]) for b in batches)
        device, scaler = self.model.device, self.scaler
        if len(batches) == 1:
            with autocast(cfg.precision, device):
                loss = loss_of(self.forward, batches[0], cfg.label_smoothing)
            self.optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss * per).backward()
        else:
            tokens = sum(batch.target_tokens for batch in batches)
            self.optimizer.zero_grad(set_to_none=True)
            loss = torch.zeros((), device=device)
            for i, batch in enumerate(batches):
                # DDP averages the gradients once, after the last batch of the step.
                last = i == len(batches) - 1
                sync = nullcontext() if last or not self.world.active else self.forward.no_sync()  # type: ignore[operator]
                with sync, autocast(cfg.precision, device):
                    part = loss_of(self.forward, batch, cfg.label_smoothing, "sum") / tokens
                scaler.scale(part * per).backward()
                loss = loss + part.detach()
        scaler.unscale_(self.optimizer)  # fp16: the true gradients, before they are clipped
        norm = torch.nn.utils.clip_grad_norm_(
            self.model.parameters(), cfg.clip_norm if cfg.clip_norm else math.inf
        )
        flag = torch.tensor(float(interrupted.raised))
        finite, value, stop = self.world.reduce_step(loss, norm, flag)
        if finite:
            scaler.step(self.optimizer)
            scaler.update()
            p.losses.append(value)
            p.interval_losses.append(value)
            p.interval_norms.append(float(norm))
            p.bad_in_row = 0
            return stop
        self.optimizer.zero_grad(set_to_none=True)
        p.skipped += 1
        if scaler.is_enabled():
            scaler.update()  # the scaled gradient was not finite: the scale halves
            if math.isfinite(value) and scaler.get_scale() >= 1:
                # fp16's overflow, the scaler's signal to scale less: no sign of divergence
                # while the scale is at least 1 (below it, the gradient itself overflows).
                self.log(
                    f"step {p.step + 1}: the fp16 gradient overflowed; step skipped, loss "
                    f"scale now {scaler.get_scale():g}"
                )
                return stop
        p.bad_in_row += 1
        self.log(
            f"step {p.step + 1}: non-finite loss or gradient (loss {value}); step skipped "
            f"({p.bad_in_row} in a row, {p.skipped} in all)"
        )
        if p.bad_in_row >= cfg.max_bad_steps:
            raise TrainingDiverged(
                f"training diverged: {p.bad_in_row} steps in a row had a non-finite loss or "
                f"gradient (max_bad_steps={cfg.max_bad_steps}); try a lower lr or clip_norm"
            )
        return stop


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


def _keep_records(path: Path, step: int) -> None:
    """Keep the records of log.jsonl up to ``step`` (where a resumed run continues; 0 for a
    new one): a killed run wrote some after its latest checkpoint, which the resumed run
    writes again. A line cut short by the kill goes too."""
    if not path.is_file():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        step_of = record.get("step") if isinstance(record, dict) else None
        if isinstance(step_of, int) and step_of <= step:
            kept.append(line + "\n")
    write_text(path, "".join(kept))


def _summary_writer(folder: Path, step: int) -> Any:
    """A TensorBoard writer on ``folder`` that drops the events after ``step`` (a resumed
    run writes them again). Imported here: only --tensorboard needs the package."""
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(log_dir=str(folder), purge_step=step + 1 if step else None)


def _epoch_seed(seed: int, epoch: int) -> int:
    """The seed of an epoch's batch order (and subword sampling)."""
    return seed * 1_000_003 + epoch


def _rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    """This process's random generator states (the CPU's, and the GPU's on CUDA)."""
    states = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


class _Cut(BaseException):
    """A signal arrived while ``_SignalFlag.cutting``: the work under way stops there. Not
    an ``Exception``, so that no ``except Exception`` on the way swallows it."""


class _SignalFlag:
    """While active, SIGINT (Ctrl-C) and SIGTERM (``kill``, a scheduler's stop) set
    ``raised`` instead of stopping a step half-way; the loop checks it between steps.
    Inside ``cutting()`` (a dev evaluation, which a long decode can make last for hours) a
    signal stops the work at once instead."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.raised = False
        self.signum: int = signal.SIGINT  # the signal that arrived first
        self._previous: dict[int, Any] = {}
        self._cutting = False

    def __enter__(self) -> _SignalFlag:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if not self.raised:
            self.raised, self.signum = True, signum
        if self._cutting:
            self._cutting = False  # raised once: the clean-up after it runs undisturbed
            raise _Cut()

    @contextmanager
    def cutting(self) -> Iterator[None]:
        """Within: a signal raises ``_Cut`` as it arrives, and one that arrived already
        raises it on entry (while active in the main thread, where the handlers are)."""
        if self.raised:
            raise _Cut()
        self._cutting = True
        try:
            yield
        finally:
            self._cutting = False

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:  # None: a handler installed outside Python
                signal.signal(signum, previous)
        self._previous = {}
