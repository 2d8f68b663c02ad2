"""Crash safety: checkpoints, exact resume after SIGKILL and SIGINT, guards (files written all
or nothing: ``tests/test_files.py``).

The resume tests compare bit for bit: on one machine with the same number of threads, the
CPU kernels are deterministic, and a checkpoint holds everything a step reads (weights,
Adam's moments and step counts, the random generator, the position in the epoch's batch
order, which follows from the seed and the epoch alone).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from helpers import TINY_DATES_FLAGS, assert_one_line_error, luong, small_model, toy_pairs
from safetensors.torch import load_file, save_file

from luong import Seq2Seq, Seq2SeqConfig, TrainConfig
from luong.model.ensemble import Ensemble
from luong.training.checkpoint import (
    find_latest,
    read_checkpoint,
    stopped_run_model,
    write_checkpoint,
)
from luong.training.run import train
from luong.training.trainer import Trainer, TrainingDiverged
from luong.translation.translator import load as luong_load

# Dropout above zero: a resumed run is exact only if the random generator is restored too.
MODEL = {
    "emb_dim": 8,
    "enc_hidden": 16,
    "enc_layers": 1,
    "dec_hidden": 32,
    "attention": "dot",
    "dropout": 0.1,
}
TRAIN = {
    "epochs": 3,
    "batch_size": 32,
    "lr": 5e-3,
    "warmup_steps": 5,
    "eval_every": 7,
    "checkpoint_every": 3,
    "keep_checkpoints": 2,
    "progress": False,
    "seed": 5,
}
DATA = {"seed": 0, "n_train": 320, "n_dev": 30, "n_test": 30}

# The child process: one training run; KILL_AT_REPLACE=n makes it SIGKILL itself at the
# n-th os.replace of a checkpoint write (in the middle of writing a checkpoint).
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import luong.common.files as files
    from luong import Seq2SeqConfig, TrainConfig, train

    kill_at = int(os.environ.get("KILL_AT_REPLACE", "0"))
    if kill_at:
        real_replace, calls = os.replace, [0]

        def replace(src, dst):
            calls[0] += 1
            if calls[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            real_replace(src, dst)

        files.os.replace = replace
    train(
        "dates",
        sys.argv[1],
        model_config=Seq2SeqConfig(**{model}),
        train_config=TrainConfig(**{train}),
        task_options={data},
        log=lambda message: print(message, flush=True),
    )
    """
)
CHILD_FP32 = CHILD.format(model=MODEL, train=TRAIN, data=DATA)
# The same run in bf16: products in bfloat16 (the fused recurrence's too), float32 master
# weights, optimizer and loss (docs/performance.md, "Mixed precision").
# On a CPU without bfloat16 units bf16 would compute in fp32 (luong.common.devices.computes_in): the
# child takes the bf16 path all the same, so that the test means the same on every CPU.
CHILD_BF16 = (
    "import luong.common.devices\nluong.common.devices.bf16_units = lambda: True\n"
    + CHILD.format(model=MODEL, train={**TRAIN, "precision": "bf16"}, data=DATA)
)


def run_child(
    out: Path,
    *,
    kill_at_replace: int = 0,
    kill_after: float | None = None,
    sig: int = 9,
    code: str = CHILD_FP32,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "KILL_AT_REPLACE": str(kill_at_replace)}
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if kill_after is not None:
        try:
            child.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            child.send_signal(sig)
    stdout, stderr = child.communicate(timeout=300)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


def final_state(out: Path) -> tuple[dict[str, torch.Tensor], list[dict]]:
    metrics = json.loads((out / "metrics.json").read_text())
    curve = [{k: v for k, v in p.items() if k != "seconds"} for p in metrics["dev_curve"]]
    return load_file(str(out / "model.safetensors")), curve


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list]:
    out = tmp_path_factory.mktemp("reference") / "run"
    result = run_child(out)
    assert result.returncode == 0, result.stderr
    return final_state(out)


def assert_same_run(out: Path, reference: tuple[dict, list]) -> None:
    weights, curve = final_state(out)
    ref_weights, ref_curve = reference
    assert curve == ref_curve
    assert weights.keys() == ref_weights.keys()
    for name in weights:
        assert torch.equal(weights[name], ref_weights[name]), name


