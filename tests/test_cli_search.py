"""The ``luong`` command's search and plot forms: ``translate`` with beam search, n-best
lists and jsonl, ``plot`` and ``plot-scores``, and their one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import TINY_DATES_FLAGS, luong, output_lines
from matplotlib.image import imread

LINES = ["Monday, March 5, 1979", "", "3 May 1979", "   ", "12.10.21"]


def usage_error(result: subprocess.CompletedProcess[bytes], needle: str) -> None:
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "Traceback" not in err
    assert f"luong: error: {needle}" in err, err


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli_search") / "dates"
    result = luong("train", "dates", "--out", str(out), *TINY_DATES_FLAGS)
    assert result.returncode == 0, result.stderr.decode()
    return out


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli_search_input") / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def test_translate_beam_one_is_the_default_greedy(model_dir: Path, sources: Path) -> None:
    greedy = output_lines(luong("translate", str(model_dir), "--input", str(sources)))
    beam_one = output_lines(
        luong("translate", str(model_dir), "--input", str(sources), "--beam", "1")
    )
    assert beam_one == greedy and len(greedy) == len(LINES)


def test_translate_nbest_is_tab_separated(model_dir: Path, sources: Path) -> None:
    args = ["--beam", "5", "--nbest", "3", "--alpha", "0.6", "--beta", "0.2"]
    lines = output_lines(luong("translate", str(model_dir), "--input", str(sources), *args))
    assert len(lines) == len(LINES)  # N lines in, N lines out
    for source, line in zip(LINES, lines, strict=True):
        if not source.strip():
            assert line == ""
        else:
            # three distinct hypotheses; their texts may coincide when a barely trained
            # model emits PAD or BOS, which the text leaves out
            assert len(line.split("\t")) == 3
    best = output_lines(
        luong("translate", str(model_dir), "--input", str(sources), *args[:2], *args[4:])
    )
    assert best == [line.split("\t")[0] for line in lines]


def test_translate_jsonl_gives_hypotheses_with_attention(model_dir: Path, sources: Path) -> None:
    result = luong(
        "translate", str(model_dir), "--input", str(sources), "--beam", "4", "--nbest", "2",
        "--format", "jsonl", "--replace-unk",
    )  # fmt: skip
    lines = output_lines(result)
    assert len(lines) == len(LINES)
    for source, line in zip(LINES, lines, strict=True):
        entry = json.loads(line)
        assert set(entry) == {"source", "hypotheses"}
        assert entry["source"] == source
        if not source.strip():
            assert entry["hypotheses"] == []
            continue
        hyps = entry["hypotheses"]
        assert len(hyps) == 2
        assert hyps[0]["score"] >= hyps[1]["score"]
        for hyp in hyps:
            assert set(hyp) == {"text", "score", "confidence", "tokens", "attention"}
            tokens, attention = hyp["tokens"], hyp["attention"]
            assert len(attention) == len(tokens)
            if tokens[-1] == "</s>":
                assert "".join(tokens[:-1]) == hyp["text"]
            for row in attention:
                assert len(row) == len(source) + 1  # the characters and the source's EOS
                assert sum(row) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--beam", "0"], "--beam: expected an int >= 1, got 0"),
        (["--beam", "2", "--nbest", "3"], "--nbest: expected at most beam = 2, got 3"),
        (["--alpha", "-1"], "--alpha: expected a finite number >= 0, got -1.0"),
        (["--beta", "nan"], "--beta: expected a finite number >= 0, got nan"),
    ],
)
def test_translate_bad_search_options(
    model_dir: Path, sources: Path, args: list[str], message: str
) -> None:
    usage_error(luong("translate", str(model_dir), "--input", str(sources), *args), message)


def test_translate_unknown_format_is_a_usage_error(model_dir: Path) -> None:
    result = luong("translate", str(model_dir), "--format", "xml", stdin=b"3 May 1979\n")
    assert result.returncode == 2
    assert "invalid choice: 'xml'" in result.stderr.decode()


def test_plot_writes_a_heatmap(model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "attn.png"
    result = luong(
        "plot", str(model_dir), "Monday, March 5, 1979", "--out", str(out), "--beam", "3"
    )
    assert result.returncode == 0, result.stderr.decode()
    assert "Monday, March 5, 1979 -> " in result.stdout.decode()
    image = imread(out)
    assert image.shape[0] > 100 and image.shape[1] > 300
    usage_error(
        luong("plot", str(model_dir), "x", "--out", str(out), "--beam", "0"),
        "--beam: expected an int >= 1, got 0",
    )
    usage_error(luong("plot", str(model_dir), " ", "--out", str(out)), "text: expected")


def test_plot_scores_fresh_and_trained(model_dir: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.png"
    result = luong("plot-scores", "--out", str(fresh), "--dpi", "50")
    assert result.returncode == 0, result.stderr.decode()
    assert "3 charts" in result.stdout.decode()
    assert imread(fresh).shape[:2] == (175, 675)  # 13.5 x 3.5 inches at 50 dpi
    trained = tmp_path / "trained.png"
    result = luong(
        "plot-scores", str(model_dir), str(model_dir), "--out", str(trained), "--step", "2"
    )
    assert result.returncode == 0, result.stderr.decode()
    assert "2 charts" in result.stdout.decode()
    assert imread(trained).shape[1] > imread(trained).shape[0]
    usage_error(
        luong("plot-scores", "--out", str(fresh), "--pad", "8"),
        "--pad: expected 0 <= --pad < --length (8), got 8",
    )
    missing = luong("plot-scores", str(tmp_path / "none"), "--out", str(fresh))
    assert missing.returncode == 1
    assert "no such model folder" in missing.stderr.decode()
