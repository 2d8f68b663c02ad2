"""Training checkpoints, crash-safe: safetensors and JSON only, never pickle.

Every file is written all or nothing (``luong.common.files``). A checkpoint is a folder built under
a temporary name and renamed into place when complete; the ``latest`` pointer moves to it
only afterwards, and older checkpoints are deleted only after that. A kill at any moment
leaves the previous checkpoint intact and findable.

A checkpoint folder ``checkpoints/step-0000123/`` holds:

    model.safetensors, config.json, src_vocab.json, tgt_vocab.json   the model (loadable)
    optimizer.safetensors   the optimizer's tensors and the random generator's state
    state.json              step, epoch, position in the epoch, the dev curve, counters,
                            the optimizer's hyper-parameters, and fp16's gradient scaler
                            (its loss scale and growth count: ``GradScaler.state_dict``)
    best.safetensors        the best dev weights so far (once a dev evaluation has run)

A run folder stopped before its end holds checkpoints and no model: ``stopped_run_model``
gives its latest checkpoint's best dev weights (else that checkpoint's own), which
``luong translate``, ``luong po`` and ``luong serve`` decode with.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from luong.common.errors import LuongError
from luong.common.files import read_json, write_folder, write_text
from luong.common.folder_files import (
    BEST,
    CHECKPOINT_PREFIX,
    CHECKPOINTS,
    LATEST,
    OPTIMIZER,
    RUN,
    RUN_CONFIG,
    SRC_VOCAB,
    STATE,
    TGT_VOCAB,
    WEIGHTS,
)
from luong.common.tensor_files import read_tensors, save_tensors
from luong.data.subword import load_vocab
from luong.data.vocab import Vocab
from luong.model.seq2seq import Seq2Seq, load_checked

__all__ = [
    "find_latest",
    "is_stopped_run",
    "list_checkpoints",
    "read_checkpoint",
    "stopped_run_model",
    "write_checkpoint",
]

FORMAT = 1


def _check_finite(model: torch.nn.Module) -> None:
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise LuongError(f"refusing to write a checkpoint: weight {name!r} is not finite")


def write_checkpoint(
    checkpoints: str | Path,
    step: int,
    model: Seq2Seq,
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
        OSError: a file cannot be written (a full disk): the message names it and says
            which checkpoint ``latest`` still names.
    """
    _check_finite(model)
    checkpoints = Path(checkpoints)
    tensors, groups = _flatten_optimizer(optimizer)
    for rank, states in enumerate(rng or [{"torch": torch.get_rng_state()}]):
        for kind, generator in states.items():
            tensors[f"rng.{kind}.{rank}"] = generator

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp)
        save_tensors(tmp / OPTIMIZER, tensors, metadata={"format": "luong-optimizer"})
        for name, more in (extra or {}).items():
            save_tensors(tmp / name, more, metadata={"format": "luong"})
        payload = {"format": FORMAT, "step": step, "param_groups": groups, **state}
        (tmp / STATE).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")

    target = checkpoints / f"{CHECKPOINT_PREFIX}{step:07d}"
    try:
        folder = write_folder(target, fill)
        write_text(checkpoints / LATEST, folder.name + "\n")
    except OSError as error:
        # A full disk: the folder was built under a temporary name and ``latest`` moves
        # only once it is complete, so the previous checkpoint still stands.
        reason = str(error)
        if error.strerror is not None and error.filename is not None:
            reason = f"{error.strerror}, writing {Path(error.filename).name}"
        pointer = checkpoints / LATEST
        previous = pointer.read_text(encoding="utf-8").strip() if pointer.is_file() else ""
        kept = (
            f"the previous checkpoint, {previous}, is intact"
            if previous and (checkpoints / previous).is_dir()
            else "there is no earlier checkpoint"
        )
        raise OSError(f"{target}: checkpoint not written ({reason}); {kept}") from None
    for old in list_checkpoints(checkpoints)[: -max(1, keep)]:
        if old != folder:  # whatever else the folder holds, ``latest`` must name a checkpoint
            shutil.rmtree(old, ignore_errors=True)
    return folder


def list_checkpoints(checkpoints: str | Path) -> list[Path]:
    """The checkpoint folders ``step-*`` of a checkpoints folder, oldest first (by step
    number: the names are padded to 7 digits, so past step 9,999,999 the text order is not
    the step order); none when it does not exist."""
    checkpoints = Path(checkpoints)
    found = [(_step_of(p), p) for p in checkpoints.glob(f"{CHECKPOINT_PREFIX}*") if p.is_dir()]
    return [p for step, p in sorted(found) if step >= 0]


def _step_of(folder: Path) -> int:
    """The step in a checkpoint folder's name (``step-0000123`` -> 123); -1 for other names."""
    name = folder.name
    digits = name.removeprefix(CHECKPOINT_PREFIX)
    if not name.startswith(CHECKPOINT_PREFIX) or not digits.isascii() or not digits.isdigit():
        return -1
    return int(digits)


def find_latest(checkpoints: str | Path) -> Path | None:
    """The folder ``latest`` names; None when the run has no checkpoint yet."""
    checkpoints = Path(checkpoints)
    pointer = checkpoints / LATEST
    if not pointer.is_file():
        return None
    folder = checkpoints / pointer.read_text(encoding="utf-8").strip()
    if not folder.is_dir():
        raise LuongError(f"{pointer}: names {folder.name}, which does not exist")
    return folder


def is_stopped_run(folder: str | Path) -> bool:
    """Whether ``folder`` is a run folder stopped before its end: it holds ``checkpoints/``
    or ``run.json``, and no model (``model.safetensors``)."""
    folder = Path(folder)
    run = (folder / CHECKPOINTS).is_dir() or (folder / RUN).is_file()
    return run and not (folder / WEIGHTS).exists()


