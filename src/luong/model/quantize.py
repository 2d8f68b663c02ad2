"""int8 models for decoding on the CPU (``luong quantize``): a float model folder in, a model
folder with the decoder's output layer, cells and attentional layer in int8 out
(``Seq2Seq.to_int8``, ``luong.model.int8``), which ``luong translate``, ``eval``, ``serve``, the
ensembles and ``luong.load`` read as they read any model folder.

Only the weights change: no data is needed (the inputs' scale is fixed, see ``luong.model.int8``),
and the float model is left as it is. An int8 model is never trained: ``luong train`` refuses
it, and it is not quantized again.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import shown_names, write_folder, write_text
from luong.common.folder_files import (
    MODEL_CONFIG,
    RUN_CONFIG,
    SHORTLIST,
    SRC_VOCAB,
    TGT_VOCAB,
    WEIGHTS,
)
from luong.config.choices import INT8_PARTS
from luong.config.run import carried_run_toml
from luong.model.folder import is_int8_folder
from luong.model.seq2seq import Seq2Seq

__all__ = ["quantize", "quantize_folder"]

# Every file an int8 model folder may hold (a subword vocabulary's .model beside its JSON, the
# run's config.toml): a folder holding these alone is an earlier int8 model, which ``force``
# may replace; anything else in it (a run's files, a note, a folder) is not luong's to delete.
INT8_FILES = frozenset(
    [WEIGHTS, MODEL_CONFIG, SRC_VOCAB, TGT_VOCAB, RUN_CONFIG, SHORTLIST]
    + [Path(vocab).with_suffix(".model").name for vocab in (SRC_VOCAB, TGT_VOCAB)]
)


def quantize(model: Seq2Seq, parts: Sequence[str] = INT8_PARTS) -> Seq2Seq:
    """An int8 copy of ``model`` (``Seq2Seq.to_int8(parts)``) in eval mode; ``model`` is left
    as it is.

    Raises:
        TypeError: ``model`` is not a ``Seq2Seq``, or ``parts`` not a sequence of names.
        ValueError: ``model`` is int8 already or not on the CPU, or ``parts`` as ``to_int8``.
    """
    if not isinstance(model, Seq2Seq):
        raise LuongTypeError(f"model: expected a Seq2Seq, got {type(model).__name__}")
    return copy.deepcopy(model).to_int8(parts)  # to_int8 checks the model and parts


def quantize_folder(
    folder: str | Path,
    out: str | Path,
    parts: Sequence[str] = INT8_PARTS,
    force: bool = False,
) -> Path:
    """Write the int8 model of the model folder ``folder`` to ``out``, all or nothing; returns
    ``out``.

    Args:
        folder: a float model folder (a run folder, a checkpoint, an average).
        out: the folder to write: new or empty, or with ``force`` an earlier int8 model (a
            folder holding an int8 model's files and nothing else, ``INT8_FILES``), which is
            replaced whole, atomically. It carries the run's ``config.toml`` when ``folder``
            holds one or belongs to a run (``luong.config.run.carried_run_toml``), so that
            ``luong eval OUT`` finds the task as in the run folder.
        parts: what to hold in int8 (``Seq2Seq.to_int8``).
        force: see ``out``.

    Raises:
        FileNotFoundError: ``folder`` or one of its files is missing (not a model folder).
        ValueError: ``folder`` holds an int8 model already, ``out`` is ``folder``, a file or
            a folder that may not be replaced, or ``parts`` as ``Seq2Seq.to_int8``.
    """
    if not isinstance(force, bool):
        raise LuongTypeError(f"force: expected a bool, got {type(force).__name__}")
    folder, out = Path(folder), Path(out)
    if is_int8_folder(folder):
        raise LuongError(
            f"{folder}: holds an int8 model already (luong quantize); quantize the float model "
            "it was made from"
        )
    if out.resolve() == folder.resolve():
        raise LuongError(f"{out}: the output is the model folder being quantized")
    _check_out(out, force)
    model = quantize(Seq2Seq.from_pretrained(folder), parts)
    run_config = carried_run_toml(folder, out)

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp)
        if run_config is not None:  # the run's settings: luong eval OUT reads its task
            write_text(tmp / RUN_CONFIG, run_config)

    return write_folder(out, fill)


def _check_out(out: Path, force: bool) -> None:
    """``out`` is new, an empty folder, or (with ``force``) an earlier int8 model: never a file,
    a run, a float model or a folder of the user's own files, which writing would replace."""
    if out.exists() and not out.is_dir():
        raise LuongError(
            f"{out}: a file, not a folder; --out names the model folder to write (a new or "
            "empty folder)"
        )
    held = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    if not held:
        return
    shown = shown_names(held)
    int8 = is_int8_folder(out)
    others = [name for name in held if name not in INT8_FILES]
    if int8 and others:
        raise LuongError(
            f"{out}: holds an int8 model and other files ({shown_names(others)}); choose a new or "
            "empty folder for --out (--force replaces only an earlier int8 model that holds "
            "nothing else)"
        )
    earlier = int8 and not others
    if earlier and not force:
        raise LuongError(
            f"{out}: holds an earlier int8 model ({shown}); choose a new or empty folder for "
            "--out, or --force to replace it"
        )
    if not earlier:
        raise LuongError(
            f"{out}: not empty and not an earlier int8 model (it holds {shown}); choose a new "
            "or empty folder for --out (--force replaces only an earlier int8 model)"
        )
