"""What training minimises and how fast: the loss of a teacher-forced batch (``loss_of``),
the learning rate's schedule (``lr_factor``), the optimizer, and the gradients of one
optimizer step (``step_gradients``: several batches accumulated, the loss normalised per
token or per sentence, scaled for fp16, DDP's gradient averaging once, at the last batch).
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch

from luong.common.devices import autocast
from luong.config.train import TrainConfig
from luong.data.batching import Batch
from luong.data.vocab import Vocab
from luong.model.seq2seq import Seq2Seq
from luong.training.distributed import World
from luong.training.loss import cross_entropy

__all__ = [
    "FUSED_ADAM_DEVICES",
    "loss_of",
    "lr_factor",
    "make_optimizer",
    "needs_total",
    "step_gradients",
]


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


def needs_total(step: int, warmup: int, schedule: str) -> bool:
    """Whether ``lr_factor`` reads the run's total steps at ``step``: a decay over the run
    (linear, cosine) after the warm-up."""
    return not (warmup and step < warmup) and schedule not in ("halving", "constant")


def loss_of(
    model: Seq2Seq | torch.nn.Module,
    batch: Batch,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cross-entropy of a teacher-forced batch over its real target tokens (EOS included):
    their mean, or with ``reduction="sum"`` their sum (gradient accumulation divides the sums
    of several batches by their tokens in all); in float32 whatever the logits' dtype
    (``luong.training.loss``).

    ``model`` is a ``Seq2Seq`` or a wrapper with its ``forward`` (DistributedDataParallel)."""
    logits = model(batch.src, batch.src_lengths, batch.tgt[:, :-1])  # [B, T, V]
    return cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        batch.tgt[:, 1:].reshape(-1),
        Vocab.pad_id,
        label_smoothing,
        reduction,
    )


FUSED_ADAM_DEVICES: tuple[str, ...] = ("cpu", "cuda")
"""The devices whose Adam runs as one fused kernel per step (``fused=True``): on one CPU
thread it updated the general preset's 4.66 M weights in 6 ms against 19-23 ms for PyTorch's
default loop over the tensors, and its weights differ from the loop's by rounding alone
(docs/performance.md, "The optimizer as one kernel")."""


def make_optimizer(model: Seq2Seq, config: TrainConfig) -> torch.optim.Optimizer:
    """``config.optimizer`` on the model's parameters at the peak learning rate: Adam, or
    plain SGD, as Luong et al. 2015 trained. Adam is fused into one kernel on the devices of
    ``FUSED_ADAM_DEVICES``, PyTorch's loop elsewhere (MPS)."""
    if config.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=config.lr)
    fused = all(w.device.type in FUSED_ADAM_DEVICES for w in model.parameters())
    return torch.optim.Adam(model.parameters(), lr=config.lr, fused=fused or None)


def step_gradients(
    forward: torch.nn.Module,
    batches: list[Batch],
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    config: TrainConfig,
    world: World,
    device: torch.device,
) -> torch.Tensor:
    """The gradients of one optimizer step on ``batches``, left in the parameters (scaled by
    ``scaler``); returns the step's loss, the mean per real target token of them all.

    ``forward`` is the model (on ``device``), or its DistributedDataParallel wrapper while
    ``world`` is active: DDP then averages the gradients once, after the last batch. With
    ``config.normalize`` "sentences" the gradient is that of the per-token mean times tokens
    / sentences (the loss returned stays the mean per token)."""
    per = 1.0
    if config.normalize == "sentences":
        per = sum(b.target_tokens for b in batches) / sum(int(b.src.shape[0]) for b in batches)
    if len(batches) == 1:
        with autocast(config.precision, device):
            loss = loss_of(forward, batches[0], config.label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss * per).backward()
        return loss
    tokens = sum(batch.target_tokens for batch in batches)
    optimizer.zero_grad(set_to_none=True)
    loss = torch.zeros((), device=device)
    for i, batch in enumerate(batches):
        last = i == len(batches) - 1
        sync = nullcontext() if last or not world.active else forward.no_sync()  # type: ignore[operator]
        with sync, autocast(config.precision, device):
            part = loss_of(forward, batch, config.label_smoothing, "sum") / tokens
        scaler.scale(part * per).backward()
        loss = loss + part.detach()
    return loss
