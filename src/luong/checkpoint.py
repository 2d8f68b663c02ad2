"""Crash-safe files and training checkpoints: safetensors and JSON only, never pickle.

Every file is written to a temporary name in its own folder, flushed, fsynced and renamed
over the final name, so a reader sees the old file or the new one, never half of one. A
checkpoint is a folder built under a temporary name and renamed into place when complete;
the ``latest`` pointer moves to it only afterwards, and older checkpoints are deleted only
after that. A kill at any moment leaves the previous checkpoint intact and findable.

A checkpoint folder ``checkpoints/step-0000123/`` holds:

    model.safetensors, config.json, src_vocab.json, tgt_vocab.json   the model (loadable)
    optimizer.safetensors   the optimizer's tensors and the random generator's state
    state.json              step, epoch, position in the epoch, the dev curve, counters,
                            the optimizer's hyper-parameters
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

__all__ = [
    "BEST",
    "atomic_write",
    "find_latest",
    "read_checkpoint",
    "read_json",
    "write_checkpoint",
    "write_folder",
]

OPTIMIZER = "optimizer.safetensors"
BEST = "best.safetensors"
STATE = "state.json"
LATEST = "latest"
PREFIX = "step-"
FORMAT = 1


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Write ``path`` all or nothing: ``write(tmp)`` fills a temporary file in the same folder,
    which is fsynced and renamed over ``path``."""
    path = Path(path)
    # A fresh name, created by ``write`` itself: the file gets the usual permissions (the
    # umask's), not mkstemp's owner-only 0600.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # safetensors creates its files owner-only
        with open(tmp, "rb+") as handle:
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically write UTF-8 text."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    atomic_write(path, write)


def write_tensors(path: str | Path, tensors: dict[str, Tensor], metadata: dict[str, str]) -> None:
    """Atomically write a safetensors file (contiguous CPU copies of ``tensors``)."""
    flat = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    atomic_write(path, lambda tmp: save_file(flat, str(tmp), metadata=metadata))


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing, unreadable or malformed file raises naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None


def read_tensors(path: Path) -> dict[str, Tensor]:
    """Load a safetensors file; a missing, truncated or foreign file raises naming it."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise ValueError(f"{path}: not a readable safetensors file ({error})") from None


def write_folder(folder: str | Path, fill: Callable[[Path], None]) -> Path:
    """Build a folder all or nothing: ``fill(tmp)`` writes into a temporary sibling, which is
    renamed to ``folder`` (replacing an older one) once complete."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".partial-{folder.name}.{os.getpid()}.{uuid.uuid4().hex}")
    tmp.mkdir()  # the umask's permissions, not mkdtemp's 0700
    try:
        fill(tmp)
        for path in tmp.iterdir():
            os.chmod(path, 0o666 & ~_umask())  # safetensors creates its files owner-only
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        _fsync_dir(tmp)
        if folder.exists():
            # Replace in two renames so a kill in between leaves one complete copy.
            old = folder.with_name(f".old-{folder.name}")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(folder, old)
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(folder.parent)
    return folder


def _check_finite(model: torch.nn.Module) -> None:
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"refusing to write a checkpoint: weight {name!r} is not finite")