@pytest.fixture(scope="module")
def reference_bf16(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list]:
    out = tmp_path_factory.mktemp("reference-bf16") / "run"
    result = run_child(out, code=CHILD_BF16)
    assert result.returncode == 0, result.stderr
    return final_state(out)


@pytest.mark.parametrize("kill_at_replace", [2, 7, 12])
def test_sigkill_during_a_checkpoint_write_then_resume_is_exact(
    tmp_path: Path, reference: tuple[dict, list], kill_at_replace: int
) -> None:
    out = tmp_path / "run"
    killed = run_child(out, kill_at_replace=kill_at_replace)
    assert killed.returncode == -signal.SIGKILL
    # The killed run left something resumable: a complete latest checkpoint or none.
    latest = find_latest(out / "checkpoints") if (out / "checkpoints").exists() else None
    if latest is not None:
        Seq2Seq.from_pretrained(latest)
    resumed = run_child(out)
    assert resumed.returncode == 0, resumed.stderr
    if latest is not None:
        assert f"resuming from {latest}" in resumed.stdout
    assert not list((out / "checkpoints").glob(".partial-*"))
    assert_same_run(out, reference)


@pytest.mark.parametrize("seconds", [2.5, 4.0])
def test_sigkill_at_a_random_moment_then_resume_is_exact(
    tmp_path: Path, reference: tuple[dict, list], seconds: float
) -> None:
    out = tmp_path / "run"
    run_child(out, kill_after=seconds)
    resumed = run_child(out)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_run(out, reference)
    Seq2Seq.from_pretrained(out)


def test_a_bf16_run_killed_then_resumed_is_exact(
    tmp_path: Path, reference: tuple[dict, list], reference_bf16: tuple[dict, list]
) -> None:
    """bf16 keeps nothing outside the checkpoint: its master weights, Adam's moments and the
    loss are float32 as in an fp32 run, and its bfloat16 copies of the weights are made
    anew from them at every step. Killed while writing a checkpoint, it resumes from the
    one before to the run that was never killed; the run is its own, not fp32's."""
    out = tmp_path / "run"
    killed = run_child(out, kill_at_replace=12, code=CHILD_BF16)
    assert killed.returncode == -signal.SIGKILL
    latest = find_latest(out / "checkpoints")
    assert latest is not None
    resumed = run_child(out, code=CHILD_BF16)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {latest}" in resumed.stdout
    assert_same_run(out, reference_bf16)
    assert any(
        not torch.equal(reference_bf16[0][name], weights) for name, weights in reference[0].items()
    )


def test_sigint_writes_a_checkpoint_and_exits_cleanly(
    tmp_path: Path, reference: tuple[dict, list]
) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = ["train", "dates", "--out", str(out), "--no-progress"]
    args += [
        f"--{k.replace('_', '-')}={v}" for k, v in {**MODEL, **TRAIN}.items() if k != "progress"
    ]
    args += [f"--{k.replace('_', '-')}={v}" for k, v in DATA.items() if k != "seed"]
    child = subprocess.Popen(
        [sys.executable, "-m", "luong", *args], env=env, stderr=subprocess.PIPE, text=True
    )
    # Interrupt once training is under way (its first checkpoint exists).
    deadline = time.monotonic() + 120
    while not (out / "checkpoints" / "latest").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=120)
    if child.returncode == 0:
        pytest.skip("the run finished before SIGINT arrived")
    assert child.returncode == 130
    assert "luong: interrupted; checkpoint written to" in stderr
    assert "Traceback" not in stderr
    assert find_latest(out / "checkpoints") is not None
    resumed = run_child(out)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_run(out, reference)


# A run resumed from a checkpoint in its second or third epoch, in process: 96 pairs in
# batches of 16 are 6 steps an epoch, and a checkpoint every 4 steps lands at step 8 (epoch 2,
# after 2 batches) and step 16 (epoch 3, after 4 batches). The kill points above all stop in
# epoch 1, where an epoch's batch order is right even if it does not follow from the epoch.
LATER = TrainConfig(
    epochs=3,
    batch_size=16,
    lr=5e-3,
    warmup_steps=3,
    eval_every=5,
    checkpoint_every=4,
    keep_checkpoints=10,
    progress=False,
    seed=5,
)
LATER_TRAIN, LATER_DEV = toy_pairs(96), toy_pairs(8, seed=1)


