"""``luong export``: a model as ONNX graphs, with a runtime that translates without torch."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from luong.cli.common import say
from luong.common.folder_files import SHORTLIST
from luong.export.exporter import export_folder
from luong.export.runtime import RUNTIME

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    try:
        with _native_stderr_silenced():
            out = export_folder(args.model, args.out)
    except ModuleNotFoundError as error:
        say(f"error: {error}")
        return 1
    listed = (out / SHORTLIST).is_file()
    print(
        f"exported {args.model} to {out}; translate with: "
        f"python {out / RUNTIME} {out} [--beam 5] < sources.txt"
        + (" (over its lexical shortlist; --shortlist 0: the full vocabulary)" if listed else "")
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
