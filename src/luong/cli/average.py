"""``luong average``: the mean of a run's last checkpoints (or of given ones) as a model, or with
``--weights`` the weighted mean of models that share an architecture and vocabularies."""

from __future__ import annotations

import argparse

from luong.cli.common import UsageError
from luong.common.folder_files import CHECKPOINTS
from luong.model.averaging import average_checkpoints, run_checkpoints

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last: expected >= 1, got {args.last}")
    if args.weights is not None:
        return _interpolate(args)
    runs = [p for p in args.paths if (p / CHECKPOINTS).is_dir()]
    if len(runs) > 1:
        raise UsageError(
            f"expected one run folder, got {len(runs)} ({', '.join(map(str, runs))}): only "
            "the checkpoints of one run can be averaged; to combine runs, use them as an "
            f"ensemble (luong translate {' '.join(map(str, runs))})"
        )
    if runs and len(args.paths) > 1:
        others = ", ".join(str(p) for p in args.paths if p != runs[0])
        raise UsageError(
            f"expected one run folder alone, or checkpoint folders, got the run folder "
            f"{runs[0]} and {others}; give the run folder alone (with --last N for its "
            f"newest checkpoints) or its checkpoint folders ({runs[0] / CHECKPOINTS}/step-*)"
        )
    if args.last is not None and not runs:
        raise UsageError(f"--last: {args.paths[0]} is not a run folder (no checkpoints/)")
    folders = run_checkpoints(runs[0], args.last) if runs else list(args.paths)
    out = average_checkpoints(
        folders, args.out, force=args.force, device=args.device, device_name="--device"
    )
    names = ", ".join(f.name for f in folders)
    print(f"averaged {len(folders)} checkpoint{'s' * (len(folders) != 1)} ({names}) into {out}")
    return 0


def _interpolate(args: argparse.Namespace) -> int:
    """``--weights``: the weighted mean of the folders given (run folders are their models)."""
    if args.last is not None:
        raise UsageError("--last: not with --weights (give the model or run folders themselves)")
    if len(args.weights) != len(args.paths):
        raise UsageError(
            f"--weights: expected one per PATH ({len(args.paths)}), got {len(args.weights)}"
        )
    out = average_checkpoints(
        args.paths,
        args.out,
        force=args.force,
        device=args.device,
        device_name="--device",
        weights=args.weights,
    )
    shares = ", ".join(
        f"{path} {weight:g}" for path, weight in zip(args.paths, args.weights, strict=True)
    )
    print(f"interpolated {len(args.paths)} models ({shares}) into {out}")
    return 0
