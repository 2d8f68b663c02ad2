"""Data-parallel training under torchrun on the CPU (gloo), and the batch sharding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from luong import Seq2Seq
from luong.training.distributed import World, setup, shard

TINY_MODEL = {"emb_dim": 8, "enc_hidden": 16, "enc_layers": 1, "dec_hidden": 32}
TINY_TRAIN = {
    "epochs": 4,
    "batch_size": 16,
    "lr": 5e-3,
    "warmup_steps": 5,
    "eval_every": 10,
    "progress": False,
    "device": "cpu",
}
TINY_DATA = {"n_train": 400, "n_dev": 30, "n_test": 30}

# Each rank trains, then writes its own final weights beside the run folder for the test.
WORKER = textwrap.dedent(
    """
    import os, sys
    from safetensors.torch import save_file
    from luong import Seq2SeqConfig, TrainConfig, train

    out = sys.argv[1]
    result = train(
        "dates",
        out,
        model_config=Seq2SeqConfig(**{model}),
        train_config=TrainConfig(**{train}),
        task_options={data},
    )
    rank = os.environ["RANK"]
    weights = {{k: v.contiguous() for k, v in result.model.state_dict().items()}}
    save_file(weights, os.path.join(os.path.dirname(out), f"rank{{rank}}.safetensors"))
    """
).format(model=TINY_MODEL, train=TINY_TRAIN, data=TINY_DATA)


def torchrun(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    return subprocess.run(
        [*command, "--nproc-per-node", "2", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_shards_are_disjoint_equal_and_cover_the_epoch() -> None:
    batches = [[i, i + 100] for i in range(11)]
    shards = [shard(batches, World(rank=r, size=3)) for r in range(3)]
    assert [len(s) for s in shards] == [3, 3, 3]  # 11 batches: the last 2 are dropped
    flat = [tuple(b) for s in shards for b in s]
    assert len(set(flat)) == len(flat) == 9
    assert sorted(flat) == [tuple(b) for b in batches[:9]]
    assert shard(batches, World()) == batches


def test_one_process_needs_no_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    world = setup("cpu")
    assert (world.rank, world.size, world.main, world.active) == (0, 1, True, False)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="torchrun environment"):
        setup("cpu")


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("ddp")
    script = base / "worker.py"
    script.write_text(WORKER)
    result = torchrun(str(script), str(base / "run"))
    assert result.returncode == 0, result.stderr[-3000:]
    return base


def test_both_ranks_end_with_identical_weights(ddp_run: Path) -> None:
    first = load_file(str(ddp_run / "rank0.safetensors"))
    second = load_file(str(ddp_run / "rank1.safetensors"))
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name


def test_the_loss_falls_and_rank_zero_writes_one_run_folder(ddp_run: Path) -> None:
    run = ddp_run / "run"
    names = sorted(p.name for p in run.iterdir())
    expected = [".lock", "checkpoints", "config.json", "metrics.json", "model.safetensors"]
    logs = ["config.toml", "log.jsonl", "train.log"]
    assert names == sorted([*expected, *logs, "run.json", "src_vocab.json", "tgt_vocab.json"])
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["world_size"] == 2
    # 400 pairs in batches of 16 make 25 batches: 12 per rank and epoch, 4 epochs.
    assert metrics["steps"] == 48
    curve = metrics["dev_curve"]
    assert curve[-1]["train_loss"] < 0.8 * curve[0]["train_loss"]
    model = Seq2Seq.from_pretrained(run)
    reloaded = {k: v for k, v in model.state_dict().items()}
    rank0 = load_file(str(ddp_run / "rank0.safetensors"))
    assert all(torch.equal(reloaded[k], rank0[k]) for k in rank0)


def test_torchrun_runs_the_luong_command(tmp_path: Path) -> None:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in {**TINY_MODEL, **TINY_DATA}.items()]
    flags += ["--epochs=1", "--batch-size=16", "--no-progress", "--device=cpu"]
    result = torchrun("-m", "luong", "train", "dates", "--out", str(tmp_path / "run"), *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("test exact match") == 1  # rank 0 alone reports
    assert (tmp_path / "run" / "model.safetensors").is_file()
