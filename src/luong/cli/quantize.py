"""``luong quantize``: a model folder's int8 form, for decoding on the CPU (its flags:
``luong.cli.folder_parsers.add_quantize``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from luong.cli.common import UsageError
from luong.common.folder_files import WEIGHTS
from luong.config.choices import INT8_PARTS
from luong.model.quantize import quantize_folder

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    parts = [part.strip() for part in args.parts.split(",")]
    unknown = [part for part in parts if part not in INT8_PARTS]
    if unknown or len(set(parts)) != len(parts):
        raise UsageError(
            f"--parts: expected some of {', '.join(INT8_PARTS)}, each once, got {args.parts!r}"
        )
    out = quantize_folder(args.model, args.out, parts, force=args.force)
    before, after = (folder / WEIGHTS for folder in (args.model, out))
    print(
        f"quantized {args.model} ({', '.join(parts)} in int8) into {out}: {WEIGHTS} "
        f"{_mb(before)} -> {_mb(after)}"
    )
    return 0


def _mb(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.1f} MB"
