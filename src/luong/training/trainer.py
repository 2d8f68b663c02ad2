"""Training: the loop on given pairs, the loss, Adam or SGD, clipping, the schedule, dev
evaluation, early stopping and checkpoints.

``Trainer`` runs the loop; ``luong.training.run.train`` does everything ``luong train`` does around
it (the task's data, vocabularies, the model, the test set and the run folder). The loop's parts
are the modules of ``luong.training``: the loss and the schedule (``objective``), signals
(``signals``), progress and records (``records``), the data and each epoch's steps
(``data``), checkpoints (``state``) and the dev evaluation (``dev``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel

from luong.common.devices import (
    check_precision,
    keep_compiled_kernels,
    precision_note,
    reuse_freed_memory,
)
from luong.common.errors import LuongError, LuongTypeError
from luong.common.folder_files import CHECKPOINTS
from luong.common.progress import stage
from luong.config.train import TrainConfig
from luong.data.batching import Batch, ParallelData
from luong.data.prepared import PreparedData
from luong.data.subword import SubwordVocab
from luong.model.seq2seq import Seq2Seq
from luong.training.checkpoint import find_latest
from luong.training.data import (
    StepCounts,
    check_lengths,
    epoch_seed,
    epoch_steps,
    training_data,
)
from luong.training.dev import (
    dev_figures,
    note_best,
    resolve_select,
    score_dev,
    scores_bleu,
    selected,
)
from luong.training.distributed import World
from luong.training.objective import lr_factor, make_optimizer, needs_total, step_gradients
from luong.training.records import Progress, Records, StepProgress
from luong.training.signals import Cut, SignalFlag, TrainingInterrupted
from luong.training.state import clear_leftovers, restore, rng_state, save

__all__ = ["Trainer", "TrainingDiverged"]

Pair = tuple[str, str]
LOGGER = logging.getLogger("luong")


class TrainingDiverged(LuongError):
    """Too many steps in a row had a non-finite loss or gradient."""


class Trainer:
    """The training loop on given pairs.

    Args:
        model: the model to train (its vocabularies encode the pairs).
        train_pairs: (source, target) training pairs, or a prepared corpus
            (``luong.data.prepared``: segmented with the model's vocabularies, read from disk
            batch by batch).
        dev_pairs: pairs for evaluation during training and early stopping.
        config: the training settings.
        out: the run folder for checkpoints; None writes nothing.
        log: where to report resuming, skipped steps and evaluations (default: the "luong"
            logger at INFO).
        world: the data-parallel processes (``luong.training.distributed.setup``); one by default.
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
        _check_arguments(model, dev_pairs, config)
        self.model = model
        self.config = config
        self.select = resolve_select(config.select, model.tgt_vocab)
        # BLEU and chrF at every dev evaluation: translation, or a run that selects on them.
        self.bleu = scores_bleu(self.select, model.tgt_vocab)
        self.train_pairs: list[Pair] = []  # text's pairs (a prepared corpus stays on disk)
        if not isinstance(train_pairs, PreparedData):
            self.train_pairs = list(train_pairs)
        self.world = world or World()
        with stage(f"encoding {len(train_pairs):,} training pairs", shown=self.world.main):
            self.data: ParallelData | PreparedData = training_data(train_pairs, model, config)
        check_lengths(model, dev_pairs, "dev_pairs", config.init_from)
        # L2-SP's anchor: the weights the run starts from, the init_from model's (a resumed
        # run is built from that model before its checkpoint is loaded: the same anchor).
        self.anchor: list[torch.Tensor] | None = None
        if config.l2sp:
            self.anchor = [weight.detach().clone() for weight in model.parameters()]
        self.dev_pairs = list(dev_pairs)
        self.out = Path(out) if out is not None and self.world.main else None
        say = log or LOGGER.info
        self.log = say if self.world.main else (lambda message: None)
        self.records = Records(self.out, config.tensorboard)  # log.jsonl, TensorBoard
        self.optimizer = make_optimizer(model, config)
        check_precision(config.precision, model.device)  # fp16 only on CUDA
        note = precision_note(config.precision, model.device)  # bf16 on a CPU without units
        if note and self.world.main:
            LOGGER.warning(note)
        reuse_freed_memory()  # every step's large buffers: no page faults
        keep_compiled_kernels()  # oneDNN's kernels of each shape, compiled once
        # fp16: the loss scaled up before its backward, so that small gradients do not
        # underflow float16; a step whose scaled gradient overflows is skipped and the scale
        # halves (torch.amp.GradScaler). Disabled, it changes nothing.
        self.scaler = torch.amp.GradScaler(model.device.type, enabled=config.precision == "fp16")
        self._count_steps()
        self.forward: torch.nn.Module = model  # DistributedDataParallel(model) while training
        self.progress = Progress()
        self.best_state: dict[str, torch.Tensor] | None = None
        self._bar: Any = None  # the progress (a StepProgress) of a run under way
        self._session_start = time.perf_counter()

    def _count_steps(self) -> None:
        """The first epoch's batches built and kept for ``run`` (the one a fresh run starts
        with); the later epochs' steps counted (``StepCounts``: at once, or by a child
        process while the run starts, as large corpora need), to give the schedule its
        total (``total_steps``). With subword sampling the batches of later epochs differ a
        little from these: the schedule counts the steps of the most probable
        segmentation."""
        # not the count of the later epochs: it may fork a child
        with stage("batching the first epoch", shown=self.world.main):
            first = self._epoch_steps(1)
        self._built: tuple[int, object, list[list[np.ndarray]]] | None = (1, self.data, first)
        self.steps_per_epoch = len(first)
        self.step_counts = StepCounts(self.data, self.config, self.world, len(first))

    @property
    def total_steps(self) -> int:
        """The run's optimizer steps, every epoch's (``StepCounts.total``: may wait for
        the count of the later epochs)."""
        return self.step_counts.total

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
            clear_leftovers(checkpoints)
        folder = self.world.broadcast(find_latest(checkpoints) if self.world.main else None)
        if folder is None:
            return False
        self.progress, best = restore(
            folder, self.model, self.optimizer, self.scaler, self.world.rank
        )
        if best is not None:
            self.best_state = best
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
        interrupted = SignalFlag()
        self._start_session()
        try:
            with interrupted:
                saved = self._epochs(on_eval, interrupted)
                # A signal during the last evaluation (no step follows to notice it).
                if self.world.broadcast(interrupted.raised):
                    raise TrainingInterrupted(saved, interrupted.signum)
        finally:
            self._end_session()
        return self._finish()

    def _start_session(self) -> None:
        """Before this session's first step: the warm-up's warning, the progress bar, the
        clocks, the records (a killed run's after its checkpoint dropped), DDP's wrapper."""
        cfg, p, world = self.config, self.progress, self.world
        warms_long = cfg.warmup_steps > self.step_counts.at_least  # no wait for the count
        if warms_long and cfg.warmup_steps > self.total_steps and world.main and not p.finished:
            LOGGER.warning(
                f"warning: warmup_steps={cfg.warmup_steps} is more than the run's "
                f"{self.total_steps} steps: the learning rate only rises to "
                f"{self.total_steps}/{cfg.warmup_steps} of lr={cfg.lr:g} and never decays; "
                f"lower --warmup-steps (to {max(1, self.total_steps // 10)}, say) or train longer"
            )
        total = self.step_counts.known()  # None while a child counts: set once it has
        self._bar = StepProgress(total, p.step, bool(cfg.progress and world.main))
        self._session_start = time.perf_counter()
        self.records.open(p.step, self._session_start)
        if world.active:
            self.forward = DistributedDataParallel(self.model)
        self.model.train()

    def _end_session(self) -> None:
        self._bar.close()
        self.records.close()
        # DDP's reducer must not outlive the process group: drop it now.
        self.forward = self.model

    def _epochs(
        self, on_eval: Callable[[dict[str, Any]], None] | None, interrupted: SignalFlag
    ) -> Path | None:
        """Epochs until the run is finished, each ending with a dev evaluation and a
        checkpoint; the last checkpoint's folder (None without a run folder)."""
        cfg, model, p = self.config, self.model, self.progress
        saved: Path | None = None
        while not p.finished:
            if cfg.subword_sampling:
                self.data = ParallelData(
                    self.train_pairs,
                    model.src_vocab,
                    model.tgt_vocab,
                    sampling=cfg.subword_sampling,
                    seed=epoch_seed(cfg.seed, p.epoch),
                )
            steps = self._take_epoch_steps(p.epoch)
            stop = self._evaluate(on_eval, interrupted) if p.eval_due else False
            if not stop:
                stop = self._steps(steps, on_eval, interrupted)
            if not stop:
                stop = self._evaluate(on_eval, interrupted)  # the end of the epoch
            if stop or p.epoch >= cfg.epochs:
                p.finished, p.stopped_early = True, stop
            else:
                p.epoch, p.batch = p.epoch + 1, 0
            saved = self._checkpoint()
        return saved

    def _steps(
        self,
        steps: list[list[np.ndarray]],
        on_eval: Callable[[dict[str, Any]], None] | None,
        interrupted: SignalFlag,
    ) -> bool:
        """The epoch's ``steps`` from ``progress.batch`` on, with the records, dev
        evaluations and checkpoints due among them; whether an evaluation stops the run.

        Raises:
            TrainingInterrupted: a signal arrived during a step (after a checkpoint).
        """
        cfg, p = self.config, self.progress
        for group in steps[p.batch :]:
            batches = self._batches(group)
            stop_now = self._step(batches, interrupted)
            p.step += 1
            p.batch += 1
            if self._bar.total is None:
                self._bar.total = self.step_counts.known()
            self._bar.step(sum(b.target_tokens for b in batches) * self.world.size)
            if p.step % cfg.log_every == 0:
                self._record_interval()
            p.eval_due = p.step % cfg.eval_every == 0 and p.batch < len(steps)
            if stop_now:  # before the evaluation, which the resumed run does
                raise TrainingInterrupted(self._checkpoint(), interrupted.signum)
            if p.eval_due and self._evaluate(on_eval, interrupted):
                return True
            if cfg.checkpoint_every and p.step % cfg.checkpoint_every == 0:
                self._checkpoint()
        return False

    def _batches(self, group: list[np.ndarray]) -> list[Batch]:
        """A step's batches (arrays of example indices) read and moved to the model's
        device; their target tokens count into the interval's."""
        batches = [self.data.batch(ix) for ix in group]
        self.progress.interval_tokens += sum(b.target_tokens for b in batches)
        return [b.to(self.model.device) for b in batches]

    def _finish(self) -> dict[str, Any]:
        """The best dev weights into the model on every rank, in eval mode; the metrics."""
        model, p = self.model, self.progress
        if self.best_state is not None:
            model.load_state_dict(self.best_state)
        self.world.share_weights(model)  # rank 0 kept the best weights: every rank ends with them
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
        # The total only where the schedule reads it: the warm-up's steps need no count.
        total = self.total_steps if needs_total(step, cfg.warmup_steps, cfg.schedule) else 0
        factor = lr_factor(
            step,
            total,
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
        record = self.records.interval(p, self._seconds(), self._lr(p.step - 1), self.world.size)
        if not self.world.main:
            return
        LOGGER.debug(
            "step %d (epoch %d): loss %s, lr %.3g, gradient norm %s, %s tokens/s",
            *(record[k] for k in ("step", "epoch", "loss", "lr", "grad_norm")),
            record["tokens_per_second"],
        )
        self.records.write(record)

    def _evaluate(
        self, on_eval: Callable[[dict[str, Any]], None] | None, interrupted: SignalFlag
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
            except Cut:
                self.model.train()  # the state is as before the evaluation; none of it kept
        outcome = self.world.broadcast((stop, interrupted.signum))
        if outcome[0] is None:
            raise TrainingInterrupted(self._checkpoint(), outcome[1])
        self.progress.eval_due = False
        return bool(outcome[0])

    def _evaluate_on_main(
        self, on_eval: Callable[[dict[str, Any]], None] | None, interrupted: SignalFlag
    ) -> bool:
        """Score dev, add a point to the curve, keep the best weights; whether to stop.
        Nothing changes before the scores are in: a signal raises ``Cut`` until then."""
        cfg, model, p = self.config, self.model, self.progress
        with interrupted.cutting():
            scores, loss = score_dev(model, self.dev_pairs, cfg, self.select, self.bleu)
        point: dict[str, Any] = {
            "step": p.step,
            "epoch": p.epoch,
            "seconds": round(self._seconds(), 3),
            **dev_figures(scores, loss, self.bleu),
        }
        model.train()
        mean_loss = sum(p.losses) / len(p.losses) if p.losses else float("nan")
        p.losses = []
        point["train_loss"] = round(mean_loss, 5)
        p.curve.append(point)
        self._report(point, mean_loss, on_eval)
        if note_best(p, selected(point, self.select)):
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return bool(cfg.patience) and p.stale >= cfg.patience

    def _report(
        self,
        point: dict[str, Any],
        mean_loss: float,
        on_eval: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        """A dev evaluation's point shown on the bar, passed to ``on_eval``, recorded in
        log.jsonl and logged."""
        p = self.progress
        shown = "dev_bleu" if self.bleu else "dev_exact_match"
        self._bar.show(loss=f"{mean_loss:.3f}", **{shown: f"{point[shown]:.4f}"})
        if on_eval is not None:
            on_eval(point)
        self.records.write({"kind": "eval", **point})
        shown_name = shown.removeprefix("dev_").replace("_", " ")
        self.log(
            f"step {p.step} (epoch {p.epoch}): train loss {mean_loss:.4f}, dev {shown_name} "
            f"{point[shown]:.4f}"
        )

    def _checkpoint(self) -> Path | None:
        """Write a checkpoint (rank 0; every rank joins the gathering of generator states)."""
        rng = self.world.gather(rng_state(self.model.device))
        if self.checkpoints is None:
            return None
        return save(
            self.checkpoints,
            self.progress,
            self._seconds(),
            self.model,
            self.optimizer,
            self.scaler,
            self.config.keep_checkpoints,
            self.best_state,
            rng,
        )

    def _take_epoch_steps(self, epoch: int) -> list[list[np.ndarray]]:
        """``_epoch_steps(epoch)``, the ones ``__init__`` built when they are of this epoch
        and of the same data (not after subword sampling re-segmented it)."""
        built, self._built = self._built, None
        if built is not None and built[0] == epoch and built[1] is self.data:
            return built[2]
        return self._epoch_steps(epoch)

    def _epoch_steps(self, epoch: int) -> list[list[np.ndarray]]:
        """This rank's optimizer steps of ``epoch`` (``luong.training.data.epoch_steps``)."""
        return epoch_steps(self.data, self.config, self.world, epoch)

    def _step(self, batches: list[Batch], interrupted: SignalFlag) -> bool:
        """One optimizer step on the gradients of ``batches`` (the loss: their mean per real
        target token), skipped when the loss or the gradient is not finite on any rank.
        Returns whether SIGINT or SIGTERM arrived on any rank (all ranks then stop
        together)."""
        cfg, p, scaler = self.config, self.progress, self.scaler
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr(p.step)
        loss = step_gradients(
            self.forward, batches, self.optimizer, scaler, cfg, self.world, self.model.device
        )
        scaler.unscale_(self.optimizer)  # fp16: the true gradients, before they are clipped
        norm = torch.nn.utils.clip_grad_norm_(
            self.model.parameters(), cfg.clip_norm if cfg.clip_norm else math.inf
        )
        flag = torch.tensor(float(interrupted.raised))
        finite, value, stop = self.world.reduce_step(loss, norm, flag)
        if not finite:
            self._skip(value)
            return stop
        scaler.step(self.optimizer)
        scaler.update()
        if self.anchor is not None:  # L2-SP: each weight lr x l2sp of the way back
            share = self.optimizer.param_groups[0]["lr"] * cfg.l2sp
            with torch.no_grad():
                for weight, anchor in zip(self.model.parameters(), self.anchor, strict=True):
                    weight.lerp_(anchor, share)
        p.losses.append(value)
        p.interval_losses.append(value)
        p.interval_norms.append(float(norm))
        p.bad_in_row = 0
        return stop

    def _skip(self, value: float) -> None:
        """A step whose loss (``value``) or gradient was not finite: its gradient dropped,
        counted and logged; fp16's overflow while the loss scale is at least 1 halves the
        scale and counts as no sign of divergence.

        Raises:
            TrainingDiverged: ``max_bad_steps`` such steps in a row.
        """
        cfg, p, scaler = self.config, self.progress, self.scaler
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
                return
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


def _check_arguments(model: Seq2Seq, dev_pairs: Sequence[Pair], config: TrainConfig) -> None:
    """The trainer's arguments that need no data read: the config's type, some dev pairs,
    a float model, subword vocabularies for subword sampling.

    Raises:
        TypeError, ValueError: naming the argument.
    """
    if not isinstance(config, TrainConfig):
        raise LuongTypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
    if not dev_pairs:
        raise LuongError("dev_pairs: expected at least one pair, got none")
    if model.int8_parts:
        raise LuongError(
            f"model: an int8 model ({', '.join(model.int8_parts)} in int8, luong quantize) "
            "decodes only; train the float model it was made from"
        )
    if config.subword_sampling and not isinstance(model.src_vocab, SubwordVocab):
        raise LuongError(
            f"subword_sampling: needs subword vocabularies, got {config.subword_sampling} "
            "with a vocabulary of characters or tokens"
        )
