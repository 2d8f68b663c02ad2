"""``luong export``: a model as ONNX graphs, with a runtime that translates without torch."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from luong.cli.common import say
from luong.export.exporter import export_folder
from luong.export.runtime import RUNTIME

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "export",
        help="write a model as ONNX graphs with a runtime that needs no torch",
        description="Export a model folder (or run folder) as ONNX: the encoder and one "
        "decoder step as two graphs (encoder.onnx, step.onnx), the vocabulary files beside "
        "them, and luong_onnx.py, a runtime (greedy and beam search in numpy over "
        "onnxruntime) that translates with them where only numpy, onnxruntime and "
        "sentencepiece are installed: python DIR/luong_onnx.py DIR --beam 5 < sources.txt. "
        "The export is checked against the model before it is written. Needs the packages "
        "onnx and onnxruntime (pip install 'luong[export]').",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder or run folder")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the export folder to write: a new or empty folder (written all or nothing)",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    try:
        with _native_stderr_silenced():
            out = export_folder(args.model, args.out)
    except ModuleNotFoundError as error:
        say(f"error: {error}")
        return 1
    print(
        f"exported {args.model} to {out}; translate with: "
        f"python {out / RUNTIME} {out} [--beam 5] < sources.txt"
    )
    return 0


@contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null for the block: torch's exporter prints a warning
    per packed sequence from C++ (no missing shape inference of ``prim::PackPadded``), which
    no Python filter reaches and which says nothing about the export. Exceptions still
    reach the caller, which reports them after the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
