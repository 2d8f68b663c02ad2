"""``luong plot`` (the attention of one translation) and ``luong plot-scores`` (dot, general
and concat side by side)."""

from __future__ import annotations

import argparse

from luong.cli.common import UsageError, device_options, model_defaults, search_options
from luong.config.faces import MAX_DPI, MAX_POSITIONS
from luong.evaluation.plot import (
    fresh_score_panels,
    model_score_panel,
    plot_scores,
    plot_translation,
)
from luong.translation.translator import load

__all__ = ["main_plot", "main_scores"]


def _check_dpi(args: argparse.Namespace) -> None:
    if not 1 <= args.dpi <= MAX_DPI:
        raise UsageError(f"--dpi: expected between 1 and {MAX_DPI}, got {args.dpi}")


def main_plot(args: argparse.Namespace) -> int:
    options = search_options(args, defaults=model_defaults([args.model]))
    _check_dpi(args)
    if not args.text.strip():
        raise UsageError("text: expected a non-empty input")
    translator = load(args.model, **device_options(args))
    drawn = plot_translation(translator, args.text, args.out, options, dpi=args.dpi)
    print(f"{args.text} -> {drawn.texts[0]}; attention written to {args.out}")
    return 0


def main_scores(args: argparse.Namespace) -> int:
    for name in ("step", "pad"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name}: expected >= 0, got {getattr(args, name)}")
    _check_dpi(args)
    if args.models:
        if not args.text.strip():
            raise UsageError("--text: expected a non-empty input")
        panels = []
        for folder in args.models:
            translator = load(folder, **device_options(args))
            name = f"{translator.config.attention} ({folder.name})"
            panels.append(model_score_panel(translator, args.text, args.step, args.pad, name))
        title = f"attention at output step {args.step} for {args.text!r}"
    else:
        if not 1 <= args.length <= MAX_POSITIONS:
            raise UsageError(f"--length: expected between 1 and {MAX_POSITIONS}, got {args.length}")
        if not 0 <= args.pad < args.length:
            raise UsageError(
                f"--pad: expected 0 <= --pad < --length ({args.length}), got {args.pad}"
            )
        panels = fresh_score_panels(args.length, args.pad, seed=args.seed)
        title = f"freshly initialised attentions, one random input (seed {args.seed})"
    plot_scores(panels, args.out, title=title, dpi=args.dpi)
    print(f"{len(panels)} chart{'' if len(panels) == 1 else 's'} written to {args.out}")
    return 0
