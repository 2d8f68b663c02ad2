"""Checkpoint averaging: the mean of the weights of several checkpoints of one run.

The last checkpoints of a training run lie close together in weight space; their mean is
often a better model than any of them (Junczys-Dowmunt et al. 2016; every peer toolkit ships
a script for it). The mean is taken tensor by tensor in float64 and written back in each
tensor's own dtype; the result is a model folder (``Seq2Seq.save_pretrained``) that
``luong eval``, ``luong translate`` and ``luong.load`` read like any other, with
``averaged.json`` saying which checkpoints went into it and, for checkpoints of a run, the
run's ``config.toml`` (``luong.config.run.carried_run_toml``), so that ``luong eval OUT``
finds the run's task as it does in the run folder.

Only checkpoints of one architecture average: the same config, the same vocabularies, the
same tensor names and shapes. Anything else is refused with the folders and what differs.
Only checkpoints of one run average, too: two runs start from their own random weights and
their units do not line up, so the mean of their weights is not expected to work (an ensemble
combines runs: ``luong translate RUN1 RUN2``). A folder knows its run where it lies
(``RUN/checkpoints/step-*``, or a run folder ``RUN`` itself); a model folder outside any run
(a copy, an export) is taken as given.

Interpolation (``weights``) is the one exception: a model fine-tuned from another
(``--init-from``: the same architecture, the same vocabularies) still shares its units, and
a weighted mean of the two keeps some of each (the adapted model's gain, the general model's
breadth). The runs may differ then; the architecture and the vocabularies still may not.

The output folder is written all or nothing (``luong.common.files.write_folder``), and never over
anything but an earlier average: a folder of other files, a model or a run is refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

import torch
from torch import Tensor

from luong.common.checks import check_positive_int
from luong.common.devices import resolve_device
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import folder_list, shown_names, write_folder, write_text
from luong.common.folder_files import (
    AVERAGED,
    CHECKPOINTS,
    MODEL_CONFIG,
    RUN_CONFIG,
    SRC_VOCAB,
    TGT_VOCAB,
    WEIGHTS,
)
from luong.config.run import carried_run_toml, run_of
from luong.model.seq2seq import Seq2Seq, load_checked
from luong.training.checkpoint import list_checkpoints

__all__ = [
    "average_checkpoints",
    "average_models",
    "check_weights",
    "run_checkpoints",
    "run_of",
]

# Every file an averaged model folder may hold (a subword vocabulary's .model beside its JSON,
# the run's config.toml): a folder holding these alone is an earlier average, which ``force``
# may replace.
AVERAGE_FILES = frozenset(
    [AVERAGED, WEIGHTS, MODEL_CONFIG, SRC_VOCAB, TGT_VOCAB, RUN_CONFIG]
    + [Path(vocab).with_suffix(".model").name for vocab in (SRC_VOCAB, TGT_VOCAB)]
)


def run_checkpoints(run: str | Path, last: int | None = None) -> list[Path]:
    """The checkpoint folders of a run folder (``RUN/checkpoints/step-*``), oldest first; the
    ``last`` newest of them when given.

    Raises:
        ValueError: ``last`` below 1, a folder without checkpoints, or fewer than ``last``
            (the message says how many the run kept: ``--keep-checkpoints``).
    """
    if last is not None:
        check_positive_int("last", last)
    run = Path(run)
    if not run.is_dir():
        raise LuongError(f"{run}: no such run folder")
    found = list_checkpoints(run / CHECKPOINTS)
    if not found:
        raise LuongError(f"{run}: no checkpoints (expected {run / CHECKPOINTS}/step-*)")
    if last is not None and len(found) < last:
        raise LuongError(
            f"{run}: expected at least {last} checkpoints, got {len(found)} "
            "(train with --keep-checkpoints N to keep more)"
        )
    return found if last is None else found[-last:]


def _differences(first: Seq2Seq, other: Seq2Seq) -> list[str]:
    config = [
        f"{f.name} {getattr(first.config, f.name)!r} against {getattr(other.config, f.name)!r}"
        for f in fields(first.config)
        if getattr(first.config, f.name) != getattr(other.config, f.name)
    ]
    vocab = [
        f"the {side} vocabulary"
        for side, a, b in (
            ("source", first.src_vocab, other.src_vocab),
            ("target", first.tgt_vocab, other.tgt_vocab),
        )
        if a != b
    ]
    return config + vocab


def check_weights(weights: Sequence[float] | None, count: int) -> list[float]:
    """Interpolation weights, one per model, each in [0, 1] and summing to 1 (within 1e-6);
    ``None`` is the plain mean.

    Raises:
        TypeError: not a sequence of numbers.
        ValueError: another count than ``count``, a weight outside [0, 1], a sum not 1.
    """
    if weights is None:
        return [1.0 / count] * count
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence):
        raise LuongTypeError(f"weights: expected a sequence of numbers, got {type(weights)}")
    for i, w in enumerate(weights):
        if isinstance(w, bool) or not isinstance(w, int | float):
            raise LuongTypeError(f"weights[{i}]: expected a number, got {type(w).__name__}")
    if len(weights) != count:
        raise LuongError(f"weights: expected one per model ({count}), got {len(weights)}")
    if any(not 0.0 <= w <= 1.0 for w in weights):
        raise LuongError(f"weights: expected each in [0, 1], got {list(weights)}")
    if abs(sum(weights) - 1.0) > 1e-6:
        raise LuongError(f"weights: expected a sum of 1, got {sum(weights):g} ({list(weights)})")
    return [float(w) for w in weights]


def average_models(
    models: Sequence[Seq2Seq],
    names: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
) -> Seq2Seq:
    """A new model whose every weight is the mean of ``models``' (float64 sums, each tensor
    back in its dtype), or with ``weights`` their weighted mean (an interpolation: a model
    fine-tuned from another and that other, say); the models are left as they are.

    Args:
        models: at least one ``Seq2Seq``, of one architecture.
        names: a name per model for messages (its folder).
        weights: a weight per model (``check_weights``); the plain mean without.

    Raises:
        TypeError: a model is not a ``Seq2Seq``, a weight not a number.
        ValueError: no models, an int8 model, models that differ in config or
            vocabularies (the message names the two and every field that differs), or
            weights that are not one per model in [0, 1] summing to 1.
    """
    if isinstance(models, Seq2Seq) or not isinstance(models, Sequence):
        raise LuongTypeError(f"models: expected a sequence of Seq2Seq, got {type(models)}")
    if not models:
        raise LuongError("models: expected at least one model, got none")
    for i, model in enumerate(models):
        if not isinstance(model, Seq2Seq):
            raise LuongTypeError(f"models[{i}]: expected a Seq2Seq, got {type(model).__name__}")
    labels = list(names) if names is not None else [f"model {i + 1}" for i in range(len(models))]
    shares = check_weights(weights, len(models))
    for model, name in zip(models, labels, strict=True):
        if model.int8_parts:
            raise LuongError(
                f"{name}: an int8 model (luong quantize); average the float checkpoints, "
                "then quantize the average"
            )
    first = models[0]
    for model, name in zip(models[1:], labels[1:], strict=True):
        differ = _differences(first, model)
        if differ:
            what = "interpolated" if weights is not None else "averaged"
            raise LuongError(
                f"{labels[0]} and {name}: not one architecture ({'; '.join(differ)}); only "
                f"models of one architecture and one vocabulary can be {what}"
            )
    for model, name in zip(models[1:], labels[1:], strict=True):
        pairs = [(m.src_lang, m.tgt_lang) for m in (first, model)]
        if pairs[0] != pairs[1]:
            raise LuongError(
                f"{labels[0]} and {name}: not one language pair ({_pair(*pairs[0])} and "
                f"{_pair(*pairs[1])}); record the same pair on both (luong pair)"
            )
    tensors = [model.weights() for model in models]
    mean: dict[str, Tensor] = {}
    for tensor_name, tensor in tensors[0].items():
        if not tensor.is_floating_point():
            mean[tensor_name] = tensor.clone()
            continue
        total = torch.zeros(tensor.shape, dtype=torch.float64, device=tensor.device)
        if weights is None:  # the plain mean as it always was: a sum, then one division
            for w in tensors:
                total += w[tensor_name].double()
            mean[tensor_name] = (total / len(tensors)).to(tensor.dtype)
            continue
        for w, share in zip(tensors, shares, strict=True):
            total += share * w[tensor_name].double()
        mean[tensor_name] = total.to(tensor.dtype)
    averaged = Seq2Seq(first.config, first.src_vocab, first.tgt_vocab).to(first.device)
    load_checked(averaged, mean, Path(labels[0]))
    averaged.src_lang, averaged.tgt_lang = first.src_lang, first.tgt_lang
    return averaged.eval()


def _pair(src_lang: str | None, tgt_lang: str | None) -> str:
    return f"{src_lang or '?'}-{tgt_lang or '?'}" if src_lang or tgt_lang else "unknown"


def _check_one_run(paths: Sequence[Path]) -> None:
    """Every folder of ``paths`` that belongs to a run belongs to one run."""
    first: tuple[Path, Path] | None = None
    for path in paths:
        run = run_of(path)
        if run is None:
            continue
        if first is None:
            first = (path, run)
        elif run.resolve() != first[1].resolve():
            raise LuongError(
                f"{first[0]} and {path} are checkpoints of two runs, {first[1]} and {run}; "
                "only the checkpoints of one run can be averaged (separately trained weights "
                f"do not line up); to combine runs, use them as an ensemble (luong translate "
                f"{first[1]} {run})"
            )


def _check_out(out: Path, force: bool) -> None:
    """``out`` is new, an empty folder, or (with ``force``) an earlier average: never a file,
    a model, a run or a folder of the user's own files, which writing would replace."""
    if out.exists() and not out.is_dir():
        raise LuongError(
            f"{out}: a file, not a folder; --out names the model folder to write (a new or "
            "empty folder)"
        )
    held = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    if not held:
        return
    shown = shown_names(held)
    earlier = AVERAGED in held and set(held) <= AVERAGE_FILES
    if earlier and not force:
        raise LuongError(
            f"{out}: holds an earlier average ({shown}); choose a new or empty folder for "
            "--out, or --force to replace it"
        )
    if not earlier:
        raise LuongError(
            f"{out}: not empty and not an earlier luong average (it holds {shown}); choose a "
            "new or empty folder for --out (--force replaces only an earlier average)"
        )


