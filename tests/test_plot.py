"""Tests of ``luong.evaluation.plot``: each figure is written as a PNG of the asked pixel size, not
blank, and the data behind the score charts is right (padding gets weight 0, rows sum to 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SRC_SPACE, luong, small_model
from matplotlib.image import imread

from luong.common.errors import LuongError
from luong.config.search import SearchOptions
from luong.evaluation.plot import (
    CurveRun,
    ScorePanel,
    check_figure_path,
    curves_figure,
    fresh_score_panels,
    model_score_panel,
    plot_attention,
    plot_scores,
    plot_translation,
)
from luong.translation.translator import translate


def read_png(path: Path) -> np.ndarray:
    assert path.is_file() and path.stat().st_size > 0
    image = imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    assert float(image[..., :3].std()) > 0.01  # something is drawn
    return image


def test_plot_attention_writes_a_png_of_the_asked_size(tmp_path: Path) -> None:
    attention = torch.softmax(torch.randn(4, 6, generator=torch.Generator().manual_seed(0)), -1)
    path = plot_attention(
        list("ab cd") + ["</s>"],
        ["1", "2", "-", "</s>"],
        attention,
        tmp_path / "attention.png",
        title="ab cd -> 12-",
        size=(6.0, 4.0),
        dpi=50,
    )
    assert path == tmp_path / "attention.png"
    assert read_png(path).shape[:2] == (200, 300)  # height, width: 4 x 50, 6 x 50


def test_plot_attention_grows_with_the_lengths(tmp_path: Path) -> None:
    short = read_png(plot_attention(list("ab"), ["1"], torch.ones(1, 2) / 2, tmp_path / "s.png"))
    source, output = list("abcdefghij" * 3), list("0123456789" * 2)
    attention = torch.full((len(output), len(source)), 1.0 / len(source))
    long = read_png(plot_attention(source, output, attention, tmp_path / "l.png"))
    assert long.shape[0] > short.shape[0] and long.shape[1] > short.shape[1]


def test_plot_attention_rejects_a_shape_that_does_not_fit(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"expected shape \[T, S\] = \(2, 3\).*got \(3, 2\)"):
        plot_attention(list("abc"), list("12"), torch.ones(3, 2), tmp_path / "x.png")
    with pytest.raises(ValueError, match="dpi: expected an int >= 1, got 0"):
        plot_attention(list("a"), list("1"), torch.ones(1, 1), tmp_path / "x.png", dpi=0)
    assert not (tmp_path / "x.png").exists()


def test_fresh_score_panels_mask_the_padding() -> None:
    panels = fresh_score_panels(length=8, pad=2, d=16, seed=0)
    assert [p.name for p in panels] == ["dot", "general", "concat"]
    for panel in panels:
        assert panel.real == 6 and len(panel.symbols) == 8
        assert panel.weights[6:].eq(0).all()
        assert float(panel.weights[:6].sum()) == pytest.approx(1.0, abs=1e-6)
    assert not torch.allclose(panels[0].weights, panels[2].weights)  # the scores differ
    again = fresh_score_panels(length=8, pad=2, d=16, seed=0)
    assert all(torch.equal(a.weights, b.weights) for a, b in zip(panels, again, strict=True))


def test_plot_scores_writes_the_charts_side_by_side(tmp_path: Path) -> None:
    path = plot_scores(
        fresh_score_panels(), tmp_path / "scores.png", title="fresh", size=(9.0, 3.0), dpi=40
    )
    assert read_png(path).shape[:2] == (120, 360)
    default = read_png(plot_scores(fresh_score_panels(), tmp_path / "default.png"))
    assert default.shape[1] > default.shape[0]  # wide: three charts in a row


def test_plot_scores_rejects_bad_panels(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one ScorePanel"):
        plot_scores([], tmp_path / "x.png")
    bad = ScorePanel("dot", ["1", "2"], torch.ones(3), 2)
    with pytest.raises(ValueError, match=r"panels\[0\] \(dot\): expected weights \[S\] = \(2,\)"):
        plot_scores([bad], tmp_path / "x.png")


def test_model_score_panel_reads_the_model_with_padding(tmp_path: Path) -> None:
    model = small_model(src=SRC_SPACE, attention="concat")
    panel = model_score_panel(model, "abc de", step=1, pad=3)
    assert panel.name == "concat"
    assert panel.symbols == [*"abc de", "</s>", "<pad>", "<pad>", "<pad>"]
    assert panel.real == 7
    assert panel.weights[7:].eq(0).all()
    assert float(panel.weights.sum()) == pytest.approx(1.0, abs=1e-6)
    read_png(plot_scores([panel, model_score_panel(model, "abc")], tmp_path / "m.png"))


def test_plot_translation_draws_the_best_hypothesis(tmp_path: Path) -> None:
    model = small_model(src=SRC_SPACE)
    options = SearchOptions(beam=3)
    drawn = plot_translation(model, "bad cab", tmp_path / "t.png", options, size=(5, 3))
    hyp = drawn.hypotheses[0]
    assert drawn.texts[0] == translate(model, ["bad cab"], options)[0]
    assert hyp.attention.shape == (len(hyp.tokens), len("bad cab") + 1)
    assert read_png(tmp_path / "t.png").shape[:2] == (300, 500)
    with pytest.raises(ValueError, match="text: expected a non-empty input"):
        plot_translation(model, "  ", tmp_path / "e.png")


def curve_records(key: str, values: list[float]) -> list[dict]:
    train = [{"kind": "train", "step": 5 * i, "seconds": i, "loss": 3.0 - i} for i in range(3)]
    evals = [
        {"kind": "eval", "step": 5 * i, "seconds": i, key: value} for i, value in enumerate(values)
    ]
    return train + evals


def test_curves_name_the_dev_axis_by_each_runs_metric() -> None:
    bleu = CurveRun("runs/fr", curve_records("dev_bleu", [10.0, 20.0, 25.0]), "dev_bleu")
    figure = curves_figure([bleu])
    steps, seconds = figure.axes[2], figure.axes[3]
    assert steps.get_ylabel() == "dev BLEU" and steps.get_xlabel() == "steps"
    assert [list(line.get_ydata()) for line in steps.get_lines()] == [[10.0, 20.0, 25.0]]
    assert [line.get_label() for line in seconds.get_lines()] == ["runs/fr"]
    dates = CurveRun("runs/dates", curve_records("dev_exact_match", [0.1, 0.5, 0.9]))
    chrf = CurveRun("runs/c", curve_records("dev_chrf", [30.0, 40.0, 45.0]), "dev_chrf")
    mixed = curves_figure([bleu, dates, chrf])
    assert mixed.axes[2].get_ylabel() == "dev BLEU / exact match / chrF"
    # the legend (drawn from the loss panel's lines) names each run's own metric
    assert [line.get_label() for line in mixed.axes[0].get_lines()] == [
        "runs/fr (BLEU)",
        "runs/dates (exact match)",
        "runs/c (chrF)",
    ]
    with pytest.raises(LuongError, match="runs/x: dev_key: expected one of dev_exact_match, "):
        curves_figure([CurveRun("runs/x", curve_records("dev_em", [0.5]), "dev_em")])


@pytest.mark.parametrize("name", ["fig.png", "fig.PDF", "a/b.svg"])
def test_a_figure_path_in_a_format_matplotlib_writes_is_taken(name: str) -> None:
    assert check_figure_path(name) == Path(name)


def test_a_figure_path_is_refused_where_the_file_written_would_be_another(
    tmp_path: Path,
) -> None:
    """matplotlib writes NAME.png for a name without a suffix (a folder's name, /dev/full)
    and raises its own error for an unknown one: each is refused first, naming the path."""
    with pytest.raises(LuongError, match=r"expected a file to write the figure to, got a folder"):
        check_figure_path(tmp_path)
    with pytest.raises(
        LuongError, match=r"^fig: expected a name ending in .*\.png.*got no suffix$"
    ):
        check_figure_path("fig")
    with pytest.raises(LuongError, match=r"^fig\.txt: expected .*\.svg.*, got '\.txt'$"):
        check_figure_path("fig.txt")
    with pytest.raises(TypeError, match="path: expected a file name, got int"):
        check_figure_path(3)
    panels = fresh_score_panels(4, 1)
    with pytest.raises(LuongError, match="got no suffix"):
        plot_scores(panels, tmp_path / "scores")
    assert list(tmp_path.iterdir()) == []  # nothing written, no scores.png beside it


def test_the_figure_commands_refuse_a_folder_and_a_text_file_in_one_line(tmp_path: Path) -> None:
    for out in (str(tmp_path), str(tmp_path / "s.txt")):
        result = luong("plot-scores", "--out", out)
        assert result.returncode == 1
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"luong: error: {out}: expected ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text", ["a\nb", "a\tb", "a\x00b"])
def test_plot_translation_draws_one_line_and_refuses_more(text: str, tmp_path: Path) -> None:
    with pytest.raises(LuongError, match="text: expected one line of text, got a line break"):
        plot_translation(small_model(0, SRC_SPACE), text, tmp_path / "a.png")
    assert not (tmp_path / "a.png").exists()


@pytest.mark.parametrize("seed", [-1, 2**64, 99999999999999999999999, True])
def test_fresh_panels_take_a_64_bit_seed(seed: object) -> None:
    """``luong plot-scores --seed 99999999999999999999999`` was torch's "Overflow when
    unpacking long long", a traceback; -1 was taken."""
    with pytest.raises(LuongError, match=r"^seed: expected an int from 0 to 18446744073709551615"):
        fresh_score_panels(seed=seed)  # type: ignore[arg-type]
    assert len(fresh_score_panels(seed=2**64 - 1)) == 3