def stopped_run_model(run: str | Path, device: str | torch.device = "cpu") -> tuple[Seq2Seq, str]:
    """The model of a run folder stopped before its end (``is_stopped_run``): its latest
    checkpoint's best dev weights so far (``best.safetensors``, what the finished run would
    have kept), else, before any dev evaluation, that checkpoint's own weights; and the
    line that says which (``luong.load`` logs it).

    Raises:
        ValueError: ``run`` is no stopped run, holds no checkpoint yet, or its latest
            checkpoint does not load; the message says how to resume the run or to use a
            checkpoint (``luong average RUN --last 1 --out DIR``).
    """
    run = Path(run)
    if not is_stopped_run(run):
        raise LuongError(
            f"{run}: expected a run folder ({CHECKPOINTS}/ or {RUN}) without {WEIGHTS}"
        )
    resume = f"luong train --config {run / RUN_CONFIG} --out {run}"
    checkpoints = run / CHECKPOINTS
    latest: Path | None = None
    damaged = ""
    try:
        latest = find_latest(checkpoints)
    except LuongError as error:
        damaged = str(error)
    if latest is None and not damaged:  # no pointer: the newest folder
        found = list_checkpoints(checkpoints)
        latest = found[-1] if found else None
    if latest is None:
        reason = f"{damaged}; " if damaged else ""
        raise LuongError(
            f"{run}: no {WEIGHTS} and no checkpoint yet ({reason}the run stopped before its "
            f"first): resume it with {resume}"
        )
    try:
        model = Seq2Seq.from_pretrained(latest, device=device)
        best = latest / BEST
        if best.is_file():
            tensors = read_tensors(best)
            for name in model.tied():  # the trainer keeps state_dict(), tied names too
                tensors.pop(name, None)
            load_checked(model, tensors, best)
    except (OSError, ValueError) as error:
        raise LuongError(
            f"{error}: the run {run} stopped before its end and its latest checkpoint does not "
            f"load; resume it with {resume}, or make a model of a checkpoint with luong "
            f"average {run} --last 1 --out DIR"
        ) from None
    state = read_json(latest / STATE) if (latest / STATE).is_file() else {}
    progress = state.get("progress", {}) if isinstance(state, dict) else {}
    step = _step_of(latest)
    if best.is_file():
        best_step = progress.get("best_step") if isinstance(progress, dict) else None
        which = f"its best dev weights (step {best_step}) in {latest}"
    else:
        which = f"the weights of {latest} (step {step}, before any dev evaluation)"
    note = (
        f"{run}: no {WEIGHTS} (the run stopped before its end): using {which}; {resume} resumes it"
    )
    return model, note


def read_checkpoint(
    folder: Path, model: Seq2Seq, optimizer: torch.optim.Optimizer, rank: int = 0
) -> dict[str, Any]:
    """Restore ``model``, ``optimizer`` and torch's random generators (those ``rank`` saved)
    from a checkpoint folder; returns the training state of ``state.json``.

    Raises:
        FileNotFoundError, ValueError: a missing, corrupt, mis-shaped or foreign file; the
            message names the file and the problem.
    """
    state = read_json(folder / STATE)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise LuongError(f"{folder / STATE}: not a luong training state (format {FORMAT})")
    for name, side, vocab in (
        (SRC_VOCAB, "source", model.src_vocab),
        (TGT_VOCAB, "target", model.tgt_vocab),
    ):
        _check_same_vocab(folder / name, side, vocab)
    load_checked(model, read_tensors(folder / WEIGHTS), folder / WEIGHTS)
    tensors = read_tensors(folder / OPTIMIZER)
    rng = {k: tensors.pop(k) for k in [k for k in tensors if k.startswith("rng.")]}
    cpu, cuda = rng.get(f"rng.torch.{rank}"), rng.get(f"rng.cuda.{rank}")
    if cpu is None:
        ranks = len([k for k in rng if k.startswith("rng.torch.")])
        raise LuongError(
            f"{folder / OPTIMIZER}: no random generator state for rank {rank} "
            f"(written by {ranks} ranks; resume with as many)"
        )
    try:
        optimizer.load_state_dict(_unflatten_optimizer(tensors, state["param_groups"]))
    except (KeyError, ValueError, RuntimeError) as error:
        raise LuongError(f"{folder / OPTIMIZER}: does not fit the optimizer ({error})") from None
    torch.set_rng_state(cpu)
    if cuda is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(cuda)
    return state


def _check_same_vocab(path: Path, side: str, vocab: Vocab) -> None:
    """The checkpoint's vocabulary is the one the run built now: the weights' rows mean the
    same symbols (else the training data changed since the checkpoint)."""
    saved = load_vocab(path)
    if saved == vocab:
        return
    new, gone = (
        [s for s in vocab.symbols if s not in saved],
        [s for s in saved.symbols if s not in vocab],
    )
    what = (
        "; ".join(
            f"{label} {', '.join(repr(s) for s in symbols[:3])}{' ...' * (len(symbols) > 3)}"
            for label, symbols in (("now also", new), ("no longer", gone))
            if symbols
        )
        or "the same symbols, in another order or cut another way"
    )
    raise LuongError(
        f"{path}: the checkpoint's {side} vocabulary is not the one built on the training data "
        f"now ({what}): the data changed since the run began; choose another --out to start "
        "a new run"
    )


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
            raise LuongError(f"unexpected tensor {key!r}")
        state.setdefault(int(index), {})[name] = tensor
    return {"state": state, "param_groups": groups}
