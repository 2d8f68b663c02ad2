"""What a run folder survives: stale resumes, foreign folders, two writers, signals, full
disks, broken files. One test per row of docs/robustness.md ("Runs" table).

Every CLI error is one line on stderr and a non-zero exit, no traceback.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers import TINY_DATES_FLAGS, TINY_MODEL_FLAGS, forked_python
from safetensors.torch import load_file, save_file

from luong import Seq2Seq, Seq2SeqConfig, TrainConfig, Vocab, train
from luong.cli import main
from luong.training.checkpoint import find_latest, write_checkpoint

TINY = Seq2SeqConfig(emb_dim=8, enc_hidden=8, enc_layers=1, dec_hidden=16)


def tiny_model() -> Seq2Seq:
    return Seq2Seq(TINY, Vocab(list("abcdef")), Vocab(list("0123")), seed=0)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``luong ARGS`` in this process: the exit status, stdout and stderr."""
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def one_error_line(err: str) -> str:
    """The one line on stderr, after checking it is the only one and no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def child(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a Python ``script`` with ``args`` in a child process (one thread), its output as
    text."""
    result = forked_python(textwrap.dedent(script), *args)
    out, err = (stream.decode() for stream in (result.stdout, result.stderr))
    return subprocess.CompletedProcess(result.args, result.returncode, out, err)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny trained dates model (no checkpoints: a model folder, as translate reads)."""
    out = tmp_path_factory.mktemp("runs") / "dates"
    train(
        "dates",
        out,
        model_config=TINY,
        train_config=TrainConfig(epochs=1, batch_size=32, progress=False),
        task_options={"n_train": 64, "n_dev": 8, "n_test": 0},
        log=lambda message: None,
    )
    return out


@pytest.fixture
def model_copy(model_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("checkpoints"))
    return copy


def test_checkpoints_past_step_9999999_are_kept_by_step_number(tmp_path) -> None:
    model = tiny_model()
    optimizer = torch.optim.Adam(model.parameters())
    for step in (9_999_998, 9_999_999, 10_000_000, 10_000_001):
        write_checkpoint(tmp_path, step, model, optimizer, {}, keep=2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["latest", "step-10000000", "step-10000001"]
    assert find_latest(tmp_path) == tmp_path / "step-10000001"


# -- item 12: tracebacks that were still reachable -------------------------------------------

# The child: a training run whose disk fills up after its first checkpoint (the file size
# limit stands in for a full disk; safetensors reports both the same way).
FILL_THE_DISK = """
    import resource, signal, sys
    import luong.training.state as state
    from luong.cli import main

    real = state.write_checkpoint

    def write_then_fill_the_disk(*args, **kwargs):
        folder = real(*args, **kwargs)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, hard))
        return folder

    state.write_checkpoint = write_then_fill_the_disk
    sys.exit(main(sys.argv[1:]))
