"""``luong plot`` (the attention of one translation) and ``luong plot-scores`` (dot, general
and concat side by side)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from luong.cli.common import UsageError, add_device_flags, add_search_flags, search_options
from luong.devices import resolve_device
from luong.model import Seq2Seq
from luong.plot import (
    MAX_DPI,
    MAX_POSITIONS,
    fresh_score_panels,
    model_score_panel,
    plot_scores,
    plot_translation,
)
from luong.search import hypothesis_text

__all__ = ["add_parsers", "main_plot", "main_scores"]


def add_parsers(commands: Any) -> None:
    plot = commands.add_parser(
        "plot",
        help="heatmap of the attention of one translation",
        description="Decode one input and draw its attention matrix: source symbols across, "
        "output symbols down, a colour bar (PNG, no display needed).",
    )
    plot.add_argument("model", type=Path, help="a model folder")
    plot.add_argument("text", help='the input, e.g. "Monday, March 5, 1979"')
    plot.add_argument("--out", type=Path, required=True, help="the PNG to write")
    add_search_flags(plot, exclude=("nbest",))  # one output is drawn: the best
    plot.add_argument(
        "--dpi", type=int, default=100, help=f"pixels per inch, at most {MAX_DPI} (default 100)"
    )
    add_device_flags(plot)
    plot.set_defaults(handler=main_plot)

    scores = commands.add_parser(
        "plot-scores",
        help="dot, general and concat attention weights side by side",
        description="Bar charts of attention weights over the source positions, one per "
        "score, padded positions shaded. Without DIR: freshly initialised dot, general and "
        "concat attentions on one random input (keys and query from --seed). With DIR...: "
        "one trained model per chart (e.g. one trained with each --attention), their "
        "attention at output step --step of their greedy output for --text.",
    )
    scores.add_argument("models", nargs="*", type=Path, metavar="DIR", help="model folders")
    scores.add_argument("--out", type=Path, required=True, help="the PNG to write")
    scores.add_argument(
        "--text",
        default="Monday, March 5, 1979",
        help='trained models: the input (default "Monday, March 5, 1979")',
    )
    scores.add_argument(
        "--step", type=int, default=0, help="trained models: the output step (default 0)"
    )
    scores.add_argument(
        "--pad", type=int, default=2, help="padded positions after the input (default 2)"
    )
    scores.add_argument(
        "--length",
        type=int,
        default=8,
        help=f"fresh: positions, padding included, at most {MAX_POSITIONS} (default 8)",
    )
    scores.add_argument("--seed", type=int, default=0, help="fresh: the seed (default 0)")
    scores.add_argument(
        "--dpi", type=int, default=100, help=f"pixels per inch, at most {MAX_DPI} (default 100)"
    )
    add_device_flags(scores)
    scores.set_defaults(handler=main_scores)


def _check_dpi(args: argparse.Namespace) -> None:
    if not 1 <= args.dpi <= MAX_DPI:
        raise UsageError(f"--dpi: expected between 1 and {MAX_DPI}, got {args.dpi}")


def main_plot(args: argparse.Namespace) -> int:
    options = search_options(args)
    _check_dpi(args)
    if not args.text.strip():
        raise UsageError("text: expected a non-empty input")
    device = resolve_device(args.device, "--device")
    model = Seq2Seq.from_pretrained(args.model, device)
    best = plot_translation(model, args.text, args.out, options, dpi=args.dpi)
    output = hypothesis_text(model, best, args.text if options.replace_unk else None)
    print(f"{args.text} -> {output}; attention written to {args.out}")
    return 0


def main_scores(args: argparse.Namespace) -> int:
    for name in ("step", "pad"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name}: expected >= 0, got {getattr(args, name)}")
    _check_dpi(args)
    device = resolve_device(args.device, "--device")
    if args.models:
        if not args.text.strip():
            raise UsageError("--text: expected a non-empty input")
        panels = []
        for folder in args.models:
            model = Seq2Seq.from_pretrained(folder, device)
            name = f"{model.config.attention} ({folder.name})"
            panels.append(model_score_panel(model, args.text, args.step, args.pad, name))
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
