"""``luong quantize``: a model folder's int8 form, for decoding on the CPU."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from luong.cli.common import UsageError
from luong.model import INT8_PARTS, WEIGHTS
from luong.quantize import quantize_folder

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "quantize",
        help="write a model's int8 form, for faster decoding on the CPU",
        description="Write the int8 form of a model folder (int8 weights with a float scale "
        "per row, in safetensors): the decoder's output layer, cells and attentional layer "
        "multiply in int8 on the CPU. luong translate, eval, serve, ensembles and luong.load "
        "read it as any model folder; it is not trained further. --out must be a new or empty "
        "folder, or with --force an earlier int8 model; it is written all or nothing.",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder (float32)")
    parser.add_argument(
        "--out", type=Path, required=True, help="the model folder to write (new or empty)"
    )
    parser.add_argument(
        "--parts",
        default=",".join(INT8_PARTS),
        metavar="PART[,PART]",
        help="what to hold in int8: some of " + ", ".join(INT8_PARTS) + " (default: all)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it holds an earlier int8 model (in one step); any other folder "
        "is still refused",
    )
    parser.set_defaults(handler=main)


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