"""


def test_a_full_disk_keeps_the_previous_checkpoint_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["train", "dates", "--out", str(out), *TINY_DATES_FLAGS, "--checkpoint-every", "2"]
    result = child(FILL_THE_DISK, *args)
    assert result.returncode == 1
    assert one_error_line(result.stderr) == (
        f"luong: error: {out}/checkpoints/step-0000004: checkpoint not written (File too "
        "large, writing model.safetensors); the previous checkpoint, step-0000002, is intact"
    )
    latest = find_latest(out / "checkpoints")
    assert latest == out / "checkpoints" / "step-0000002"
    Seq2Seq.from_pretrained(latest)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["latest", "step-0000002"]


def nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def overflowing_weights(folder: Path) -> None:
    """Finite weights whose output layer overflows to inf - inf = NaN."""
    tensors = load_file(str(folder / "model.safetensors"))
    out = tensors["decoder.out.weight"]
    out[:, ::2], out[:, 1::2] = 3e38, -3e38
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "luong"})


def float8_weights(folder: Path) -> None:
    tensors = load_file(str(folder / "model.safetensors"))
    tensors = {k: v.to(torch.float8_e4m3fn) for k, v in tensors.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "luong"})


def config_field(folder: Path, name: str, value: object) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["model"][name] = value
    (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize(
    ("damage", "flags", "message"),
    [
        (
            lambda m: (m / "config.json").write_text(nest(100_000)),
            [],
            "{m}/config.json: not valid JSON (nested too deep)",
        ),
        (
            lambda m: (m / "src_vocab.json").write_text(nest(100_000)),
            [],
            "{m}/src_vocab.json: not valid JSON (nested too deep)",
        ),
        (
            float8_weights,
            [],
            "{m}/model.safetensors: tensor 'bridge.hidden.bias' has dtype float8_e4m3fn, "
            "expected float32",
        ),
        (
            overflowing_weights,
            ["--beam", "3"],
            "the model's scores are NaN at output step 1: its weights overflow (finite values "
            "in model.safetensors too large to compute with)",
        ),
        (
            lambda m: config_field(m, "dropout", False),
            [],
            "{m}/config.json: not a valid model config: dropout: expected a number in [0, 1), "
            "got False",
        ),
    ],
    ids=["nested-config", "nested-vocabulary", "float8-weights", "nan-with-beam", "dropout-false"],
)
def test_broken_model_folders_are_one_line_errors(
    model_copy: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage,
    flags: list[str],
    message: str,
) -> None:
    damage(model_copy)
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(b"3 May 1979\n")))
    status, out, err = run_main(capsys, "translate", str(model_copy), *flags)
    assert (status, out) == (1, "")
    assert one_error_line(err) == "luong: error: " + message.format(m=model_copy)


@pytest.mark.parametrize(
    ("setup", "flags", "message"),
    [
        (
            lambda d: (d / "out").mkdir() or (d / "out" / "run.json").write_text("[]"),
            [],
            "{d}/out/run.json: not a luong run description (expected a JSON object, got "
            "list); choose another --out to start a new run",
        ),
        (
            lambda d: None,
            ["--seed", str(2**64)],
            "seed: expected an int below 2**64, got 18446744073709551616",
        ),
        (
            lambda d: (d / "c.toml").write_text("model = 5\n"),
            ["--config", "{d}/c.toml"],
            "{d}/c.toml: model = 5 is not a table; expected [model] with options under it",
        ),
        (
            lambda d: (d / "c.toml").write_text("[model]\nwindow = " + nest(100_000) + "\n"),
            ["--config", "{d}/c.toml"],
            "{d}/c.toml: not valid TOML (nested too deep)",
        ),
    ],
    ids=["run-json-a-list", "seed-2-to-the-64", "toml-model-5", "nested-toml"],
)
def test_broken_run_files_and_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup, flags: list[str], message: str
) -> None:
    setup(tmp_path)
    flags = [flag.format(d=tmp_path) for flag in flags]
    status, _, err = run_main(
        capsys, "train", "dates", "--out", str(tmp_path / "out"), *TINY_DATES_FLAGS, *flags
    )
    assert status == 1
    assert one_error_line(err) == "luong: error: " + message.format(d=tmp_path)


def test_zoo_results_that_are_not_an_object_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dates.json").write_text("[]")
    status, _, err = run_main(capsys, "zoo", "--out", str(tmp_path), "--seeds", "1")
    assert status == 1
    assert one_error_line(err) == (
        f"luong: error: {tmp_path}/dates.json: not a zoo results file (expected a JSON object "
        "with settings and runs); delete it or choose another --out"
    )


# -- item 15: small ones ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "toml", "message"),
    [
        (["--lr", "inf"], None, "lr: expected a finite number > 0, got inf"),
        (["--clip-norm", "nan"], None, "clip_norm: expected a finite number >= 0, got nan"),
        ([], "[train]\nlr = true\n", "lr: expected a finite number > 0, got True"),
    ],
    ids=["lr-inf", "clip-norm-nan", "toml-lr-true"],
)
def test_nonsense_training_numbers_are_refused_before_training(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    toml: str | None,
    message: str,
) -> None:
    if toml is not None:
        (tmp_path / "c.toml").write_text(toml)
        flags = [*flags, "--config", str(tmp_path / "c.toml")]
    out = tmp_path / "out"
    status, _, err = run_main(
        capsys, "train", "dates", "--out", str(out), *TINY_DATES_FLAGS, *flags
    )
    assert status == 1
    assert one_error_line(err) == f"luong: error: {message}"
    assert not out.exists()


def test_changing_only_the_checkpoint_settings_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["train", "dates", "--out", str(tmp_path / "run"), *TINY_DATES_FLAGS]
    assert run_main(capsys, *args)[0] == 0
    again = [*args, "--checkpoint-every", "2", "--keep-checkpoints", "3"]
    status, out, err = run_main(capsys, *again)
    assert status == 0, err
    assert f"resuming from {tmp_path}/run/checkpoints/step-0000004 (finished)" in err
    assert out.endswith(f"model and metrics.json written to {tmp_path}/run\n")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_leftover_world_size_times_out_naming_the_variables(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "WORLD_SIZE": "2",
        "RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "LUONG_RENDEZVOUS_SECONDS": "1",
    }
    args = ["train", "dates", "--out", str(tmp_path / "run"), *TINY_DATES_FLAGS]
    result = subprocess.run(
        [sys.executable, "-m", "luong", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 1
    assert one_error_line(result.stderr) == (
        f"luong: error: torchrun environment (WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 "
        f"MASTER_PORT={port}): the 2 processes did not all join within 1 s; for one process, "
        "unset WORLD_SIZE, RANK, MASTER_ADDR and MASTER_PORT; for several, start them all with "
        "torchrun"
    )
    assert not (tmp_path / "run").exists()


def test_a_reader_that_goes_away_ends_the_command_quietly(model_dir: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # `luong translate ... | true`: nobody reads
    try:
        result = subprocess.run(
            [sys.executable, "-m", "luong", "translate", str(model_dir)],
            input=b"3 May 1979\n" * 2000,
            stdout=write,
            stderr=subprocess.PIPE,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            timeout=120,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (128 + signal.SIGPIPE, b"")


# -- item 2: --out at a folder that is not a run ---------------------------------------------


def test_out_at_a_folder_of_other_files_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text('{"my": "settings"}\n')
    (mine / "metrics.json").write_text('{"my": "figures"}\n')
    status, _, err = run_main(capsys, "train", "dates", "--out", str(mine), *TINY_DATES_FLAGS)
    assert status == 1
    assert one_error_line(err) == (
        f"luong: error: {mine}: not empty and not a luong run folder (it holds config.json, "
        "metrics.json, but no run.json); choose a new or empty folder for --out"
    )
    assert sorted(p.name for p in mine.iterdir()) == ["config.json", "metrics.json"]
    assert (mine / "config.json").read_text() == '{"my": "settings"}\n'
    assert (mine / "metrics.json").read_text() == '{"my": "figures"}\n'
    # A file is no folder; an empty folder is fine.
    (tmp_path / "file").write_text("x")
    status, _, err = run_main(
        capsys, "train", "dates", "--out", str(tmp_path / "file"), *TINY_DATES_FLAGS
    )
    assert status == 1
    assert one_error_line(err) == (
        f"luong: error: {tmp_path}/file: not a folder; --out names the run folder to write"
    )
    (tmp_path / "empty").mkdir()
    status, _, err = run_main(
        capsys, "train", "dates", "--out", str(tmp_path / "empty"), *TINY_DATES_FLAGS
    )
    assert status == 0, err


# -- item 13: two runs on the same --out -----------------------------------------------------

# The child: another writer holding the run folder's lock (flock on DIR/.lock, its pid in
# it, as luong.common.files.locked does) until its stdin closes.
HOLD_THE_LOCK = """
    import fcntl, os, sys

    with open(os.path.join(sys.argv[1], ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(f"{os.getpid()}\\n")
        lock.flush()
        print("locked", flush=True)
        sys.stdin.read()
"""


def test_a_second_writer_on_the_same_run_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = ["train", "dates", "--out", str(run), *TINY_DATES_FLAGS]
    assert run_main(capsys, *args)[0] == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD_THE_LOCK), str(run)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        # The first writer's checkpoint, half-written: the second must not clean it up.
        partial = run / "checkpoints" / ".partial-step-0000008.1.x"
        partial.mkdir()
        status, _, err = run_main(capsys, *args)
        assert status == 1
        assert one_error_line(err) == (
            f"luong: error: {run}: another luong train (process {holder.pid}) is writing this "
            "run folder; wait for it to end, or choose another --out"
        )
        assert partial.is_dir()
    finally:
        holder.communicate("", timeout=60)
    # The holder is gone: its lock file stays, and blocks nothing.
    assert (run / ".lock").read_text() == f"{holder.pid}\n"
    status, _, err = run_main(capsys, *args)
    assert status == 0, err
    assert not partial.exists()


# -- item 1: a stale resume after the data changed -------------------------------------------


def write_pairs(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))


@pytest.fixture
def own_data_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """A finished run on own files (a reversal task); returns its command line."""
    words = ["".join("abcdef"[(i * 7 + j * 3) % 6] for j in range(1 + i % 5)) for i in range(64)]
    write_pairs(tmp_path / "train.tsv", [(w, w[::-1]) for w in words])
    write_pairs(tmp_path / "dev.tsv", [(w, w[::-1]) for w in words[:8]])
    args = ["train", "--train", str(tmp_path / "train.tsv"), "--dev", str(tmp_path / "dev.tsv")]
    args += ["--out", str(tmp_path / "run"), *TINY_MODEL_FLAGS]
    assert run_main(capsys, *args)[0] == 0
    return args


def test_a_resume_after_the_data_changed_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own_data_run: list[str]
) -> None:
    metrics = (tmp_path / "run" / "metrics.json").read_text()
    # The same symbols (the vocabularies and the weights' shapes do not change), other pairs:
    # the first ten targets are no longer reversed.
    train_tsv = tmp_path / "train.tsv"
    lines = train_tsv.read_text().splitlines()
    lines[:10] = [f"{line.split()[0]}\t{line.split()[0]}" for line in lines[:10]]
    train_tsv.write_text("\n".join(lines) + "\n")
    status, _, err = run_main(capsys, *own_data_run)
    assert status == 1
    assert one_error_line(err) == (
        f"luong: error: {tmp_path}/run was trained on other data: train ({train_tsv}) changed "
        "since the run began; choose another --out to start a new run, or restore the data to "
        "resume it"
    )
    assert (tmp_path / "run" / "metrics.json").read_text() == metrics


def test_a_resume_after_the_data_changed_is_refused_without_hashes_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own_data_run: list[str]
) -> None:
    # A run folder from before run.json kept the data's hashes: the checkpoint's saved
    # vocabularies are compared with the ones built on the changed data.
    run_json = tmp_path / "run" / "run.json"
    description = json.loads(run_json.read_text())
    description.pop("data_sha256", None)
    run_json.write_text(json.dumps(description))
    # As many symbols as before (the weights' shapes fit), one of them another: f became x.
    train_tsv = tmp_path / "train.tsv"
    train_tsv.write_text(train_tsv.read_text().replace("f", "x"))
    status, _, err = run_main(capsys, *own_data_run)
    assert status == 1
    latest = tmp_path / "run" / "checkpoints" / "step-0000001"
    assert one_error_line(err) == (
        f"luong: error: {latest}/src_vocab.json: the checkpoint's source vocabulary is not the "
        "one built on the training data now (now also 'x'; no longer 'f'): the data changed since "
        "the run began; choose another --out to start a new run"
    )


# -- item 14: SIGTERM like SIGINT; SIGINT during the final evaluation ------------------------

# The child: the luong command, sending itself signal SIG when the trainer calls NAME for
# the CALL-th time (loss_of: once per step; evaluate: once per dev evaluation).
SIGNAL_AT = """
    import os, signal, sys
    import luong.training.dev, luong.training.objective
    from luong.cli import main

    name, call, sig = sys.argv[1], int(sys.argv[2]), getattr(signal, sys.argv[3])
    # The module the trainer's parts look NAME up in.
    module = {"loss_of": luong.training.objective, "evaluate": luong.training.dev}[name]
    real, calls = getattr(module, name), [0]

    def signal_then_call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == call:
            os.kill(os.getpid(), sig)
        return real(*args, **kwargs)

    setattr(module, name, signal_then_call)
    sys.exit(main(sys.argv[4:]))
"""


def final_weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(str(out / "model.safetensors"))


LUONG_SCRIPT = Path(sys.executable).parent / "luong"  # the console script, where installed


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["-m", "luong"], id="python -m luong"),
        pytest.param(
            [str(LUONG_SCRIPT)],
            id="luong",
            marks=pytest.mark.skipif(not LUONG_SCRIPT.is_file(), reason="no console script"),
        ),
    ],
)
def test_sigterm_while_the_command_starts_gives_the_message_and_143(command: list[str]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # -X importtime: a line on stderr as each module's import ends; torch's come while
    # luong.cli.main imports the command's module (luong.cli.translate), for seconds, after
    # it installed its SIGTERM handler (the folder does not exist: the command, had it
    # started, would end at once with an error).
    script = [sys.executable, "-X", "importtime", *command, "translate", "no-such-model"]
    with subprocess.Popen(script, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stderr is not None
            lines = iter(process.stderr.readline, "")
            torch_line = re.compile(r"\| +torch(\.\S+)?$")  # torch or a module of it
            assert next((line for line in lines if torch_line.search(line.rstrip())), "")
            process.send_signal(signal.SIGTERM)
            err = process.stderr.read()
            status = process.wait(timeout=60)
        finally:
            process.kill()
    said = [line for line in err.splitlines() if not line.startswith("import time:")]
    assert (status, said) == (128 + signal.SIGTERM, ["luong: terminated (SIGTERM)"])
    assert not any(line.endswith(" luong.cli.translate") for line in err.splitlines())


def test_import_luong_in_another_program_leaves_sigterm_alone() -> None:
    code = "import signal, luong; assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL"
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ, timeout=300)


def test_sigterm_writes_a_checkpoint_and_the_run_resumes_exactly(tmp_path: Path) -> None:
    def command(out: Path) -> list[str]:
        return ["train", "dates", "--out", str(out), *TINY_DATES_FLAGS, "--batch-size", "32"]

    reference = child(SIGNAL_AT, "loss_of", "0", "SIGTERM", *command(tmp_path / "reference"))
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    stopped = child(SIGNAL_AT, "loss_of", "5", "SIGTERM", *command(out))
    assert stopped.returncode == 128 + signal.SIGTERM
    assert stopped.stderr == (
        f"luong: terminated (SIGTERM); checkpoint written to {out}/checkpoints/step-0000005, "
        "run the same command to resume\n"
    )
    assert not (out / "metrics.json").exists()
    resumed = child(SIGNAL_AT, "loss_of", "0", "SIGTERM", *command(out))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out}/checkpoints/step-0000005 (epoch 1, step 5/13)" in resumed.stderr
    weights, expected = final_weights(out), final_weights(tmp_path / "reference")
    assert weights.keys() == expected.keys()
    assert all(torch.equal(weights[name], expected[name]) for name in weights)


def test_resume_alone_reads_the_runs_own_config(tmp_path: Path) -> None:
    # `luong train --out RUN --resume` with no task, data or --config: RUN/config.toml gives
    # the settings (it said "expected a task ... got neither"), and the run resumes exactly.
    flags = [*TINY_DATES_FLAGS, "--batch-size", "32"]  # 13 steps
    command = ["train", "dates", "--out", str(tmp_path / "reference"), *flags]
    assert child(SIGNAL_AT, "loss_of", "0", "SIGTERM", *command).returncode == 0
    out = tmp_path / "run"
    command = ["train", "dates", "--out", str(out), *flags]
    stopped = child(SIGNAL_AT, "loss_of", "5", "SIGTERM", *command)
    assert stopped.returncode == 128 + signal.SIGTERM
    resumed = child(SIGNAL_AT, "loss_of", "0", "SIGTERM", "train", "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out}/checkpoints/step-0000005 (epoch 1, step 5/13)" in resumed.stderr
    weights, expected = final_weights(out), final_weights(tmp_path / "reference")
    assert weights.keys() == expected.keys()
    assert all(torch.equal(weights[name], expected[name]) for name in weights)
    # Without --resume, or on a folder with no run, a task is still asked for.
    for args in (["--out", str(out)], ["--out", str(tmp_path / "none"), "--resume"]):
        done = child(SIGNAL_AT, "loss_of", "0", "SIGTERM", "train", *args)
        assert done.returncode == 2
        assert done.stderr.splitlines()[-1].endswith("or a --config naming the task, got neither")


def test_sigint_during_the_final_evaluation_stops_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = ["train", "dates", "--out", str(out), *TINY_DATES_FLAGS]
    # TINY_DATES_FLAGS: one epoch of 4 steps, so the only dev evaluation is the final one.
    stopped = child(SIGNAL_AT, "evaluate", "1", "SIGINT", *command)
    assert stopped.returncode == 128 + signal.SIGINT
    # The evaluation under way stops at once (nothing logged); the checkpoint keeps it due.
    assert stopped.stderr == (
        f"luong: interrupted; checkpoint written to {out}/checkpoints/step-0000004, run the "
        "same command to resume\n"
    )
    assert not (out / "metrics.json").exists()
    resumed = child(SIGNAL_AT, "evaluate", "0", "SIGINT", *command)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out}/checkpoints/step-0000004 (epoch 1, step 4/4)" in resumed.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 4 and [q["step"] for q in metrics["dev_curve"]] == [4]


# The child: the luong command whose CALL-th dev evaluation never ends (the real one again
# and again: a decode as long as --max-decode-len allows, for ever); it says "evaluating" on
# stderr as that evaluation starts.
ENDLESS_EVALUATION = """
    import sys
    import luong.training.dev as dev
    from luong.cli import main

    call, real, calls = int(sys.argv[1]), dev.evaluate, [0]

    def endless(*args, **kwargs):
        calls[0] += 1
        if calls[0] == call:
            print("evaluating", file=sys.stderr, flush=True)
            while True:
                real(*args, **kwargs)
        return real(*args, **kwargs)

    dev.evaluate = endless
    sys.exit(main(sys.argv[2:]))
"""


def test_sigterm_stops_a_dev_evaluation_at_once_and_the_run_resumes_exactly(
    tmp_path: Path,
) -> None:
    def command(out: Path) -> list[str]:
        flags = ["--batch-size", "32", "--eval-every", "2"]  # 13 steps, 7 evaluations
        return ["train", "dates", "--out", str(out), *TINY_DATES_FLAGS, *flags]

    reference = child(SIGNAL_AT, "loss_of", "0", "SIGTERM", *command(tmp_path / "reference"))
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    script = [sys.executable, "-c", textwrap.dedent(ENDLESS_EVALUATION), "2", *command(out)]
    with subprocess.Popen(script, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stderr is not None
            lines = iter(process.stderr.readline, "")
            shown = next((line for line in lines if not line.startswith("luong: step ")), "")
            assert shown == "evaluating\n"  # the evaluation at step 4 is under way
            process.send_signal(signal.SIGTERM)
            status = process.wait(timeout=120)  # without the fix: for ever
            err = process.stderr.read()
        finally:
            process.kill()
    assert status == 128 + signal.SIGTERM
    assert err == (
        f"luong: terminated (SIGTERM); checkpoint written to {out}/checkpoints/step-0000004, "
        "run the same command to resume\n"
    )
    resumed = child(SIGNAL_AT, "loss_of", "0", "SIGTERM", *command(out))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out}/checkpoints/step-0000004 (epoch 1, step 4/13)" in resumed.stderr
    # The resumed run does the evaluation of step 4 first: the same curve, the same weights.
    curves = [
        json.loads((d / "metrics.json").read_text())["dev_curve"]
        for d in (out, tmp_path / "reference")
    ]
    clockless = [[{k: v for k, v in q.items() if k != "seconds"} for q in c] for c in curves]
    assert [q["step"] for q in clockless[0]] == [2, 4, 6, 8, 10, 12, 13]
    assert clockless[0] == clockless[1]
    weights, expected = final_weights(out), final_weights(tmp_path / "reference")
    assert all(torch.equal(weights[name], expected[name]) for name in expected)
