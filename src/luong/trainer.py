"""Training: batches, Adam, clipping, the schedule, evaluation, early stopping, checkpoints.

``Trainer`` runs the loop on given pairs; ``train`` does everything ``luong train`` does:
data of a task, vocabularies, the model, the loop, the test set and the run folder.
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from luong.batching import Batch, ParallelData, bucketed_batches
from luong.checkpoint import (
    BEST,
    find_latest,
    read_checkpoint,
    read_json,
    read_tensors,
    write_checkpoint,
    write_text,
)
from luong.distributed import DEVICES, World, pick_device, setup, shard
from luong.metrics import char_accuracy, exact_match
from luong.model import Seq2Seq, Seq2SeqConfig
from luong.vocab import Vocab

if TYPE_CHECKING:
    from luong.tasks import TaskData

__all__ = [
    "Progress",
    "TrainConfig",
    "Trainer",
    "TrainResult",
    "TrainingDiverged",
    "TrainingInterrupted",
    "evaluate",
    "train",
]

SCHEDULES = ("constant", "linear", "cosine")
PRECISIONS = ("fp32", "bf16")
Pair = tuple[str, str]


@dataclass(frozen=True)
class TrainConfig:
    """How to train. The defaults train the dates model of ``make demo``."""

    epochs: int = 3  # passes over the training data (the most; early stopping may end sooner)
    batch_size: int = 128  # pairs per batch
    lr: float = 3e-3  # Adam's peak learning rate
    schedule: str = "linear"  # "constant", "linear" or "cosine" decay to 0 after warm-up
    warmup_steps: int = 100  # linear warm-up from 0 to lr
    clip_norm: float = 1.0  # gradient norm clipping (0 turns it off)
    label_smoothing: float = 0.0  # cross-entropy label smoothing
    eval_every: int = 100  # steps between dev evaluations (and at the end of each epoch)
    patience: int = 0  # stop after this many evaluations without a better dev score; 0: never
    seed: int = 0  # model initialisation, dropout and data order
    max_decode_len: int = 0  # longest output at evaluation; 0: twice the source plus 10
    eval_batch_size: int = 1000  # sentences per batch at evaluation
    checkpoint_every: int = 0  # steps between checkpoints (one at every epoch's end anyway)
    keep_checkpoints: int = 2  # checkpoints to keep in the run folder (at least 1 is kept)
    max_bad_steps: int = 5  # stop after this many non-finite steps in a row
    device: str = "auto"  # "auto" (CUDA when present), "cpu" or "cuda"
    precision: str = "fp32"  # "fp32", or "bf16" autocast (for GPUs; slow on most CPUs)
    progress: bool = True  # a tqdm progress bar on stderr

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "eval_every", "eval_batch_size", "max_bad_steps"):
            _positive_int(name, getattr(self, name))
        for name in (
            "warmup_steps",
            "patience",
            "max_decode_len",
            "checkpoint_every",
            "keep_checkpoints",
            "seed",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
        if not isinstance(self.lr, int | float) or not self.lr > 0:
            raise ValueError(f"lr: expected a number > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(
                f"schedule: expected one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
            )
        if self.device not in DEVICES:
            raise ValueError(f"device: expected one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision: expected one of {', '.join(PRECISIONS)}, got {self.precision!r}"
            )
        if not isinstance(self.clip_norm, int | float) or self.clip_norm < 0:
            raise ValueError(f"clip_norm: expected a number >= 0, got {self.clip_norm!r}")
        if not isinstance(self.label_smoothing, int | float) or not 0 <= self.label_smoothing < 1:
            raise ValueError(
                f"label_smoothing: expected a number in [0, 1), got {self.label_smoothing!r}"
            )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value!r}")


def config_from_dict(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build dataclass ``cls`` from ``data``, naming unknown keys and the valid ones."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where}: unknown options {unknown}; valid options: {sorted(names)}")
    return cls(**data)


def lr_factor(step: int, total: int, warmup: int, schedule: str) -> float:
    """The learning rate at ``step`` (0-based) as a fraction of the peak."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant" or total <= warmup:
        return 1.0
    progress = min(1.0, (step - warmup) / (total - warmup))
    if schedule == "linear":
        return 1.0 - progress
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def evaluate(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    *,
    batch_size: int = 1000,
    max_len: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> dict[str, float]:
    """Decode the sources of ``pairs`` (greedy search, or beam search with ``beam_size`` > 1
    and its penalties); exact match and character accuracy over the pairs."""
    hyps = model.translate(
        [s for s, _ in pairs],
        batch_size=batch_size,
        max_len=max_len,
        beam_size=beam_size,
        alpha=alpha,
        beta=beta,
    )
    refs = [t for _, t in pairs]
    return {"exact_match": exact_match(hyps, refs), "char_accuracy": char_accuracy(hyps, refs)}


def loss_of(
    model: Seq2Seq | torch.nn.Module, batch: Batch, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy per real target token (EOS included) of a teacher-forced batch.

    ``model`` is a ``Seq2Seq`` or a wrapper with its ``forward`` (DistributedDataParallel)."""
    logits = model(batch.src, batch.src_lengths, batch.tgt[:, :-1])  # [B, T, V]
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        batch.tgt[:, 1:].reshape(-1),
        ignore_index=Vocab.pad_id,
        label_smoothing=label_smoothing,
    )


@dataclass
class TrainResult:
    """What a run leaves: the best model (by dev exact match) and the metrics."""

    model: Seq2Seq
    metrics: dict[str, Any] = field(default_factory=dict)
    main: bool = True  # False on the other ranks under torchrun: rank 0 reports and writes


class TrainingDiverged(ValueError):
    """Too many steps in a row had a non-finite loss or gradient."""


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT arrived; a resumable checkpoint was written first."""

    def __init__(self, checkpoint: Path | None) -> None:
        super().__init__(str(checkpoint) if checkpoint else "")
        self.checkpoint = checkpoint


@dataclass
class Progress:
    """Where a run stands; saved in every checkpoint so that a resumed run continues
    exactly where the checkpoint was taken."""

    step: int = 0  # optimizer steps taken (skipped non-finite steps included)
    epoch: int = 1  # the epoch under way, from 1
    batch: int = 0  # batches of that epoch done
    best: float = -1.0  # best dev exact match so far
    best_step: int = 0  # the step of the best weights
    stale: int = 0  # evaluations since the best
    bad_in_row: int = 0  # consecutive non-finite steps
    skipped: int = 0  # non-finite steps skipped in all
    seconds: float = 0.0  # training wall time before this session
    losses: list[float] = field(default_factory=list)  # losses since the last evaluation
    curve: list[dict[str, Any]] = field(default_factory=list)  # one entry per evaluation
    finished: bool = False
    stopped_early: bool = False


class Trainer:
    """The training loop on given pairs.

    Args:
        model: the model to train (its vocabularies encode the pairs).
        train_pairs: (source, target) training pairs.
        dev_pairs: pairs for evaluation during training and early stopping.
        config: the training settings.
        out: the run folder for checkpoints; None writes nothing.
        log: where to report resuming, skipped steps and interruptions (default: stderr).
        world: the data-parallel processes (``luong.distributed.setup``); one by default.
            Each rank trains on its shard of every epoch, DDP averages the gradients, and
            rank 0 alone evaluates, logs and writes.
    """

    def __init__(
        self,
        model: Seq2Seq,
        train_pairs: Sequence[Pair],
        dev_pairs: Sequence[Pair],
        config: TrainConfig,
        out: str | Path | None = None,
        log: Callable[[str], None] | None = None,
        world: World | None = None,
    ) -> None:
        if not isinstance(config, TrainConfig):
            raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
        if not dev_pairs:
            raise ValueError("dev_pairs: expected at least one pair, got none")
        self.model = model
        self.config = config
        self.data = ParallelData(train_pairs, model.src_vocab, model.tgt_vocab)
        limit = model.config.max_src_len
        too_long = int((self.data.src_lengths - 1 > limit).sum())  # lengths count the EOS
        if too_long:
            longest = int(self.data.src_lengths.max()) - 1
            raise ValueError(
                f"train_pairs: {too_long} sources are longer than the model's max_src_len="
                f"{limit} symbols (the longest has {longest}); raise max_src_len "
                f"(--max-src-len {longest})"
            )
        self.dev_pairs = list(dev_pairs)
        self.world = world or World()
        self.out = Path(out) if out is not None and self.world.main else None
        say = log or (lambda message: print(message, file=sys.stderr))
        self.log = say if self.world.main else (lambda message: None)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        self.steps_per_epoch = math.ceil(len(self.data) / config.batch_size) // self.world.size
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"train_pairs: {len(self.data)} pairs make fewer batches of {config.batch_size} "
                f"than there are ranks ({self.world.size})"
            )
        self.total_steps = self.steps_per_epoch * config.epochs
        self.forward: torch.nn.Module = model  # DistributedDataParallel(model) while training
        self.progress = Progress()
        self.best_state: dict[str, torch.Tensor] | None = None

    @property
    def checkpoints(self) -> Path | None:
        return self.out / "checkpoints" if self.out is not None else None

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
            raise ValueError(f"{folder / 'state.json'}: no valid progress ({error})") from None
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

        Returns:
            metrics: ``dev_exact_match`` (the best), ``steps``, ``epochs``, ``train_seconds``,
            ``skipped_steps``, ``dev_curve`` (per evaluation: step, seconds, dev exact match,
            mean training loss) and ``seconds_to_dev_0.99`` (None when never reached).

        Raises:
            TrainingDiverged: ``max_bad_steps`` non-finite steps in a row.
            TrainingInterrupted: SIGINT (Ctrl-C), after writing a checkpoint.
        """
        cfg, model, p, world = self.config, self.model, self.progress, self.world
        lengths = self.data.src_lengths.tolist()
        interrupted = _SigintFlag()
        bar = tqdm(
            total=self.total_steps,
            initial=p.step,
            disable=not (cfg.progress and world.main),
            unit="step",
            leave=False,
        )
        session_start = time.perf_counter()

        def seconds() -> float:
            return p.seconds + time.perf_counter() - session_start

        def evaluate_now() -> bool:
            # Rank 0 evaluates; every rank learns whether to stop.
            return bool(world.broadcast(evaluate_on_main() if world.main else None))

        def evaluate_on_main() -> bool:
            scores = evaluate(
                model,
                self.dev_pairs,
                batch_size=cfg.eval_batch_size,
                max_len=cfg.max_decode_len or None,
            )
            model.train()
            mean_loss = sum(p.losses) / len(p.losses) if p.losses else float("nan")
            p.losses = []
            point = {
                "step": p.step,
                "epoch": p.epoch,
                "seconds": round(seconds(), 3),
                "dev_exact_match": scores["exact_match"],
                "dev_char_accuracy": scores["char_accuracy"],
                "train_loss": round(mean_loss, 5),
            }
            p.curve.append(point)
            bar.set_postfix(loss=f"{mean_loss:.3f}", dev_em=f"{scores['exact_match']:.4f}")
            if on_eval is not None:
                on_eval(point)
            # A tie keeps the later weights: a small dev set saturates (the dates dev set sits
            # at 1.0 from the second epoch on) and the later weights have trained longer. Only
            # a strict improvement resets the early-stopping count.
            p.stale = 0 if scores["exact_match"] > p.best else p.stale + 1
            if scores["exact_match"] >= p.best:
                p.best, p.best_step = scores["exact_match"], p.step
                self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            return bool(cfg.patience) and p.stale >= cfg.patience

        def checkpoint() -> Path | None:
            rng = world.gather(_rng_state(model.device))  # a collective: every rank joins
            if self.checkpoints is None:
                return None
            saved = dataclasses.replace(p, seconds=round(seconds(), 3))
            return write_checkpoint(
                self.checkpoints,
                p.step,
                model,
                self.optimizer,
                {"progress": dataclasses.asdict(saved)},
                keep=max(1, cfg.keep_checkpoints),
                extra={BEST: self.best_state} if self.best_state is not None else None,
                rng=rng,
            )

        if world.active:
            from torch.nn.parallel import DistributedDataParallel

            self.forward = DistributedDataParallel(model)
        model.train()
        try:
            with interrupted:
                while not p.finished:
                    rng = random.Random(cfg.seed * 1_000_003 + p.epoch)
                    batches = shard(bucketed_batches(lengths, cfg.batch_size, rng), world)
                    stop = False
                    for indices in batches[p.batch :]:
                        stop_now = self._step(
                            self.data.batch(indices).to(model.device), interrupted
                        )
                        p.step += 1
                        p.batch += 1
                        bar.update(1)
                        if p.step % cfg.eval_every == 0 and p.batch < len(batches):
                            stop = evaluate_now()
                        if stop_now:
                            raise TrainingInterrupted(checkpoint())
                        if stop:
                            break
                        if cfg.checkpoint_every and p.step % cfg.checkpoint_every == 0:
                            checkpoint()
                    if not stop:
                        stop = evaluate_now()  # the end of the epoch
                    if stop or p.epoch >= cfg.epochs:
                        p.finished, p.stopped_early = True, stop
                    else:
                        p.epoch, p.batch = p.epoch + 1, 0
                    checkpoint()
        finally:
            bar.close()
            # DDP's reducer must not outlive the process group: drop it now.
            self.forward = model
        if self.best_state is not None:
            model.load_state_dict(self.best_state)
        world.share_weights(model)  # rank 0 kept the best weights: every rank ends with them
        model.eval()
        reached = next((q["seconds"] for q in p.curve if q["dev_exact_match"] >= 0.99), None)
        return {
            "dev_exact_match": p.best,
            "best_step": p.best_step,
            "steps": p.step,
            "epochs": p.epoch,
            "stopped_early": p.stopped_early,
            "skipped_steps": p.skipped,
            "train_seconds": round(seconds(), 3),
            "seconds_to_dev_0.99": reached,
            "dev_curve": p.curve,
        }

    def _step(self, batch: Batch, interrupted: _SigintFlag) -> bool:
        """One optimizer step, skipped when the loss or the gradient is not finite on any
        rank. Returns whether SIGINT arrived on any rank (all ranks then stop together)."""
        cfg, p = self.config, self.progress
        for group in self.optimizer.param_groups:
            group["lr"] = cfg.lr * lr_factor(
                p.step, self.total_steps, cfg.warmup_steps, cfg.schedule
            )
        device = self.model.device
        with torch.autocast(device.type, torch.bfloat16, enabled=cfg.precision == "bf16"):
            loss = loss_of(self.forward, batch, cfg.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(
            self.model.parameters(), cfg.clip_norm if cfg.clip_norm else math.inf
        )
        flag = torch.tensor(float(interrupted.raised))
        finite, value, stop = self.world.reduce_step(loss, norm, flag)
        if finite:
            self.optimizer.step()
            p.losses.append(value)
            p.bad_in_row = 0
            return stop
        self.optimizer.zero_grad(set_to_none=True)
        p.skipped += 1
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


def _rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    """This process's random generator states (the CPU's, and the GPU's on CUDA)."""
    states = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


class _SigintFlag:
    """While active, SIGINT (Ctrl-C) sets ``raised`` instead of interrupting a step half-way;
    the loop checks it between steps."""

    def __init__(self) -> None:
        self.raised = False
        self._previous: Any = None

    def __enter__(self) -> _SigintFlag:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.raised = True

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def train(
    task: str = "dates",
    out: str | Path | None = None,
    *,
    model_config: Seq2SeqConfig | None = None,
    train_config: TrainConfig | None = None,
    task_options: dict[str, Any] | None = None,
    data: TaskData | None = None,
    log: Callable[[str], None] | None = None,
    resume: bool = False,
) -> TrainResult:
    """Train on a task, evaluate on its test split and write the run folder.

    Args:
        task: a task name from ``luong.tasks.TASKS``.
        out: the run folder (model files, checkpoints, ``metrics.json``); None writes nothing.
        model_config: the architecture; the task's default when None.
        train_config: the training settings; the task's default when None.
        task_options: options of the task's data (for dates: ``seed``, ``locales``, sizes).
        data: the task's data when the caller has loaded it already (``load_task``).
        log: where to report resuming and skipped steps (default: stderr).
        resume: require a checkpoint to resume from (``luong train --resume``).

    A run folder that already holds a checkpoint is resumed, not overwritten: the run
    continues from its latest checkpoint (a finished run is only evaluated again). Its
    ``run.json`` must then describe the same run (task, data options and configs).

    Returns:
        the trained model and its metrics (also in ``out/metrics.json``).

    Raises:
        ValueError: the run folder holds a different run, or a checkpoint is unreadable.
        TrainingDiverged: too many non-finite steps in a row.
        TrainingInterrupted: SIGINT, after a resumable checkpoint was written.
    """
    from luong import __version__
    from luong.tasks import load_task

    if data is None:
        data = load_task(task, **(task_options or {}))
    model_config = model_config or data.model_config
    train_config = train_config or data.train_config
    torch.manual_seed(train_config.seed)
    src_vocab = Vocab.build(
        (s for s, _ in data.train), tokens=data.src_tokens, lowercase=data.lowercase
    )
    tgt_vocab = Vocab.build((t for _, t in data.train), tokens=data.tgt_tokens)
    model = Seq2Seq(model_config, src_vocab, tgt_vocab, seed=train_config.seed)
    run = {
        "task": task,
        "task_options": {
            k: list(v) if isinstance(v, tuple) else v for k, v in (task_options or {}).items()
        },
        "model_config": model_config.to_json(),
        "train_config": train_config.to_json(),
        "seed": train_config.seed,
        "versions": {
            "luong": __version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "command": sys.argv,
    }
    world = setup(train_config.device)
    try:
        model.to(pick_device(train_config.device, world))
        if out is not None and world.main:
            _check_or_write_run(Path(out), run)
        trainer = Trainer(model, data.train, data.dev, train_config, out, log=log, world=world)
        if not trainer.resume() and resume:
            raise ValueError(f"--resume: {out} holds no checkpoint to resume from")
        metrics = trainer.run()
    finally:
        world.close()
    run["world_size"] = world.size
    if not world.main:
        return TrainResult(model, {**metrics, **run}, main=False)
    metrics = {
        "task": task,
        **_test_scores(model, data, train_config),
        **metrics,
        "train_pairs": len(data.train),
        "dev_pairs": len(data.dev),
        "test_pairs": len(data.test),
        "parameters": sum(p.numel() for p in model.parameters()),
        **{k: v for k, v in run.items() if k != "task"},
        "data": data.info,
    }
    if out is not None:
        model.save_pretrained(out)
        write_text(Path(out) / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    return TrainResult(model, metrics)


def _test_scores(model: Seq2Seq, data: TaskData, config: TrainConfig) -> dict[str, Any]:
    """The test split's figures (None without a test split).

    Pairs (dates): ``test_exact_match`` and ``test_char_accuracy`` over the pairs. Sources
    that may have several references (``data.references``: G2P, your own files): each unique
    source counts once, right when its output equals any reference: ``test_exact_match``,
    ``test_wer``, ``test_per`` (token errors against the closest reference), ``test_sources``
    and the unknown-symbol counts.
    """
    scores: dict[str, Any] = {"test_exact_match": None, "test_char_accuracy": None}
    if not data.test:
        return scores
    batch_size, max_len = config.eval_batch_size, config.max_decode_len or None
    if not data.references:
        pairs = evaluate(model, data.test, batch_size=batch_size, max_len=max_len)
        return {
            "test_exact_match": pairs["exact_match"],
            "test_char_accuracy": pairs["char_accuracy"],
        }
    from luong.tasks.tsv import evaluate_references

    refs = evaluate_references(model, data.test, batch_size=batch_size, max_len=max_len)
    return {
        **scores,
        "test_exact_match": refs["exact_match"],
        "test_wer": refs["wer"],
        "test_per": refs["per"],
        "test_sources": refs["sources"],
        "test_unknown_tokens": refs["unknown_tokens"],
        "test_sources_with_unknown": refs["sources_with_unknown"],
        "test_unknown_target_tokens": refs["unknown_target_tokens"],
    }


# Settings that may differ between a run and its resumption: they change no result.
_COSMETIC = {"progress", "eval_batch_size", "device"}


def _check_or_write_run(out: Path, run: dict[str, Any]) -> None:
    """Write ``out/run.json`` for a new run; for an existing one, check it is the same run."""
    path = out / "run.json"
    if not path.is_file():
        out.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(run, indent=2) + "\n")
        return
    saved = read_json(path)
    differences = []
    for key in ("task", "task_options", "model_config", "train_config"):
        old, new = saved.get(key), run[key]
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [
                f"{key}.{name}: {old.get(name)!r} -> {new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if name not in _COSMETIC and old.get(name) != new.get(name)
            ]
        elif old != new:
            differences.append(f"{key}: {old!r} -> {new!r}")
    if differences:
        raise ValueError(
            f"{out} holds another run ({'; '.join(differences)}); "
            "choose another --out to start a new run"
        )