def write_checkpoint(
    checkpoints: str | Path,
    step: int,
    model: Any,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    keep: int,
    extra: dict[str, dict[str, Tensor]] | None = None,
    rng: list[dict[str, Tensor]] | None = None,
) -> Path:
    """Write ``checkpoints/step-<step>/``, point ``latest`` at it and keep the last ``keep``.

    Args:
        checkpoints: the checkpoints folder of a run.
        step: the optimizer steps taken so far.
        model: a ``Seq2Seq`` (written with ``save_pretrained``).
        optimizer: its tensors go to ``optimizer.safetensors``, the rest to ``state.json``.
        state: JSON-serialisable training state.
        keep: checkpoints to keep (at least 1).
        extra: more safetensors files to write into the checkpoint, by file name (the
            trainer keeps the best weights so far in ``best.safetensors``).
        rng: each rank's random generator states (``{"torch": ..., "cuda": ...}``), in rank
            order; this process's CPU generator when None.

    Raises:
        ValueError: a weight is not finite (nothing is written).
    """
    _check_finite(model)
    checkpoints = Path(checkpoints)
    tensors, groups = _flatten_optimizer(optimizer)
    for rank, states in enumerate(rng or [{"torch": torch.get_rng_state()}]):
        for kind, generator in states.items():
            tensors[f"rng.{kind}.{rank}"] = generator

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp)
        save_file(tensors, str(tmp / OPTIMIZER), metadata={"format": "luong-optimizer"})
        for name, more in (extra or {}).items():
            flat = {k: v.detach().cpu().contiguous() for k, v in more.items()}
            save_file(flat, str(tmp / name), metadata={"format": "luong"})
        payload = {"format": FORMAT, "step": step, "param_groups": groups, **state}
        (tmp / STATE).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")

    folder = write_folder(checkpoints / f"{PREFIX}{step:07d}", fill)
    write_text(checkpoints / LATEST, folder.name + "\n")
    complete = sorted(p for p in checkpoints.glob(f"{PREFIX}*") if p.is_dir())
    for old in complete[: -max(1, keep)]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def find_latest(checkpoints: str | Path) -> Path | None:
    """The folder ``latest`` names; None when the run has no checkpoint yet."""
    checkpoints = Path(checkpoints)
    pointer = checkpoints / LATEST
    if not pointer.is_file():
        return None
    folder = checkpoints / pointer.read_text(encoding="utf-8").strip()
    if not folder.is_dir():
        raise ValueError(f"{pointer}: names {folder.name}, which does not exist")
    return folder


def read_checkpoint(
    folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, rank: int = 0
) -> dict[str, Any]:
    """Restore ``model``, ``optimizer`` and torch's random generators (those ``rank`` saved)
    from a checkpoint folder; returns the training state of ``state.json``.

    Raises:
        FileNotFoundError, ValueError: a missing, corrupt, mis-shaped or foreign file; the
            message names the file and the problem.
    """
    from luong.model import WEIGHTS, load_checked

    state = read_json(folder / STATE)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{folder / STATE}: not a luong training state (format {FORMAT})")
    load_checked(model, read_tensors(folder / WEIGHTS), folder / WEIGHTS)
    tensors = read_tensors(folder / OPTIMIZER)
    rng = {k: tensors.pop(k) for k in [k for k in tensors if k.startswith("rng.")]}
    cpu, cuda = rng.get(f"rng.torch.{rank}"), rng.get(f"rng.cuda.{rank}")
    if cpu is None:
        ranks = len([k for k in rng if k.startswith("rng.torch.")])
        raise ValueError(
            f"{folder / OPTIMIZER}: no random generator state for rank {rank} "
            f"(written by {ranks} ranks; resume with as many)"
        )
    try:
        optimizer.load_state_dict(_unflatten_optimizer(tensors, state["param_groups"]))
    except (KeyError, ValueError, RuntimeError) as error:
        raise ValueError(f"{folder / OPTIMIZER}: does not fit the optimizer ({error})") from None
    torch.set_rng_state(cpu)
    if cuda is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(cuda)
    return state


def _flatten_optimizer(optimizer: torch.optim.Optimizer) -> tuple[dict[str, Tensor], list[Any]]:
    saved = optimizer.state_dict()
    tensors: dict[str, Tensor] = {}
    for index, values in saved["state"].items():
        for name, value in values.items():
            tensor = value if isinstance(value, Tensor) else torch.tensor(value)
            tensors[f"state.{index}.{name}"] = tensor.detach().cpu().contiguous()
    return tensors, saved["param_groups"]


def _unflatten_optimizer(tensors: dict[str, Tensor], groups: list[Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Tensor]] = {}
    for key, tensor in tensors.items():
        kind, index, name = key.split(".", 2)
        if kind != "state":
            raise ValueError(f"unexpected tensor {key!r}")
        state.setdefault(int(index), {})[name] = tensor
    return {"state": state, "param_groups": groups}