def later_run(out: Path) -> tuple[Trainer, tuple[int, int, int] | None, dict]:
    """A fresh trainer on ``out``, resumed if ``out`` holds a checkpoint, run to the end: the
    trainer, where it resumed (epoch, batch, step; None for a fresh start), the metrics."""
    model = small_model(**MODEL)
    trainer = Trainer(model, LATER_TRAIN, LATER_DEV, LATER, out, log=lambda message: None)
    start = None
    if trainer.resume():
        p = trainer.progress
        start = (p.epoch, p.batch, p.step)
    return trainer, start, trainer.run()


def curve_without_seconds(metrics: dict) -> list[dict]:
    return [{k: v for k, v in point.items() if k != "seconds"} for point in metrics["dev_curve"]]


@pytest.fixture(scope="module")
def later_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Trainer, dict]:
    out = tmp_path_factory.mktemp("later") / "run"
    trainer, start, metrics = later_run(out)
    assert start is None
    return out, trainer, metrics


@pytest.mark.parametrize(("step", "epoch", "batch"), [(8, 2, 2), (16, 3, 4)])
def test_a_checkpoint_in_a_later_epoch_resumes_bit_for_bit(
    tmp_path: Path, later_reference: tuple[Path, Trainer, dict], step: int, epoch: int, batch: int
) -> None:
    reference_out, reference, reference_metrics = later_reference
    # The run folder as a kill right after that checkpoint would have left it.
    name = f"step-{step:07d}"
    out = tmp_path / "run"
    shutil.copytree(reference_out / "checkpoints" / name, out / "checkpoints" / name)
    (out / "checkpoints" / "latest").write_text(name + "\n")
    trainer, start, metrics = later_run(out)
    assert start == (epoch, batch, step)
    assert metrics["steps"] == reference_metrics["steps"] == 18
    assert curve_without_seconds(metrics) == curve_without_seconds(reference_metrics)
    # The best weights (what the run keeps), the last ones and Adam's moments.
    last = f"checkpoints/step-{18:07d}/model.safetensors"
    for weights, expected in [
        (trainer.model.state_dict(), reference.model.state_dict()),
        (load_file(str(out / last)), load_file(str(reference_out / last))),
    ]:
        assert weights.keys() == expected.keys()
        for key in expected:
            assert torch.equal(weights[key], expected[key]), key
    optimizer, expected_optimizer = trainer.optimizer.state, reference.optimizer.state
    for param, reference_param in zip(
        trainer.model.parameters(), reference.model.parameters(), strict=True
    ):
        for key, value in expected_optimizer[reference_param].items():
            assert torch.equal(torch.as_tensor(optimizer[param][key]), torch.as_tensor(value)), key


def test_a_different_run_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    small = {"n_train": 64, "n_dev": 8, "n_test": 8}
    config = TrainConfig(epochs=1, batch_size=32, progress=False)
    train(
        "dates",
        tmp_path,
        model_config=Seq2SeqConfig(**MODEL),
        train_config=config,
        task_options=small,
    )
    other = Seq2SeqConfig(**{**MODEL, "cell": "lstm"})
    with pytest.raises(ValueError, match=r"holds another run \(model_config.cell: 'gru' -> 'lstm'"):
        train("dates", tmp_path, model_config=other, train_config=config, task_options=small)


