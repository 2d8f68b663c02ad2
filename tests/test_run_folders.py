"""Runs a person can follow and repeat: config.toml round trip, log.jsonl, train.log,
TensorBoard events, and the bad input around them (issue 17)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import tomli_w
import torch
from helpers import TINY_DATES_FLAGS, TINY_MODEL_FLAGS, assert_one_line_error, luong, toy_pairs
from safetensors.torch import load_file

from luong.cli import main
from luong.config.run import read_toml_tables
from luong.evaluation.plot import CurveRun, curves_figure
from luong.training.run_folders import RunFolder, read_run
from luong.training.settings import configure

# Two epochs of 7 steps (400 pairs, batches of 64): training records every 3 steps,
# evaluations every 5 steps and at each epoch's end, a checkpoint every 4 steps.
FLAGS = [
    *[flag for flag in TINY_DATES_FLAGS if flag != "--no-progress"],
    *["--epochs", "2", "--batch-size", "64", "--log-every", "3", "--eval-every", "5"],
    *["--checkpoint-every", "4", "--keep-checkpoints", "10"],
]
CLOCK = ("seconds", "tokens_per_second")

pytestmark = pytest.mark.slow


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def without_clock(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in CLOCK} for row in rows]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run with the progress bar on (not drawn: stderr is a pipe): its folder and its
    stderr."""
    out = tmp_path_factory.mktemp("runs") / "a"
    result = luong("train", "dates", "--out", str(out), *FLAGS)
    assert result.returncode == 0, result.stderr.decode()
    return out, result.stderr.decode()


