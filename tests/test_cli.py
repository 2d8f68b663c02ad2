"""The ``luong`` command: each command, and each error as one line (in this process, and the
usage errors, which import no torch, through ``python -m luong`` too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import TINY_DATES_FLAGS, assert_one_line_error, luong, luong_process


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "dates"
    config = out.parent / "small.toml"
    config.write_text('[model]\ncell = "lstm"\n\n[train]\nbatch_size = 32\nlr = 0.005\n')
    result = luong("train", "dates", "--out", str(out), "--config", str(config), *TINY_DATES_FLAGS)
    assert result.returncode == 0, result.stderr.decode()
    assert "test exact match" in result.stdout.decode()
    return out


def test_train_writes_the_run_folder(model_dir: Path) -> None:
    for name in ("model.safetensors", "config.json", "src_vocab.json", "tgt_vocab.json"):
        assert (model_dir / name).is_file()
    metrics = json.loads((model_dir / "metrics.json").read_text())
    for key in ("test_exact_match", "dev_exact_match", "train_seconds", "steps", "dev_curve"):
        assert key in metrics
    assert metrics["test_pairs"] == 60
    assert metrics["steps"] == 400 // 32 + 1
    # Flags and the TOML file both reached the config; flags win over the file.
    config = json.loads((model_dir / "config.json").read_text())["model"]
    assert config["cell"] == "lstm"
    assert config["emb_dim"] == 8
    assert metrics["train_config"]["batch_size"] == 32


def test_eval_prints_json(model_dir: Path) -> None:
    result = luong("eval", str(model_dir), "--task", "dates", "--n", "30", "--json")
    assert result.returncode == 0, result.stderr.decode()
    scores = json.loads(result.stdout)
    assert scores["pairs"] == 30
    assert 0.0 <= scores["exact_match"] <= 1.0
    assert 0.0 <= scores["char_accuracy"] <= 1.0
    text = luong("eval", str(model_dir), "--task", "dates", "--n", "30")
    assert text.stdout.decode().startswith("exact match ")
    beam = luong("eval", str(model_dir), "--task", "dates", "--n", "30", "--beam", "3", "--json")
    assert beam.returncode == 0, beam.stderr.decode()
    assert 0.0 <= json.loads(beam.stdout)["exact_match"] <= 1.0


def test_eval_of_a_run_folder_reads_its_task(model_dir: Path, tmp_path: Path) -> None:
    """``luong eval RUN`` scores the run's own task (its config.toml) without --task; a
    folder that says no built-in task is a usage error under eval's own usage line."""
    named = luong("eval", str(model_dir), "--task", "dates", "--n", "30", "--json")
    recorded = luong("eval", str(model_dir), "--n", "30", "--json")
    assert recorded.returncode == 0, recorded.stderr.decode()
    assert json.loads(recorded.stdout) == json.loads(named.stdout)
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("model.safetensors", "config.json", "src_vocab.json", "tgt_vocab.json"):
        (bare / name).write_bytes((model_dir / name).read_bytes())
    result = luong("eval", str(bare))
    assert result.returncode == 2
    assert_one_line_error(
        result,
        "expected --task TASK, --data FILE.tsv or --data-src/--data-tgt, got neither "
        f"(and {bare} has no config.toml to read its task from)",
    )
    assert result.stderr.decode().startswith("usage: luong eval ")  # eval's usage, not luong's


def test_translate_keeps_every_line_in_order(model_dir: Path, tmp_path: Path) -> None:
    lines = ["3 May 1979", "", "Monday, March 5, 1979", "   ", "12.10.21"]
    result = luong("translate", str(model_dir), stdin="\n".join(lines).encode())
    assert result.returncode == 0, result.stderr.decode()
    outputs = result.stdout.decode().split("\n")
    assert outputs[-1] == ""  # every output line ends with a newline
    outputs = outputs[:-1]
    assert len(outputs) == len(lines)
    assert outputs[1] == "" and outputs[3] == ""
    # The same sources from a file with Windows line endings give the same outputs.
    path = tmp_path / "in.txt"
    path.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    from_file = luong("translate", str(model_dir), "--input", str(path))
    assert from_file.stdout.decode().split("\n")[:-1] == outputs
    # "--input -" reads stdin, as in most tools (it was a file named "-" that is not there).
    dash = luong("translate", str(model_dir), "--input", "-", stdin="\n".join(lines).encode())
    assert dash.returncode == 0, dash.stderr.decode()
    assert dash.stdout.decode().split("\n")[:-1] == outputs


def test_unknown_task_is_a_usage_error() -> None:
    result = luong_process("train", "poems", "--out", "x")
    assert result.returncode == 2
    assert "invalid choice: 'poems'" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()


def test_unknown_option_is_a_usage_error() -> None:
    result = luong_process("train", "dates", "--out", "x", "--attention", "magic")
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "invalid choice: 'magic'" in err and "bahdanau" in err


def test_unknown_config_key_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[model]\nhidden_size = 3\n")
    result = luong("train", "dates", "--out", str(tmp_path / "run"), "--config", str(config))
    assert_one_line_error(result, f"{config}: unknown key 'hidden_size' in [model]")


def test_missing_model_folder(tmp_path: Path) -> None:
    result = luong("translate", str(tmp_path / "nothing"), stdin=b"3 May 1979\n")
    assert_one_line_error(result, "no such model folder")


def test_broken_model_folder(model_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for path in model_dir.iterdir():
        if path.is_file():
            (broken / path.name).write_bytes(path.read_bytes())
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    result = luong("translate", str(broken), stdin=b"3 May 1979\n")
    assert_one_line_error(result, "model.safetensors", "not a readable safetensors file")
    (broken / "config.json").unlink()
    result = luong("eval", str(broken), "--task", "dates", "--n", "5")
    assert_one_line_error(result, "config.json: missing")


def test_unreadable_input(model_dir: Path, tmp_path: Path) -> None:
    result = luong("translate", str(model_dir), "--input", str(tmp_path / "absent.txt"))
    assert_one_line_error(result, "absent.txt: no such file")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"3 May 1979\n\xff\xfe oops\n")
    result = luong("translate", str(model_dir), "--input", str(bad))
    assert_one_line_error(result, "bad.txt:2: not valid UTF-8")


@pytest.mark.parametrize("stream", [False, True])
def test_a_nul_byte_in_the_sources_is_refused_naming_its_line(
    model_dir: Path, tmp_path: Path, stream: bool
) -> None:
    """A NUL byte is a binary file's: it was translated as text (``Open\\x00file`` ->
    ``Binär-Datei``, exit 0)."""
    binary = tmp_path / "nul.txt"
    binary.write_bytes(b"3 May 1979\nOpen\x00file\n")
    flags = ["--stream"] if stream else []
    message = f"{binary}:2: a NUL byte (byte 5 of the line); expected text, not binary data"
    result = luong("translate", str(model_dir), "--input", str(binary), *flags)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[-1] == f"luong: error: {message}"
    result = luong("translate", str(model_dir), *flags, stdin=b"Open\x00file\n")
    assert_one_line_error(result, "luong: error: <stdin>:1: a NUL byte (byte 5 of the line)")