def test_checkpoint_round_trip_restores_model_optimizer_and_generator(tmp_path: Path) -> None:
    model = small_model(**MODEL)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.tensor([[4, 5, 2]]), torch.tensor([3]), torch.tensor([[1, 4]])).sum().backward()
    optimizer.step()
    torch.manual_seed(123)
    folder = write_checkpoint(tmp_path, 7, model, optimizer, {"progress": {"step": 7}}, keep=2)
    expected_draw = torch.rand(3)
    other = small_model(1, **MODEL)
    other_optimizer = torch.optim.Adam(other.parameters(), lr=1e-3)
    torch.manual_seed(999)
    state = read_checkpoint(folder, other, other_optimizer)
    assert state["step"] == 7 and state["progress"] == {"step": 7}
    assert torch.equal(torch.rand(3), expected_draw)
    for (name, a), b in zip(model.state_dict().items(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    saved, restored = optimizer.state_dict(), other_optimizer.state_dict()
    for index, values in saved["state"].items():
        for key, value in values.items():
            assert torch.equal(
                torch.as_tensor(value), torch.as_tensor(restored["state"][index][key])
            )


def test_keep_last_k_and_latest_pointer(tmp_path: Path) -> None:
    model = small_model(**MODEL)
    optimizer = torch.optim.Adam(model.parameters())
    for step in (1, 2, 3, 4):
        write_checkpoint(tmp_path, step, model, optimizer, {}, keep=2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["latest", "step-0000003", "step-0000004"]
    assert find_latest(tmp_path) == tmp_path / "step-0000004"


def test_non_finite_weights_are_never_written(tmp_path: Path) -> None:
    model = small_model(**MODEL)
    optimizer = torch.optim.Adam(model.parameters())
    write_checkpoint(tmp_path, 1, model, optimizer, {}, keep=2)
    with torch.no_grad():
        model.decoder.out.bias[0] = float("nan")
    with pytest.raises(ValueError, match="weight 'decoder.out.bias' is not finite"):
        write_checkpoint(tmp_path, 2, model, optimizer, {}, keep=2)
    assert find_latest(tmp_path) == tmp_path / "step-0000001"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step-0000001"]


@pytest.fixture
def checkpoint_folder(tmp_path: Path) -> Path:
    model = small_model(**MODEL)
    return write_checkpoint(
        tmp_path, 1, model, torch.optim.Adam(model.parameters()), {"progress": {}}, keep=1
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncate-optimizer", "optimizer.safetensors: not a readable safetensors file"),
        ("truncate-model", "model.safetensors: not a readable safetensors file"),
        ("foreign-model", "model.safetensors: does not match the config: missing tensors"),
        ("misshaped-model", re.escape("has shape (5, 32), the config expects (15, 8)")),
        ("garbage-state", "state.json: not valid JSON"),
        ("missing-optimizer", "optimizer.safetensors: missing"),
    ],
)
def test_damaged_checkpoints_name_the_file_and_problem(
    checkpoint_folder: Path, damage: str, message: str
) -> None:
    folder = checkpoint_folder
    weights = folder / "model.safetensors"
    if damage == "truncate-optimizer":
        path = folder / "optimizer.safetensors"
        path.write_bytes(path.read_bytes()[:50])
    elif damage == "truncate-model":
        weights.write_bytes(weights.read_bytes()[: len(weights.read_bytes()) // 2])
    elif damage == "foreign-model":
        save_file({"something.else": torch.zeros(2)}, str(weights))
    elif damage == "misshaped-model":
        tensors = load_file(str(weights))
        tensors["decoder.embedding.weight"] = torch.zeros(5, 32)
        save_file(tensors, str(weights))
    elif damage == "garbage-state":
        (folder / "state.json").write_text("{not json")
    elif damage == "missing-optimizer":
        (folder / "optimizer.safetensors").unlink()
    model = small_model(**MODEL)
    with pytest.raises((ValueError, FileNotFoundError), match=message) as error:
        read_checkpoint(folder, model, torch.optim.Adam(model.parameters()))
    assert str(folder) in str(error.value)


def test_latest_pointing_nowhere_is_reported(tmp_path: Path) -> None:
    (tmp_path / "latest").write_text("step-0000009\n")
    with pytest.raises(ValueError, match="names step-0000009, which does not exist"):
        find_latest(tmp_path)


# -- numerical guards ------------------------------------------------------------------------


def nan_after(model: Seq2Seq, calls: set[int]) -> None:
    """Make the model's logits NaN on the given forward calls (0-based)."""
    counter = [0]

    def hook(module: torch.nn.Module, inputs: object, output: torch.Tensor) -> torch.Tensor:
        counter[0] += 1
        if module.training and counter[0] - 1 in calls:
            return output * float("nan")
        return output

    model.decoder.out.register_forward_hook(hook)


def make_trainer(model: Seq2Seq, out: Path | None, **changes: object) -> Trainer:
    from luong.tasks import load_task

    data = load_task("dates", n_train=96, n_dev=8, n_test=0)
    settings = {"epochs": 1, "batch_size": 32, "progress": False, "max_bad_steps": 2, **changes}
    return Trainer(model, data.train, data.dev, TrainConfig(**settings), out, log=lambda m: None)


def test_a_nan_loss_skips_the_step_and_is_counted() -> None:
    model = small_model(**MODEL)
    nan_after(model, {1})
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = make_trainer(model, None)
    metrics = trainer.run()
    assert metrics["skipped_steps"] == 1
    assert metrics["steps"] == 3
    assert all(torch.isfinite(v).all() for v in model.state_dict().values())
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_too_many_nan_steps_in_a_row_stop_the_run_without_a_bad_checkpoint(
    tmp_path: Path,
) -> None:
    model = small_model(**MODEL)
    nan_after(model, {1, 2})
    trainer = make_trainer(model, tmp_path, checkpoint_every=1)
    with pytest.raises(TrainingDiverged, match="2 steps in a row had a non-finite loss"):
        trainer.run()
    # Step 2 was skipped (its weights are step 1's), step 3 stopped the run.
    latest = find_latest(tmp_path / "checkpoints")
    assert latest is not None and latest.name == "step-0000002"
    weights = load_file(str(latest / "model.safetensors"))
    assert all(torch.isfinite(v).all() for v in weights.values())


def test_written_files_and_folders_get_the_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        model = small_model(**MODEL)
        model.save_pretrained(tmp_path / "model")
        folder = write_checkpoint(
            tmp_path / "checkpoints", 1, model, torch.optim.Adam(model.parameters()), {}, keep=1
        )
    finally:
        os.umask(old)
    for path in [
        *(tmp_path / "model").iterdir(),
        *folder.iterdir(),
        tmp_path / "checkpoints" / "latest",
    ]:
        assert path.stat().st_mode & 0o777 == 0o644, path
    assert folder.stat().st_mode & 0o777 == 0o755


def test_nothing_in_the_package_unpickles() -> None:
    # Weights and training state are safetensors and JSON: no module may unpickle a file
    # (torch.load without weights_only=True, pickle, or numpy's allow_pickle).
    package = Path(__file__).resolve().parent.parent / "src" / "luong"
    sources = sorted(package.rglob("*.py"))
    assert len(sources) > 10
    offenders = []
    for source in sources:
        for number, line in enumerate(source.read_text().splitlines(), 1):
            loads = "torch.load(" in line and "weights_only=True" not in line
            if loads or re.search(r"import pickle|pickle\.loads?\(|allow_pickle=True", line):
                offenders.append(f"{source.name}:{number}: {line.strip()}")
    assert offenders == []


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny dates run, finished, its checkpoints kept (the last holds the best weights)."""
    out = tmp_path_factory.mktemp("stopped") / "run"
    flags = [*TINY_DATES_FLAGS, "--epochs", "2", "--checkpoint-every", "4", "--eval-every", "5"]
    result = luong("train", "dates", "--out", str(out), *flags)
    assert result.returncode == 0, result.stderr.decode()
    return out


DATES = b"3 May 1979\n12/01/2004\nmonday, june 5, 2017\n"


def stopped(finished_run: Path, folder: Path) -> Path:
    """``finished_run`` as a run stopped before its end: checkpoints, no model, no metrics."""
    shutil.copytree(finished_run, folder)
    (folder / "model.safetensors").unlink()
    (folder / "metrics.json").unlink()
    return folder


def test_a_stopped_run_translates_with_its_best_checkpoint_and_says_which(
    finished_run: Path, tmp_path: Path
) -> None:
    # Issue 53: "runs/fr/model.safetensors: missing", and nothing said what to do.
    expected = luong("translate", str(finished_run), stdin=DATES)
    assert expected.returncode == 0, expected.stderr.decode()
    run = stopped(finished_run, tmp_path / "run")
    latest = run / "checkpoints" / (run / "checkpoints" / "latest").read_text().strip()
    best_step = json.loads((latest / "state.json").read_text())["progress"]["best_step"]
    result = luong("translate", str(run), stdin=DATES)
    assert result.returncode == 0, result.stderr.decode()
    # the finished run's model is its best dev weights: the stopped run decodes the same
    assert result.stdout == expected.stdout and len(result.stdout.splitlines()) == 3
    assert result.stderr.decode().splitlines() == [
        f"luong: {run}: no model.safetensors (the run stopped before its end): using its best dev "
        f"weights (step {best_step}) in {latest}; luong train --config {run / 'config.toml'} "
        f"--out {run} resumes it"
    ]
    # the one loader, which luong serve and luong po load through, and an ensemble's members
    assert luong_load(run).translate(["3 May 1979"]) == luong_load(finished_run).translate(
        ["3 May 1979"]
    )
    assert isinstance(luong_load([run, finished_run]).model, Ensemble)
    catalog, out = tmp_path / "dates.pot", tmp_path / "dates.po"
    catalog.write_text('msgid ""\nmsgstr ""\n\nmsgid "3 May 1979"\nmsgstr ""\n', encoding="utf-8")
    po = luong("po", str(run), str(catalog), "--out", str(out), "--tgt-lang", "de")
    assert po.returncode == 0, po.stderr.decode()
    assert po.stderr.decode().splitlines()[0].startswith(f"luong: {run}: no model.safetensors (the")
    assert "filled 1 entries" in po.stderr.decode()


def test_a_stopped_run_without_a_usable_checkpoint_says_how_to_resume(
    finished_run: Path, tmp_path: Path
) -> None:
    run = stopped(finished_run, tmp_path / "run")
    resume = f"luong train --config {run / 'config.toml'} --out {run}"
    latest = run / "checkpoints" / (run / "checkpoints" / "latest").read_text().strip()
    (latest / "best.safetensors").write_bytes(b"not safetensors")
    result = luong("translate", str(run), stdin=DATES)
    message = result.stderr.decode()
    assert result.returncode == 1 and result.stdout == b"" and len(message.splitlines()) == 1
    assert message.startswith(f"luong: error: {latest / 'best.safetensors'}: ")
    assert message.endswith(
        f": the run {run} stopped before its end and its latest checkpoint does not load; "
        f"resume it with {resume}, or make a model of a checkpoint with luong average {run} "
        "--last 1 --out DIR\n"
    )
    shutil.rmtree(run / "checkpoints")
    assert_one_line_error(
        luong("translate", str(run), stdin=DATES),
        f"{run}: no model.safetensors and no checkpoint yet (the run stopped before its "
        f"first): resume it with {resume}",
    )
    with pytest.raises(ValueError, match="expected a run folder .checkpoints/ or run.json."):
        stopped_run_model(finished_run)


@pytest.mark.parametrize("command", ["export", "quantize"])
def test_a_command_that_reads_a_model_folder_says_how_to_resume_or_average(
    finished_run: Path, tmp_path: Path, command: str
) -> None:
    """``luong export`` and ``quantize`` read a model folder as it is: on a stopped
    run the line says how to resume it or to make a model of its last checkpoint (issue 53
    item 5; it said ``RUN/model.safetensors: missing (is RUN a luong model folder?)``)."""
    run = stopped(finished_run, tmp_path / "run")
    resume = f"luong train --config {run / 'config.toml'} --out {run}"
    assert_one_line_error(
        luong(command, str(run), "--out", str(tmp_path / "out")),
        f"{run}: no model.safetensors (the run stopped before its end): resume it with "
        f"{resume}, or make a model of its last checkpoint with luong average {run} --last 1 "
        "--out DIR",
    )
    shutil.rmtree(run / "checkpoints")
    with pytest.raises(FileNotFoundError) as info:
        Seq2Seq.from_pretrained(run)
    assert str(info.value) == (
        f"{run}: no model.safetensors and no checkpoint yet (the run stopped before its "
        f"first): resume it with {resume}"
    )
