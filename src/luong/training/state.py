"""A run's state in its checkpoints (``luong.training.checkpoint`` writes and reads the files): what
the trainer saves besides the model and the optimizer (its ``Progress``, fp16's gradient
scaler, the best dev weights so far, every rank's random generators), and the same restored
when a run resumes.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import torch

from luong.common.errors import LuongError
from luong.common.folder_files import BEST, STATE
from luong.common.tensor_files import read_tensors
from luong.model.seq2seq import Seq2Seq
from luong.training.checkpoint import read_checkpoint, write_checkpoint
from luong.training.records import Progress

__all__ = ["clear_leftovers", "restore", "rng_state", "save"]

Weights = dict[str, torch.Tensor]


def save(
    checkpoints: Path,
    progress: Progress,
    seconds: float,
    model: Seq2Seq,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    keep: int,
    best: Weights | None,
    rng: list[Weights],
) -> Path:
    """Write a checkpoint of the run at ``progress`` (``seconds`` of training in all), the
    best dev weights ``best`` beside the model, every rank's generator states ``rng``; the
    last ``keep`` (at least one) are kept. Returns its folder."""
    saved = dataclasses.replace(progress, seconds=round(seconds, 3))
    return write_checkpoint(
        checkpoints,
        progress.step,
        model,
        optimizer,
        {"progress": dataclasses.asdict(saved), "scaler": scaler.state_dict()},
        keep=max(1, keep),
        extra={BEST: best} if best is not None else None,
        rng=rng,
    )


def clear_leftovers(checkpoints: Path) -> None:
    """Remove what a kill left half-written in a checkpoints folder."""
    for partial in checkpoints.glob(".partial-*"):
        if partial.is_dir() and not partial.is_symlink():
            shutil.rmtree(partial, ignore_errors=True)  # a write a kill cut short
        else:
            partial.unlink(missing_ok=True)  # its lock file (luong.common.files.write_folder)
    for leftover in checkpoints.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def restore(
    folder: Path,
    model: Seq2Seq,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    rank: int,
) -> tuple[Progress, Weights | None]:
    """Load the checkpoint ``folder`` into the model, the optimizer, this rank's generators
    and fp16's scaler; returns its progress and its best dev weights (None if it has none).

    Raises:
        ValueError: the checkpoint's state is not valid (naming its file).
    """
    state = read_checkpoint(folder, model, optimizer, rank=rank)
    try:
        progress = Progress(**state["progress"])
    except (KeyError, TypeError) as error:
        raise LuongError(f"{folder / STATE}: no valid progress ({error})") from None
    saved = state.get("scaler", {})  # fp16's loss scale (none in an fp32 or bf16 run)
    try:
        if saved and scaler.is_enabled():
            scaler.load_state_dict(saved)
    except (KeyError, TypeError, AttributeError) as error:
        raise LuongError(f"{folder / STATE}: no valid scaler state ({error})") from None
    best = folder / BEST
    return progress, read_tensors(best) if best.is_file() else None


def rng_state(device: torch.device) -> Weights:
    """This process's random generator states (the CPU's, and the GPU's on CUDA)."""
    states = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states
