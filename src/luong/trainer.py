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
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from luong.batching import Batch, ParallelData, bucketed_batches
from luong.metrics import char_accuracy, exact_match
from luong.model import Seq2Seq, Seq2SeqConfig
from luong.vocab import Vocab

if TYPE_CHECKING:
    from luong.tasks import TaskData

__all__ = ["TrainConfig", "Trainer", "TrainResult", "evaluate", "train"]

SCHEDULES = ("constant", "linear", "cosine")
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
    keep_checkpoints: int = 2  # per-epoch checkpoints to keep in the run folder
    progress: bool = True  # a tqdm progress bar on stderr

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "eval_every", "eval_batch_size"):
            _positive_int(name, getattr(self, name))
        for name in ("warmup_steps", "patience", "max_decode_len", "keep_checkpoints", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
        if not isinstance(self.lr, int | float) or not self.lr > 0:
            raise ValueError(f"lr: expected a number > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(
                f"schedule: expected one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
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
) -> dict[str, float]:
    """Greedy-decode the sources of ``pairs``; exact match and character accuracy."""
    hyps = model.translate([s for s, _ in pairs], batch_size=batch_size, max_len=max_len)
    refs = [t for _, t in pairs]
    return {"exact_match": exact_match(hyps, refs), "char_accuracy": char_accuracy(hyps, refs)}


def loss_of(model: Seq2Seq, batch: Batch, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy per real target token (EOS included) of a teacher-forced batch."""
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


class Trainer:
    """The training loop on given pairs.

    Args:
        model: the model to train (its vocabularies encode the pairs).
        train_pairs: (source, target) training pairs.
        dev_pairs: pairs for evaluation during training and early stopping.
        config: the training settings.
        out: the run folder for per-epoch checkpoints; None writes nothing.
    """

    def __init__(
        self,
        model: Seq2Seq,
        train_pairs: Sequence[Pair],
        dev_pairs: Sequence[Pair],
        config: TrainConfig,
        out: str | Path | None = None,
    ) -> None:
        if not isinstance(config, TrainConfig):
            raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
        if not dev_pairs:
            raise ValueError("dev_pairs: expected at least one pair, got none")
        self.model = model
        self.config = config
        self.data = ParallelData(train_pairs, model.src_vocab, model.tgt_vocab)
        self.dev_pairs = list(dev_pairs)
        self.out = Path(out) if out is not None else None
        self.optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        self.steps_per_epoch = math.ceil(len(self.data) / config.batch_size)
        self.total_steps = self.steps_per_epoch * config.epochs

    def run(self, on_eval: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Train; afterwards the model holds the weights of the best dev evaluation.

        Returns:
            metrics: ``dev_exact_match`` (the best), ``steps``, ``epochs``, ``train_seconds``,
            ``dev_curve`` (one entry per evaluation: step, seconds, dev_exact_match, loss) and
            ``seconds_to_dev_0.99`` (None when never reached).
        """
        cfg = self.config
        model = self.model
        device = model.device
        lengths = self.data.src_lengths.tolist()
        best_em, best_state, stale = -1.0, None, 0
        curve: list[dict[str, Any]] = []
        step, epoch = 0, 0
        losses: list[float] = []
        stopped_early = False
        bar = tqdm(total=self.total_steps, disable=not cfg.progress, unit="step", leave=False)
        start = time.perf_counter()

        def evaluate_now() -> bool:
            nonlocal best_em, best_state, stale
            scores = evaluate(
                model,
                self.dev_pairs,
                batch_size=cfg.eval_batch_size,
                max_len=cfg.max_decode_len or None,
            )
            mean_loss = sum(losses) / len(losses) if losses else float("nan")
            losses.clear()
            point = {
                "step": step,
                "epoch": epoch,
                "seconds": round(time.perf_counter() - start, 3),
                "dev_exact_match": scores["exact_match"],
                "dev_char_accuracy": scores["char_accuracy"],
                "train_loss": round(mean_loss, 5),
            }
            curve.append(point)
            bar.set_postfix(loss=f"{mean_loss:.3f}", dev_em=f"{scores['exact_match']:.4f}")
            if on_eval is not None:
                on_eval(point)
            if scores["exact_match"] > best_em:
                best_em, stale = scores["exact_match"], 0
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                stale += 1
            return bool(cfg.patience) and stale >= cfg.patience

        model.train()
        for epoch in range(1, cfg.epochs + 1):
            rng = random.Random(cfg.seed * 1_000_003 + epoch)
            for indices in bucketed_batches(lengths, cfg.batch_size, rng):
                batch = self.data.batch(indices).to(device)
                for group in self.optimizer.param_groups:
                    group["lr"] = cfg.lr * lr_factor(
                        step, self.total_steps, cfg.warmup_steps, cfg.schedule
                    )
                loss = loss_of(model, batch, cfg.label_smoothing)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
                self.optimizer.step()
                losses.append(loss.item())
                step += 1
                bar.update(1)
                if step % cfg.eval_every == 0 and step % self.steps_per_epoch:
                    stopped_early = evaluate_now()
                    model.train()
                    if stopped_early:
                        break
            if not stopped_early:
                stopped_early = evaluate_now()
                model.train()
            self._checkpoint(epoch)
            if stopped_early:
                break
        bar.close()
        seconds = time.perf_counter() - start
        if best_state is not None:
            model.load_state_dict(best_state)
        model.eval()
        reached = next((p["seconds"] for p in curve if p["dev_exact_match"] >= 0.99), None)
        return {
            "dev_exact_match": best_em,
            "steps": step,
            "epochs": epoch,
            "stopped_early": stopped_early,
            "train_seconds": round(seconds, 3),
            "seconds_to_dev_0.99": reached,
            "dev_curve": curve,
        }

    def _checkpoint(self, epoch: int) -> None:
        if self.out is None or not self.config.keep_checkpoints:
            return
        folder = self.out / "checkpoints"
        self.model.save_pretrained(folder / f"epoch-{epoch:03d}")
        kept = sorted(p for p in folder.glob("epoch-*") if p.is_dir())
        for old in kept[: -self.config.keep_checkpoints]:
            shutil.rmtree(old)


def train(
    task: str = "dates",
    out: str | Path | None = None,
    *,
    model_config: Seq2SeqConfig | None = None,
    train_config: TrainConfig | None = None,
    task_options: dict[str, Any] | None = None,
    data: TaskData | None = None,
) -> TrainResult:
    """Train on a task, evaluate on its test split and write the run folder.

    Args:
        task: a task name from ``luong.tasks.TASKS``.
        out: the run folder (model files, checkpoints, ``metrics.json``); None writes nothing.
        model_config: the architecture; the task's default when None.
        train_config: the training settings; the task's default when None.
        task_options: options of the task's data (for dates: ``seed``, ``locales``, sizes).
        data: the task's data when the caller has loaded it already (``load_task``).

    Returns:
        the trained model and its metrics (also in ``out/metrics.json``).
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
    trainer = Trainer(model, data.train, data.dev, train_config, out)
    metrics = trainer.run()
    test: dict[str, float | None] = {"exact_match": None, "char_accuracy": None}
    if data.test:
        test.update(
            evaluate(
                model,
                data.test,
                batch_size=train_config.eval_batch_size,
                max_len=train_config.max_decode_len or None,
            )
        )
    metrics = {
        "task": task,
        "test_exact_match": test["exact_match"],
        "test_char_accuracy": test["char_accuracy"],
        **metrics,
        "train_pairs": len(data.train),
        "dev_pairs": len(data.dev),
        "test_pairs": len(data.test),
        "parameters": sum(p.numel() for p in model.parameters()),
        "model_config": model_config.to_json(),
        "train_config": train_config.to_json(),
        "versions": {
            "luong": __version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "command": sys.argv,
    }
    if out is not None:
        model.save_pretrained(out)
        path = Path(out) / "metrics.json"
        path.write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return TrainResult(model, metrics)
