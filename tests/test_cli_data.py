"""``luong train --train/--dev/--test``, ``luong eval --data`` and translate on own data;
bad lines and usage errors as one line on stderr."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import TINY_MODEL_FLAGS, luong

from luong.cli import main

TINY = [*TINY_MODEL_FLAGS, "--batch-size", "16"]

TRAIN = "".join(
    f"{word}\t{pron}\n"
    for word, pron in [
        ("CAT", "K AE T"),
        ("CATS", "K AE T S"),
        ("DOG", "D AO G"),
        ("READ", "R EH D"),
        ("READ", "R IY D"),
        ("TEA", "T IY"),
        ("SEA", "S IY"),
        ("EAT", "IY T"),
    ]
    * 4
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("own")
    (folder / "train.tsv").write_bytes(TRAIN.replace("\n", "\r\n").encode())
    (folder / "dev.tsv").write_bytes(b"CAT\tK AE T\nSEA\tS IY")  # no final newline
    (folder / "test.tsv").write_bytes(b"READ\tR EH D\nREAD\tR IY D\nTEA\tT IY\nZOO\tZ UW\n")
    (folder / "bad.tsv").write_bytes(b"CAT\tK AE T\nDOG D AO G\nSEA\t\n\xff\tIY\n")
    return folder


@pytest.fixture(scope="module")
def model_dir(files: Path) -> Path:
    out = files / "run"
    result = luong(
        "train",
        "--train",
        str(files / "train.tsv"),
        "--dev",
        str(files / "dev.tsv"),
        "--test",
        str(files / "test.tsv"),
        "--tgt-tokens",
        "space",
        "--out",
        str(out),
        *TINY,
    )
    assert result.returncode == 0, result.stderr.decode()
    stdout = result.stdout.decode()
    # 3 unique test sources (READ has two references); Z of ZOO is unknown to the model
    assert "test WER" in stdout and "3 sources, 4 pairs" in stdout, stdout
    assert "1 unknown source symbols mapped to unk in 1 sources" in stdout, stdout
    return out


def test_train_on_own_data_writes_the_run_folder(model_dir: Path) -> None:
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["task"] == "tsv" and metrics["train_pairs"] == 32
    assert metrics["test_sources"] == 3 and metrics["test_pairs"] == 4
    assert 0 <= metrics["test_wer"] <= 1 and metrics["test_per"] >= 0
    assert metrics["test_unknown_tokens"] == 1 and metrics["test_sources_with_unknown"] == 1
    assert metrics["data"]["files"]["test"].endswith("test.tsv")
    vocab = json.loads((model_dir / "tgt_vocab.json").read_text())
    assert vocab["tokens"] == "space" and "AE" in vocab["symbols"]


def test_eval_on_a_file_prints_json(model_dir: Path, files: Path) -> None:
    result = luong("eval", str(model_dir), "--data", str(files / "test.tsv"), "--json")
    assert result.returncode == 0, result.stderr.decode()
    scores = json.loads(result.stdout)
    assert scores["data"] == str(files / "test.tsv")
    assert (scores["sources"], scores["pairs"], scores["unknown_tokens"]) == (3, 4, 1)
    assert scores["wer"] == pytest.approx(1 - scores["exact_match"])
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert scores["wer"] == metrics["test_wer"] and scores["per"] == metrics["test_per"]


def test_eval_with_beam_search(
    model_dir: Path, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", str(model_dir), "--data", str(files / "test.tsv"), "--json"]
    assert main([*args, "--beam", "3"]) == 0
    beam = json.loads(capsys.readouterr().out)
    assert (beam["sources"], beam["pairs"]) == (3, 4) and 0 <= beam["wer"] <= 1


def test_eval_skips_bad_lines_when_asked(
    model_dir: Path, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(model_dir), "--data", str(files / "bad.tsv")]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"luong: error: {files / 'bad.tsv'}:2: expected exactly one tab between source and "
        "target, found no tab (3 bad lines in this file; --skip-bad-lines skips them)\n"
    )
    args = ["eval", str(model_dir), "--data", str(files / "bad.tsv"), "--skip-bad-lines"]
    assert main([*args, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == f"luong: skipped 3 bad lines in {files / 'bad.tsv'}\n"
    assert json.loads(out)["pairs"] == 1


def test_translate_own_model(model_dir: Path) -> None:
    result = luong("translate", str(model_dir), stdin=b"CAT\nZOO\n\nREAD\n")
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().split("\n")
    assert len(lines) == 5 and lines[-1] == "" and lines[2] == ""


def test_bad_training_file_stops_before_training(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = files / "never"
    args = ["train", "--train", str(files / "bad.tsv"), "--dev", str(files / "dev.tsv")]
    assert main([*args, "--out", str(out), *TINY]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"luong: error: {files / 'bad.tsv'}:2: expected exactly one tab")
    assert "(3 bad lines in this file; --skip-bad-lines skips them)" in err
    assert err.count("\n") == 1 and not out.exists()
    for line, problem in ((3, "empty target"), (4, "not valid UTF-8")):
        (files / "one.tsv").write_bytes(
            b"CAT\tK AE T\n" * (line - 1) + [b"SEA\t\n", b"\xff\tIY\n"][line - 3]
        )
        assert (
            main(
                [
                    "train",
                    "--train",
                    str(files / "one.tsv"),
                    "--dev",
                    str(files / "dev.tsv"),
                    "--out",
                    str(out),
                    *TINY,
                ]
            )
            == 1
        )
        assert f"{files / 'one.tsv'}:{line}: {problem}" in capsys.readouterr().err
    # the skip is reported as the data is read, before anything else can stop the run (here
    # sources longer than --max-src-len), and a run stopped before training writes nothing
    assert main([*args, "--out", str(out), "--skip-bad-lines", "--max-src-len", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"luong: skipped 3 bad lines in {files / 'bad.tsv'}\n")
    assert "longer than the model's max_src_len=1" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--out", "x"], "expected a task (dates, g2p) or your own data"),
        (["train", "dates", "--train", "a.tsv", "--out", "x"], "expected a task (dates, g2p)"),
        (["train", "--train", "a.tsv", "--out", "x"], "--train needs --dev FILE.tsv"),
        (["train", "dates", "--src-tokens", "space", "--out", "x"], "--src-tokens: only with"),
        (
            ["train", "--train", "a", "--dev", "b", "--n-train", "5", "--out", "x"],
            "--n-train: only for the dates task",
        ),
        (["eval", "m"], "expected --task TASK, --data FILE.tsv or --data-src/--data-tgt, got"),
        (["eval", "m", "--task", "g2p", "--n", "5"], "--n, --locales: only with --task dates"),
        (
            ["eval", "m", "--task", "dates", "--skip-bad-lines"],
            "--skip-bad-lines: only with --data",
        ),
        (["eval", "m", "--data", "x.tsv", "--beam", "0"], "--beam: expected an int >= 1, got 0"),
        # prepare recorded "zz" in its manifest
        (
            ["prepare", "--train", "a.tsv", "--out", "x", "--src-lang", "zz"],
            "--src-lang: expected an ISO 639 language code that babel knows",
        ),
        (
            ["corpus", "x", "--tgt-lang", "de", "--src-lang", "de", "--out", "y"],
            "--src-lang and --tgt-lang: expected two languages, got 'de' for both",
        ),
    ],
)
def test_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: luong") and f"luong: error: {message}" in err


def test_a_translation_runs_summary_gives_bleu_and_chrf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A subword model of your own data: a translation run, scored with BLEU and chrF.
    pairs = "".join(f"open file {i}\tDatei {i} öffnen\n" for i in range(40))
    (tmp_path / "t.tsv").write_text(pairs, encoding="utf-8")
    files = [f"--{split}={tmp_path / 't.tsv'}" for split in ("train", "dev", "test")]
    subwords = ["--subword", "unigram", "--vocab-size", "290", "--joint-vocab"]
    assert main(["train", *files, *subwords, "--out", str(tmp_path / "run"), *TINY]) == 0
    test, dev, written = capsys.readouterr().out.splitlines()
    # Not "test WER 100.00% PER 95.63%": the figures of a translation run.
    assert re.fullmatch(
        r"test BLEU \d+\.\d\d  chrF \d+\.\d\d  \(greedy; BLEU nrefs:1\|.+; chrF nrefs:1\|.+\)", test
    )
    assert re.fullmatch(r"dev BLEU \d+\.\d\d \(selected on bleu\); trained 3 steps in .+", dev)
    assert written == f"model and metrics.json written to {tmp_path / 'run'}"