def test_a_run_repeated_from_its_config_toml_ends_with_the_same_weights(
    reference: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = reference
    again = tmp_path / "b"
    result = luong("train", "--config", str(out / "config.toml"), "--out", str(again))
    assert result.returncode == 0, result.stderr.decode()
    weights, expected = (load_file(str(d / "model.safetensors")) for d in (again, out))
    assert weights.keys() == expected.keys()
    for name in expected:
        assert torch.equal(weights[name], expected[name]), name
    assert (again / "config.toml").read_text() == (out / "config.toml").read_text()


def test_config_toml_holds_the_task_data_and_every_field(reference: tuple[Path, str]) -> None:
    out, _ = reference
    tables = read_toml_tables(out / "config.toml")
    assert tables["task"] == "dates"
    assert tables["data"] == {"seed": 0, "n_train": 400, "n_dev": 40, "n_test": 60}
    run = json.loads((out / "run.json").read_text())
    assert tables["model"] == run["model_config"]
    assert tables["train"] == run["train_config"]
    assert tables["train"]["seed"] == 0 and tables["train"]["batch_size"] == 64


def test_flags_override_the_file_and_the_file_names_the_task(reference: tuple[Path, str]) -> None:
    out, _ = reference
    config = configure(config_file=out / "config.toml", data={"seed": 3}, train={"epochs": 5})
    assert config.task == "dates"
    assert config.data == {"seed": 3, "n_train": 400, "n_dev": 40, "n_test": 60}
    assert config.train.epochs == 5 and config.train.batch_size == 64
    # Another task than the file's: the file's data options are not that task's.
    assert configure("g2p", config_file=out / "config.toml").data == {"seed": 0}


def test_log_jsonl_has_a_record_per_interval_and_per_evaluation(
    reference: tuple[Path, str],
) -> None:
    out, _ = reference
    metrics = json.loads((out / "metrics.json").read_text())
    steps, epochs = metrics["steps"], 2
    per_epoch = steps // epochs
    rows = records(out)
    train = [row for row in rows if row["kind"] == "train"]
    evals = [row for row in rows if row["kind"] == "eval"]
    assert [row["step"] for row in train] == list(range(3, steps + 1, 3))
    expected_evals = sorted({*range(5, steps + 1, 5), *range(per_epoch, steps + 1, per_epoch)})
    assert [row["step"] for row in evals] == expected_evals
    assert [{k: v for k, v in row.items() if k != "kind"} for row in evals] == metrics["dev_curve"]
    for row in train:
        assert set(row) == {"kind", "step", "epoch", "seconds", "loss", "lr", "grad_norm", *CLOCK}
        assert row["loss"] > 0 and row["grad_norm"] > 0 and row["lr"] > 0
        assert row["epoch"] == 1 + (row["step"] - 1) // per_epoch
    assert [row["step"] for row in rows] == sorted(row["step"] for row in rows)


def test_a_killed_and_resumed_run_writes_the_same_log_jsonl(
    reference: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = reference
    # The folder as a kill after the checkpoint of step 8 and a few records more left it,
    # the last record cut short.
    resumed = tmp_path / "run"
    name = "step-0000008"
    shutil.copytree(out / "checkpoints" / name, resumed / "checkpoints" / name)
    (resumed / "checkpoints" / "latest").write_text(name + "\n")
    for file in ("run.json", "config.toml", "train.log"):
        shutil.copy(out / file, resumed / file)
    lines = (out / "log.jsonl").read_text().splitlines(keepends=True)
    (resumed / "log.jsonl").write_text("".join(lines[:-2]) + lines[-2][:20])
    result = luong("train", "dates", "--out", str(resumed), *FLAGS)
    assert result.returncode == 0, result.stderr.decode()
    assert "resuming from" in result.stderr.decode()
    assert without_clock(records(resumed)) == without_clock(records(out))


def test_train_log_holds_the_messages_and_no_progress_bar(reference: tuple[Path, str]) -> None:
    out, stderr = reference
    # stderr is a pipe, no terminal: no bar (test_the_progress_bar_is_drawn_on_a_terminal_only)
    assert "\r" not in stderr
    log = (out / "train.log").read_bytes().decode()
    assert "\r" not in log
    lines = log.splitlines()
    assert any("step 5 (epoch 1): train loss" in line for line in lines), log
    shown = [line.removeprefix("luong: ") for line in stderr.split("\n") if "luong: " in line]
    assert [line.split(" ", 3)[-1] for line in lines] == [
        line.split("luong: ")[-1] for line in shown
    ]


def test_quiet_shows_no_messages_and_verbose_every_interval(tmp_path: Path) -> None:
    quiet = luong("train", "dates", "--out", str(tmp_path / "q"), *FLAGS, "--quiet")
    assert quiet.returncode == 0, quiet.stderr.decode()
    assert quiet.stderr.decode() == ""
    assert "INFO step 5 (epoch 1)" in (tmp_path / "q" / "train.log").read_text()
    verbose = luong("train", "dates", "--out", str(tmp_path / "v"), *FLAGS, "--verbose")
    assert verbose.returncode == 0, verbose.stderr.decode()
    assert "luong: step 3 (epoch 1): loss" in verbose.stderr.decode()
    assert "DEBUG step 3 (epoch 1): loss" in (tmp_path / "v" / "train.log").read_text()


def test_tensorboard_events_are_read_by_tensorboard(tmp_path: Path) -> None:
    pytest.importorskip(
        "tensorboard", reason="the extra is not installed: pip install luong[tensorboard]"
    )
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    result = luong("train", "dates", "--out", str(out), *FLAGS, "--tensorboard")
    assert result.returncode == 0, result.stderr.decode()
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    rows = records(out)
    for kind, key in (("train", "loss"), ("eval", "dev_exact_match"), ("train", "lr")):
        scalars = events.Scalars(f"{kind}/{key}")
        expected = [(row["step"], row[key]) for row in rows if row["kind"] == kind]
        assert [(s.step, pytest.approx(s.value)) for s in scalars] == expected


def test_without_the_flag_nothing_imports_tensorboard() -> None:
    import subprocess
    import sys

    code = (
        "import sys, luong, luong.cli, luong.training.trainer, luong.training.run;"
        "assert not any(m.startswith(('tensorboard', 'torch.utils.tensorboard'))"
        " for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_config_with_an_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    for text, key in (
        ('task = "dates"\n[train]\nepoch = 2\n', "'epoch' in [train]"),
        ('task = "dates"\nmodle = 1\n', "'modle'"),
    ):
        config = tmp_path / "config.toml"
        config.write_text(text)
        result = luong("train", "--config", str(config), "--out", str(tmp_path / "run"))
        assert_one_line_error(result, f"{config}: unknown key {key}")
    assert not (tmp_path / "run").exists()


def test_a_config_without_a_task_and_no_task_given_trains_dates(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[train]\nepochs = 7\n")
    assert configure(config_file=config).task == "dates"
    result = luong("train", "--out", str(tmp_path / "run"), *FLAGS[:2])
    assert_one_line_error(result, "or a --config naming the task")


# -- a config's files are read from its folder (issue 27, item 3) --------------------------


def write_pairs(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``luong ARGS`` in this process: the exit status and stderr."""
    status = main(list(args))
    return status, capsys.readouterr().err


def test_a_run_folders_config_repeats_the_run_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    # The same file names in both folders, other pairs: the data of elsewhere is a decoy.
    for folder, seed in ((project, 0), (elsewhere, 1)):
        write_pairs(folder / "data" / "tr.tsv", toy_pairs(200, seed))
        write_pairs(folder / "data" / "dev.tsv", toy_pairs(20, seed + 10))
    monkeypatch.chdir(project)
    files = ["--train", "data/tr.tsv", "--dev", "data/dev.tsv"]
    status, err = run_main(capsys, "train", *files, "--out", "runs/a", *TINY_MODEL_FLAGS)
    assert status == 0, err
    first = project / "runs" / "a"
    # config.toml names the files from its own folder; run.json as they were given.
    tables = read_toml_tables(first / "config.toml")
    assert (tables["data"]["train"], tables["data"]["dev"]) == (
        "../../data/tr.tsv",
        "../../data/dev.tsv",
    )
    assert json.loads((first / "run.json").read_text())["task_options"]["train"] == "data/tr.tsv"

    monkeypatch.chdir(elsewhere)
    config = "../project/runs/a/config.toml"
    status, err = run_main(capsys, "train", "--config", config, "--out", "../project/runs/b")
    assert status == 0, err
    again = project / "runs" / "b"
    run, repeated = (json.loads((d / "run.json").read_text()) for d in (first, again))
    assert repeated["data_sha256"] == run["data_sha256"]
    assert repeated["task_options"]["train"] == "../project/data/tr.tsv"
    assert (again / "config.toml").read_text() == (first / "config.toml").read_text()
    weights, expected = (load_file(str(d / "model.safetensors")) for d in (again, first))
    assert all(torch.equal(weights[name], expected[name]) for name in expected)
    # The run folder itself, from its config.toml: the same run (the files named another
    # way, the same contents), so the finished run is only evaluated again.
    status, err = run_main(capsys, "train", "--config", config, "--out", "../project/runs/a")
    assert status == 0, err
    assert "resuming from ../project/runs/a/checkpoints/step-0000002 (finished)" in err


def test_a_missing_file_of_a_config_names_the_key_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_pairs(tmp_path / "exp" / "tr.tsv", toy_pairs(20))
    (tmp_path / "exp" / "c.toml").write_text(
        'task = "tsv"\n[data]\ntrain = "tr.tsv"\ndev = "../dev.tsv"\n'
    )
    monkeypatch.chdir(tmp_path)
    status, err = run_main(capsys, "train", "--config", "exp/c.toml", "--out", "run")
    assert (status, err) == (
        1,
        "luong: error: dev.tsv: no such file (dev = '../dev.tsv' in [data] of exp/c.toml, "
        "whose relative paths are read from its folder)\n",
    )
    assert not (tmp_path / "run").exists()
    # A flag's file is read from the working directory, and replaces the file's.
    config = configure(config_file="exp/c.toml", data={"dev": "exp/tr.tsv"})
    assert (config.data["train"], config.data["dev"]) == ("exp/tr.tsv", "exp/tr.tsv")


def test_an_old_run_folders_config_still_reads_paths_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A run folder from before: its config.toml names the files as they were given.
    write_pairs(tmp_path / "data" / "tr.tsv", toy_pairs(20))
    old = tmp_path / "runs" / "old"
    old.mkdir(parents=True)
    (old / "run.json").write_text("{}")
    (old / "config.toml").write_text('task = "tsv"\n[data]\ntrain = "data/tr.tsv"\n')
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="luong"):
        assert configure(config_file="runs/old/config.toml").data["train"] == "data/tr.tsv"
    assert caplog.messages == [
        "warning: runs/old/config.toml: [data] train = 'data/tr.tsv' is not in runs/old; read "
        "from the working directory, as run folders written before paths were kept relative "
        "to them meant"
    ]
    # Only a run folder's config.toml: another TOML file's paths are its folder's.
    (old / "c.toml").write_text((old / "config.toml").read_text())
    with pytest.raises(FileNotFoundError, match=r"^runs/old/data/tr.tsv: no such file"):
        configure(config_file="runs/old/c.toml")


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three tiny runs under one folder: the defaults, the general score, another lr."""
    root = tmp_path_factory.mktemp("three")
    for name, flags in (("x", []), ("y", ["--attention", "general"]), ("z", ["--lr", "0.01"])):
        result = luong("train", "dates", "--out", str(root / name), *TINY_DATES_FLAGS, *flags)
        assert result.returncode == 0, result.stderr.decode()
    return root


def test_luong_runs_lists_the_runs_with_the_fields_that_differ(three_runs: Path) -> None:
    result = luong("runs", str(three_runs), "--format", "json")
    assert result.returncode == 0, result.stderr.decode()
    rows = json.loads(result.stdout)
    assert [row["run"] for row in rows] == ["x", "y", "z"]
    assert [row["model.attention"] for row in rows] == ["dot", "general", "dot"]
    assert [row["train.lr"] for row in rows] == [0.003, 0.003, 0.01]
    assert not [key for key in rows[0] if key.startswith(("data.", "vocab."))]
    assert [key for key in rows[0] if key.startswith(("model.", "train."))] == [
        "model.attention",
        "train.lr",
    ]
    for row in rows:
        metrics = json.loads((three_runs / row["run"] / "metrics.json").read_text())
        assert row["task"] == "dates" and row["finished"] is True
        assert row["dev"] == metrics["dev_exact_match"] and row["select"] == "exact"
        assert row["test_exact_match"] == metrics["test_exact_match"]
        assert row["steps"] == metrics["steps"] and row["train_seconds"] > 0
    text = luong("runs", str(three_runs))
    lines = text.stdout.decode().splitlines()
    assert text.returncode == 0 and len(lines) == 4
    assert lines[0].split()[:4] == ["run", "task", "model.attention", "train.lr"]
    assert lines[0].split()[4:7] == ["pair", "dev_em", "select"]  # the dev figure named
    assert lines[2].split()[:4] == ["y", "dates", "general", "0.003"]


def stopped_bleu_run(three_runs: Path, folder: Path) -> Path:
    """``three_runs``' run x as a translation run stopped before its end: its config says
    ``select = "bleu"`` and ``tgt_lang = "fr"``, its log holds two BLEU evaluations, and it has
    no model and no metrics.json yet (issue 53)."""
    shutil.copytree(three_runs / "x", folder)
    for name in ("metrics.json", "model.safetensors", "config.json"):
        (folder / name).unlink()
    tables = read_toml_tables(folder / "config.toml")
    tables["train"]["select"] = "bleu"
    tables["vocab"]["tgt_lang"] = "fr"
    (folder / "config.toml").write_text(tomli_w.dumps(tables))
    evals = [
        {"kind": "eval", "step": s, "seconds": s, "dev_bleu": b} for s, b in ((5, 12.5), (10, 31.0))
    ]
    (folder / "log.jsonl").write_text("".join(json.dumps(row) + "\n" for row in evals))
    return folder


def test_luong_runs_reads_a_stopped_runs_select_and_pair_from_its_config(
    three_runs: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    shutil.copytree(three_runs / "x", root / "dates")
    stopped_bleu_run(three_runs, root / "fr")
    (root / "avg").mkdir()  # a model folder, no run: left out and named
    shutil.copy(three_runs / "x" / "config.json", root / "avg" / "config.json")
    result = luong("runs", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr.decode()
    rows = {row["run"]: row for row in json.loads(result.stdout)}
    assert rows["fr"]["select"] == "bleu" and rows["fr"]["pair"] == "?-fr"
    assert rows["fr"]["dev"] == 31.0 and rows["fr"]["finished"] is False
    assert rows["dates"]["select"] == "exact" and rows["dates"]["pair"] is None
    assert result.stderr.decode() == (
        f"luong: skipped 1 folder that is no run (no run.json): {root / 'avg'}\n"
    )
    # the text table names the metric of its dev column
    text = luong("runs", str(root)).stdout.decode().splitlines()
    assert text[0].split()[2:] == [
        *("train.select", "vocab.tgt_lang", "pair", "dev_select", "select"),
        *("test_em", "test_chars", "seconds", "steps", "finished"),
    ]
    alone = luong("runs", str(root / "fr")).stdout.decode().splitlines()
    assert "dev_bleu" in alone[0].split() and alone[1].split()[:4] == ["fr", "dates", "?-fr", "31"]
    # luong curves labels its dev axis by the run's metric
    folder = read_run(root / "fr")
    assert folder.dev_key == "dev_bleu"
    assert luong("curves", str(root / "fr"), "--out", str(tmp_path / "c.png")).returncode == 0
    figure = curves_figure([CurveRun("fr", folder.records, folder.dev_key)])
    assert figure.axes[2].get_ylabel() == "dev BLEU"


def test_an_auto_select_resolves_as_the_trainer_does(tmp_path: Path) -> None:
    def select(settings: dict, records: list[dict]) -> str:
        return RunFolder(tmp_path, "tsv", settings, None, records).select

    assert select({"train.select": "auto", "vocab.subword": "unigram"}, []) == "bleu"
    assert select({"train.select": "auto", "vocab.subword": "none"}, []) == "exact"
    assert (
        select({"train.select": "auto"}, [{"kind": "eval", "step": 1, "dev_bleu": 3.0}]) == "bleu"
    )
    assert select({"train.select": "chrf"}, []) == "chrf"
    finished = RunFolder(tmp_path, "tsv", {"train.select": "auto"}, {"select": "loss"}, [])
    assert finished.select == "loss" and finished.dev_key == "dev_loss"


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def test_luong_curves_writes_a_png_of_the_expected_size(three_runs: Path, tmp_path: Path) -> None:
    runs = [str(three_runs / name) for name in "xyz"]
    result = luong("curves", *runs, "--out", str(tmp_path / "c.png"))
    assert result.returncode == 0, result.stderr.decode()
    assert png_size(tmp_path / "c.png") == (1000, 700)
    result = luong("curves", runs[0], "--out", str(tmp_path / "small.png"), "--dpi", "50")
    assert result.returncode == 0, result.stderr.decode()
    assert png_size(tmp_path / "small.png") == (500, 350)


def test_a_folder_that_is_not_a_run_is_one_line(three_runs: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    result = luong("curves", str(tmp_path), "--out", str(tmp_path / "c.png"))
    assert_one_line_error(result, f"{tmp_path}: not a luong run folder (no run.json)")
    assert not (tmp_path / "c.png").exists()
    assert_one_line_error(luong("runs", str(tmp_path)), f"{tmp_path}: no luong run folders")
    missing = tmp_path / "missing"
    assert_one_line_error(luong("runs", str(missing)), f"{missing}: no such folder")
    notes = tmp_path / "notes.txt"
    assert_one_line_error(luong("runs", str(notes)), f"{notes}: a file, not a folder of runs")
    assert_one_line_error(
        luong("curves", str(three_runs / "x"), str(missing), "--out", str(tmp_path / "c.png")),
        f"{missing}: no such folder",
    )


def test_one_bad_run_folder_is_skipped_and_named_and_the_rest_are_listed(
    three_runs: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    for name in "xyz":
        shutil.copytree(three_runs / name, root / name)
    config = root / "y" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "tgt_lang": "Deutsch"}))
    (root / "z" / "run.json").write_text("{not json")
    result = luong("runs", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr.decode()
    assert [row["run"] for row in json.loads(result.stdout)] == ["x"]
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"luong: skipped {config}: tgt_lang: expected an ISO 639")
    assert lines[1].startswith(f"luong: skipped {root / 'z' / 'run.json'}: ")
    # None readable: each named, then one error
    shutil.rmtree(root / "x")
    result = luong("runs", str(root))
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode().splitlines()[2:] == [
        f"luong: error: {root}: none of its 2 run folders could be read"
    ]


def test_the_table_fits_120_columns_and_wide_shows_every_setting(
    three_runs: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    changed = ("lr", "clip_norm", "eval_every", "log_every", "warmup_steps", "batch_size")
    for i in range(5):
        folder = root / f"run-{i}"
        shutil.copytree(three_runs / "x", folder)
        tables = read_toml_tables(folder / "config.toml")
        for key in changed:  # six settings differing between the runs
            tables["train"][key] = tables["train"][key] + i + 1
        (folder / "config.toml").write_text(tomli_w.dumps(tables))
        # your own data, given through a long path (and kept relative to the run folder)
        given = "data/" + "d" * 50 + f"/train-{i}.tsv"
        run = json.loads((folder / "run.json").read_text())
        run.update(task="tsv", task_options={"train": given})
        (folder / "run.json").write_text(json.dumps(run))
        tables.update(task="tsv", data={"train": "../../" * 4 + given})
        (folder / "config.toml").write_text(tomli_w.dumps(tables))
    result = luong("runs", str(root))
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 6 and max(map(len, lines)) <= 120
    # the path as given, its middle cut to fit: "data/ddd...ddd/train-0.tsv"
    task = lines[1].split()[1]
    assert len(task) == 30 and task.startswith("data/ddd") and task.endswith("/train-0.tsv")
    shown = lines[0].split()
    rows = json.loads(luong("runs", str(root), "--format", "json").stdout)
    differing = [key for key in rows[0] if "." in key]
    assert differing == ["data.train", *(f"train.{key}" for key in sorted(changed))]
    left_out = [key for key in differing if key not in shown]
    assert left_out and len(left_out) < len(differing)
    assert result.stderr.decode() == (
        f"luong: {len(left_out)} more setting{'s' * (len(left_out) > 1)} differ between the "
        f"runs ({', '.join(left_out)}): --wide or --format json shows "
        f"{'them' if len(left_out) > 1 else 'it'}\n"
    )
    wide = luong("runs", str(root), "--wide")
    assert wide.returncode == 0 and wide.stderr == b""
    wide_lines = wide.stdout.decode().splitlines()
    assert max(map(len, wide_lines)) > 120
    assert all(f"train.{key}" in wide_lines[0] for key in changed)
    assert wide_lines[1].split()[1] == "data/" + "d" * 50 + "/train-0.tsv"
    assert rows[0]["task"] == "data/" + "d" * 50 + "/train-0.tsv"
    assert all(f"train.{key}" in rows[0] for key in changed)


def test_a_run_killed_while_it_wrote_run_json_starts_again(tmp_path: Path) -> None:
    """SIGKILL between atomic_write's temporary file and its rename (seen once in CI, the
    random-moment kill test): the folder held only ``.run.json.PID.HEX.tmp`` and the next
    ``luong train`` refused it as a folder of the user's own files. A leftover whose writer
    is gone is no user's file: the run starts, and clears it."""
    out = tmp_path / "run"
    out.mkdir()
    leftover = out / f".run.json.999999999.{'ab' * 16}.tmp"  # no such process
    leftover.write_text("{", encoding="utf-8")
    result = luong("train", "dates", "--out", str(out), *TINY_DATES_FLAGS, "--epochs", "1")
    assert result.returncode == 0, result.stderr.decode()
    assert not leftover.exists() and json.loads((out / "run.json").read_text())["task"] == "dates"
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine", encoding="utf-8")
    result = luong("train", "dates", "--out", str(other), *TINY_DATES_FLAGS)
    assert_one_line_error(
        result,
        f"luong: error: {other}: not empty and not a luong run folder (it holds notes.txt, but "
        "no run.json); choose a new or empty folder for --out",
    )