def average_checkpoints(
    folders: Sequence[str | Path],
    out: str | Path,
    force: bool = False,
    device: str | torch.device = "cpu",
    *,
    device_name: str = "device",
    weights: Sequence[float] | None = None,
) -> Path:
    """Average the model folders ``folders`` (checkpoint folders of one run, or model folders
    of one architecture outside any run) into the model folder ``out``, written all or
    nothing; returns its path. With ``weights``, interpolate them instead: the folders may
    belong to several runs (a model fine-tuned with ``--init-from`` and the model it started
    from share their units), but still one architecture and one vocabulary.

    Args:
        folders: the model folders to average.
        out: the folder to write: new or empty.
        force: ``out`` may also be an earlier average (a folder holding ``averaged.json`` and
            a model's files alone), which is replaced whole, atomically: a reader sees the
            old average or the new one.
        device: where the models load and the mean is taken (float64 sums: not on MPS): a
            name (``luong.config.choices.DEVICES``, resolved on this machine first,
            ``luong.common.devices.resolve_device``) or a ``torch.device``.
        device_name: what the messages call the device (a command line: ``--device``).
        weights: a weight per folder, each in [0, 1], summing to 1 (``check_weights``),
            written into ``averaged.json``.

    Raises:
        ValueError: a device this machine lacks, fewer than one folder, ``out`` among
            them, ``out`` a file or a folder that may not be replaced, folders of two runs
            without ``weights`` (``run_of``), weights that are not one per folder in [0, 1]
            summing to 1, or models that cannot be averaged (``average_models``: another
            architecture or vocabulary).
        FileNotFoundError: a folder or one of its files is missing.
    """
    if isinstance(device, str):
        device = resolve_device(device, device_name)
    paths = folder_list("folders", folders)
    if not isinstance(force, bool):
        raise LuongTypeError(f"force: expected a bool, got {type(force).__name__}")
    out = Path(out)
    if any(p.resolve() == out.resolve() for p in paths):
        raise LuongError(f"{out}: the output is one of the folders being averaged")
    _check_out(out, force)
    shares = check_weights(weights, len(paths))  # before any model loads
    if weights is None:
        _check_one_run(paths)
    models = [Seq2Seq.from_pretrained(p, device=device) for p in paths]
    averaged = average_models(models, [str(p) for p in paths], weights)
    record: dict[str, object] = {"averaged": [str(p) for p in paths], "count": len(paths)}
    if weights is not None:
        record["weights"] = shares
    carried = {carried_run_toml(p, out) for p in paths}
    run_config = carried.pop() if len(carried) == 1 else None

    def fill(tmp: Path) -> None:
        averaged.save_pretrained(tmp)
        write_text(tmp / AVERAGED, json.dumps(record, indent=2) + "\n")
        if run_config is not None:  # the run's settings: luong eval OUT reads its task
            write_text(tmp / RUN_CONFIG, run_config)

    return write_folder(out, fill)
