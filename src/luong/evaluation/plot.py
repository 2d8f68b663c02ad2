"""Figures: attention heatmaps, side-by-side attention scores and training curves
(matplotlib, Agg).

Shapes: ``S`` source length, ``T`` output length, ``d`` query width.

Every function draws on its own ``matplotlib.figure.Figure`` with an Agg canvas: no display,
no pyplot, no global state. The PNG has exactly ``size`` inches x ``dpi`` pixels.

Figures are bounded before anything is drawn, since Agg allocates the whole canvas: ``dpi`` at
most ``MAX_DPI`` (1200, print quality), at most ``MAX_PIXELS`` (50 million, 200 MB of RGBA:
a 30 x 30 inch heatmap at 235 dpi), at most ``MAX_POSITIONS`` bars a chart (1000), and an
input no longer than the model's ``max_src_len``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.common.lines import LINE_BREAKS
from luong.config.faces import MAX_DPI, MAX_POSITIONS
from luong.config.request import RequestOptions
from luong.config.search import MAX_SEED, SearchOptions, check_seed
from luong.config.translation_request import TranslationRequest
from luong.data.batching import encode_sources
from luong.data.vocab import Vocab
from luong.model.attention import SCORES, LuongAttention, length_mask
from luong.model.seq2seq import Seq2Seq, evaluating
from luong.search import (
    default_max_len,
    greedy_steps,
    hypothesis_symbols,
    source_symbols,
)
from luong.translation.translations import Translation
from luong.translation.translator import Translator

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MAX_DPI",
    "MAX_PIXELS",
    "MAX_POSITIONS",
    "ScorePanel",
    "check_figure_path",
    "fresh_score_panels",
    "model_score_panel",
    "CurveRun",
    "DEV_NAMES",
    "curves_figure",
    "plot_attention",
    "plot_curves",
    "plot_scores",
    "plot_translation",
]

SHADE = "0.85"  # the grey behind padded positions

MAX_PIXELS = 50_000_000
"""The most pixels a figure may have (width x height)."""


def _label(symbol: str) -> str:
    """A tick label: visible whitespace."""
    return {" ": "\u2423", "\t": "\\t", "": "\u2205"}.get(symbol, symbol)


def _figure(size: tuple[float, float], dpi: int) -> Figure:
    # matplotlib is imported when a figure is drawn: it takes longer to import than the
    # commands that draw nothing (translate, eval) take to start.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def check_figure_path(path: object) -> Path:
    """``path`` as a ``Path``, refused unless it names a file whose suffix is a format
    matplotlib writes (``.png``, ``.pdf``, ``.svg``, ...): the figure's format is its name's,
    and a name without one would be written as NAME.png, another file than the one named.

    Raises:
        TypeError: not a str or a path.
        ValueError: a folder, a name without a suffix or with one of no figure format.
    """
    if not isinstance(path, str | Path):
        raise LuongTypeError(f"path: expected a file name, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        raise LuongError(f"{path}: expected a file to write the figure to, got a folder")
    from matplotlib.backend_bases import FigureCanvasBase  # as _figure: when one is drawn

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        got = f"'.{suffix}'" if suffix else "no suffix"
        raise LuongError(
            f"{path}: expected a name ending in the figure's format "
            f"({', '.join('.' + f for f in formats)}), got {got}"
        )
    return path


def _check_size(size: tuple[float, float] | None, dpi: int) -> None:
    if size is not None and (len(size) != 2 or not all(v > 0 for v in size)):
        raise LuongError(f"size: expected (width, height) in inches, both > 0, got {size!r}")
    check_positive_int("dpi", dpi)
    if dpi > MAX_DPI:
        raise LuongError(f"dpi: expected at most {MAX_DPI}, got {dpi}")


def _check_pixels(size: tuple[float, float], dpi: int) -> None:
    """Refuse a canvas above ``MAX_PIXELS`` before Agg allocates it."""
    width, height = round(size[0] * dpi), round(size[1] * dpi)
    if width * height > MAX_PIXELS:
        most = int((MAX_PIXELS / (size[0] * size[1])) ** 0.5)
        raise LuongError(
            f"dpi: {dpi} gives a {width} x {height} pixel figure, above the limit of "
            f"{MAX_PIXELS} pixels; at most {most} dpi for this figure"
        )


def _check_text(translator: Translator, text: str) -> None:
    """Raise unless ``translator`` takes ``text`` (``Translator.admit``), one line."""
    if not isinstance(text, str):
        raise LuongError(f"text: expected a non-empty input, got {text!r}")
    if LINE_BREAKS.intersection(text):  # one figure draws one line's translation
        raise LuongError("text: expected one line of text, got a line break, tab or NUL in it")
    (verdict,) = translator.admit([text])
    if verdict is not None and verdict.kind == "empty":
        raise LuongError(f"text: expected a non-empty input, got {text!r}")
    if verdict is not None:
        raise LuongError(f"text: {verdict.detail}")


def plot_attention(
    source_symbols: Sequence[str],
    output_symbols: Sequence[str],
    attention: Tensor,
    path: str | Path,
    title: str | None = None,
    *,
    size: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Path:
    """A heatmap of an attention matrix: output symbols down, source symbols across, a colour
    bar for the weights (0 to 1).

    Args:
        source_symbols: the columns' labels ``[S]`` (``luong.search.source_symbols``).
        output_symbols: the rows' labels ``[T]`` (``luong.search.hypothesis_symbols``).
        attention: the weights ``[T, S]`` (``Hypothesis.attention``).
        path: the PNG to write (its folder must exist).
        title: a title above the map.
        size: (width, height) in inches; by default it grows with S and T.
        dpi: pixels per inch.

    Returns:
        ``path``.

    Raises:
        ValueError: ``attention`` is not ``[len(output_symbols), len(source_symbols)]``, or a
            bad size or dpi; a ``path`` of no figure format (``check_figure_path``).
        OSError: the file cannot be written.
    """
    path = check_figure_path(path)
    rows, columns = len(output_symbols), len(source_symbols)
    if not isinstance(attention, Tensor) or tuple(attention.shape) != (rows, columns):
        got = tuple(attention.shape) if isinstance(attention, Tensor) else type(attention).__name__
        raise LuongError(
            f"attention: expected shape [T, S] = ({rows}, {columns}) (output x source "
            f"symbols), got {got}"
        )
    _check_size(size, dpi)
    if size is None:
        size = (min(max(2.5 + 0.3 * columns, 4.0), 30.0), min(max(1.5 + 0.3 * rows, 3.0), 30.0))
    _check_pixels(size, dpi)
    figure = _figure(size, dpi)
    axes = figure.add_subplot()
    image = axes.imshow(
        attention.detach().double().cpu().numpy(),
        cmap="Blues",
        vmin=0.0,
        vmax=1.0,
        aspect="auto",
        interpolation="nearest",
    )
    axes.set_xticks(range(columns), [_label(s) for s in source_symbols])
    axes.set_yticks(range(rows), [_label(s) for s in output_symbols])
    axes.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
    axes.set_xlabel("source")
    axes.xaxis.set_label_position("top")
    axes.set_ylabel("output")
    if title:
        axes.set_title(title)
    figure.colorbar(image, ax=axes, label="attention weight", shrink=0.9)
    figure.savefig(path, dpi=dpi)
    return path


def plot_translation(
    model: Seq2Seq | Translator,
    text: str,
    path: str | Path,
    options: SearchOptions | None = None,
    *,
    size: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Translation:
    """Decode ``text`` as ``options`` say (default greedy search; through
    ``Translator.translations``, in the translator's precision) and draw the best
    hypothesis' attention with ``plot_attention``, titled "source -> output" (with
    ``options.replace_unk``, each ``<unk>`` replaced by the source token it attended to).

    Returns:
        the translation: its first hypothesis is the one drawn, its first text the output.

    Raises:
        ValueError: an empty input, one longer than the model's ``max_src_len``, or a bad
            option; a ``path`` of no figure format (``check_figure_path``), before decoding.
        OSError: the file cannot be written.
    """
    check_figure_path(path)
    translator = model if isinstance(model, Translator) else Translator(model)
    _check_text(translator, text)
    request = TranslationRequest(options, RequestOptions(attention=True))
    (translation,) = translator.answer([text], request)
    best = translation.hypotheses[0]
    copy_from = text if options is not None and options.replace_unk else None
    plot_attention(
        translator.source_symbols(text),
        hypothesis_symbols(translator.model, best, copy_from),
        best.attention,
        path,
        title=f"{text}  \u2192  {translation.texts[0]}",
        size=size,
        dpi=dpi,
    )
    return translation


@dataclass(frozen=True)
class ScorePanel:
    """One bar chart of ``plot_scores``: a name (the score), the position labels ``[S]``, the
    weights ``[S]`` and how many positions are real (the rest are padding)."""

    name: str
    symbols: list[str]
    weights: Tensor
    real: int


def plot_scores(
    panels: Sequence[ScorePanel],
    path: str | Path,
    title: str | None = None,
    *,
    size: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Path:
    """Attention weights of several scores for one input, side by side, as bar charts;
    padded positions shaded grey (they should get weight 0).

    Args:
        panels: one ``ScorePanel`` per chart, left to right.
        path: the PNG to write.
        title: a title above the charts.
        size: (width, height) in inches; by default 4.5 inches per chart by 3.5.
        dpi: pixels per inch.

    Returns:
        ``path``.

    Raises:
        ValueError: no panels, a panel whose weights, labels and real count disagree, or a
            bad size or dpi; a ``path`` of no figure format (``check_figure_path``).
        OSError: the file cannot be written.
    """
    path = check_figure_path(path)
    if not panels:
        raise LuongError("panels: expected at least one ScorePanel, got none")
    for i, panel in enumerate(panels):
        positions = len(panel.symbols)
        if panel.weights.dim() != 1 or panel.weights.shape[0] != positions:
            raise LuongError(
                f"panels[{i}] ({panel.name}): expected weights [S] = ({positions},), "
                f"got {tuple(panel.weights.shape)}"
            )
        if not 0 < panel.real <= positions:
            raise LuongError(
                f"panels[{i}] ({panel.name}): expected real in [1, {positions}], got {panel.real}"
            )
        if positions > MAX_POSITIONS:
            raise LuongError(
                f"panels[{i}] ({panel.name}): {positions} positions, above the limit of "
                f"{MAX_POSITIONS} bars a chart"
            )
    _check_size(size, dpi)
    if size is None:
        widest = max(len(p.symbols) for p in panels)
        size = (min(max(4.5, 1.5 + 0.28 * widest) * len(panels), 40.0), 3.5)
    _check_pixels(size, dpi)
    figure = _figure(size, dpi)
    top = max(float(p.weights.max()) for p in panels)
    grid = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for axes, panel in zip(grid, panels, strict=True):
        positions = len(panel.symbols)
        if panel.real < positions:
            axes.axvspan(panel.real - 0.5, positions - 0.5, color=SHADE, label="padding")
        weights = panel.weights.detach().double().cpu().numpy()
        axes.bar(range(positions), weights, color="tab:blue", width=0.8)
        long_labels = any(len(s) > 2 for s in panel.symbols)
        axes.set_xticks(
            range(positions),
            [_label(s) for s in panel.symbols],
            rotation=90 if long_labels else 0,
        )
        axes.set_xlim(-0.5, positions - 0.5)
        axes.set_ylim(0.0, max(top * 1.1, 1e-3))
        axes.set_title(panel.name)
        axes.set_xlabel("source position")
        if panel.real < positions:
            axes.legend(loc="upper right", fontsize="small")
    grid[0].set_ylabel("attention weight")
    if title:
        figure.suptitle(title)
    figure.savefig(path, dpi=dpi)
    return path


# The dev figures' names on a curve's axis and legend (log.jsonl's keys).
DEV_NAMES = {
    "dev_exact_match": "exact match",
    "dev_char_accuracy": "character accuracy",
    "dev_bleu": "BLEU",
    "dev_chrf": "chrF",
    "dev_loss": "loss",
}


@dataclass(frozen=True)
class CurveRun:
    """One run's curves: its label and its ``log.jsonl`` records (``kind`` "train" with
    ``loss``, "eval" with ``dev_key``), each with ``step`` and ``seconds``."""

    label: str
    records: Sequence[dict[str, Any]]
    dev_key: str = "dev_exact_match"


def plot_curves(
    runs: Sequence[CurveRun],
    path: str | Path,
    *,
    size: tuple[float, float] = (10.0, 7.0),
    dpi: int = 100,
) -> Path:
    """``curves_figure`` written to ``path``.

    Returns:
        ``path``, a PNG of ``size`` x ``dpi`` pixels.

    Raises:
        ValueError: no runs, a run without records or with an unknown ``dev_key``, or a bad
            size or dpi; a ``path`` of no figure format (``check_figure_path``).
        OSError: the file cannot be written.
    """
    path = check_figure_path(path)
    figure = curves_figure(runs, size=size, dpi=dpi)
    figure.savefig(path, dpi=dpi)
    return path


def curves_figure(
    runs: Sequence[CurveRun], *, size: tuple[float, float] = (10.0, 7.0), dpi: int = 100
) -> Figure:
    """Training loss (top) and the dev figure (bottom) against steps (left) and seconds
    (right), the runs overlaid, one colour and a legend entry each; the dev axis named by
    the runs' metrics (``DEV_NAMES``: "dev BLEU"), and where they differ each legend entry
    by its own ("runs/fr (BLEU)").

    Raises:
        ValueError: no runs, a run without records or with an unknown ``dev_key``, or a bad
            size or dpi.
    """
    if not runs:
        raise LuongError("runs: expected at least one run, got none")
    for run in runs:
        if not run.records:
            raise LuongError(f"{run.label}: no log.jsonl records to draw")
        if run.dev_key not in DEV_NAMES:
            raise LuongError(
                f"{run.label}: dev_key: expected one of {', '.join(DEV_NAMES)}, got {run.dev_key!r}"
            )
    _check_size(size, dpi)
    dev_names = list(dict.fromkeys(DEV_NAMES[run.dev_key] for run in runs))
    figure = _figure(size, dpi)
    grid = figure.subplots(2, 2, sharey="row")
    for colour, run in enumerate(runs):
        train = [r for r in run.records if r.get("kind") == "train" and r.get("loss") is not None]
        evals = [r for r in run.records if r.get("kind") == "eval" and run.dev_key in r]
        if not train:  # fewer steps than log_every: the evaluations' mean training loss
            train = [{**r, "loss": r["train_loss"]} for r in evals if "train_loss" in r]
        for column, clock in enumerate(("step", "seconds")):
            # runs of several metrics share the axis: each legend entry names its own
            label = run.label if len(dev_names) == 1 else f"{run.label} ({DEV_NAMES[run.dev_key]})"
            style = {"color": f"C{colour % 10}", "label": label}
            grid[0][column].plot([r[clock] for r in train], [r["loss"] for r in train], **style)
            grid[1][column].plot(
                [r[clock] for r in evals], [r[run.dev_key] for r in evals], marker=".", **style
            )
    for column, clock in enumerate(("steps", "seconds")):
        grid[1][column].set_xlabel(clock)
    grid[0][0].set_ylabel("training loss")
    grid[1][0].set_ylabel(f"dev {' / '.join(dev_names)}")
    grid[0][0].legend(loc="upper right", fontsize="small")
    return figure


def fresh_score_panels(
    length: int = 8, pad: int = 2, d: int = 16, seed: int = 0
) -> list[ScorePanel]:
    """Freshly initialised dot, general and concat attentions on one random input: keys
    ``[1, S, d]`` and a query ``[1, d]`` drawn from ``seed``, the last ``pad`` of the
    ``length`` positions padded.

    Raises:
        ValueError: ``length`` outside ``[1, MAX_POSITIONS]``, ``pad`` outside
            ``[0, length)``, ``d < 1``, ``seed`` not an int from 0 to ``MAX_SEED`` (64 bits).
    """
    check_seed("seed", seed)
    if length < 1 or not 0 <= pad < length or d < 1:
        raise LuongError(
            f"expected length >= 1, 0 <= pad < length and d >= 1, got length={length}, "
            f"pad={pad}, d={d}"
        )
    if length > MAX_POSITIONS:
        raise LuongError(f"length: expected at most {MAX_POSITIONS} positions, got {length}")
    generator = torch.Generator().manual_seed(seed)
    keys = torch.randn(1, length, d, generator=generator)
    query = torch.randn(1, d, generator=generator)
    keys[:, length - pad :] = 0.0  # what an encoder leaves at padding
    mask = length_mask(torch.tensor([length - pad]), length)
    symbols = [str(s + 1) for s in range(length)]
    panels = []
    for i, score in enumerate(SCORES):
        rng = (seed + i) % (MAX_SEED + 1)  # each score its own draw, within 64 bits
        attention = LuongAttention(d, score, rng=rng)  # type: ignore[arg-type]
        with torch.no_grad():
            _, weights = attention(query, keys, mask)
        panels.append(ScorePanel(score, symbols, weights[0], length - pad))
    return panels


def model_score_panel(
    model: Seq2Seq | Translator,
    text: str,
    step: int = 0,
    pad: int = 0,
    name: str | None = None,
) -> ScorePanel:
    """The attention of a trained model at output step ``step`` of its greedy output for
    ``text``, over the source symbols and ``pad`` padded positions after them.

    Args:
        model: the model, or a ``Translator`` of one (its precision is used).
        text: the input.
        step: the output step (0: the first output token); past the output's end, its last.
        pad: padded positions appended to the source, as in a batch with longer sentences.
        name: the chart's title; default the model's attention score.

    Raises:
        ValueError: empty ``text`` or one longer than the model's ``max_src_len``, negative
            ``step`` or ``pad``, more than ``MAX_POSITIONS`` positions.
    """
    translator = model if isinstance(model, Translator) else Translator(model)
    model = translator.members[0]
    if not text.strip():
        raise LuongError("text: expected a non-empty input, got only whitespace")
    if step < 0 or pad < 0:
        raise LuongError(f"step and pad: expected >= 0, got step={step}, pad={pad}")
    _check_text(translator, text)
    positions = len(model.src_vocab.tokenize(text)) + 1 + pad
    if positions > MAX_POSITIONS:
        raise LuongError(
            f"pad: {positions} positions with the input, above the limit of {MAX_POSITIONS}"
        )
    with evaluating(model), translator.computing():
        src, lengths = encode_sources(model.src_vocab, [text], model.device)
        src = torch.cat([src, src.new_zeros(1, pad)], dim=1)  # pad id 0
        with torch.inference_mode():
            memory, state = model.encode(src, lengths)
            tokens, _, weights = greedy_steps(model, memory, state, default_max_len(lengths))
    ids = tokens[0].tolist()
    end = ids.index(Vocab.eos_id) + 1 if Vocab.eos_id in ids else len(ids)
    row = weights[0, min(step, end - 1)].clone()
    symbols = source_symbols(model, text) + ["<pad>"] * pad
    return ScorePanel(name or model.config.attention, symbols, row, int(lengths[0]))
