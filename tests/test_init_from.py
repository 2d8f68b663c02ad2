"""Fine-tuning a trained model (``luong train --init-from MODEL``, ``--preset adapt``, ``--mix``;
``luong.training.fine_tuning``): the run starts from the model's weights and vocabularies, a setting
that conflicts with the model is refused in one line, a folder that is no float model is
refused, the run resumes bit for bit after a kill, and a run folder from before the field
still resumes. One test per row of docs/robustness.md ("Fine-tuning a trained model")."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import random
import shutil
import signal
import subprocess
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import TINY_DATES_FLAGS, TINY_MODEL_FLAGS, forked_python, luong
from safetensors.torch import load_file

from luong import Seq2SeqConfig, TrainConfig, train
from luong.common.errors import LuongError
from luong.config import VocabConfig
from luong.config.presets import ADAPT
from luong.tasks.tsv import mix_pairs, read_split

# The module (luong.training.run is the function): the test watches the Trainer it builds.
RUN = importlib.import_module("luong.training.run")


def error_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The one line on stderr of a command that failed (status 1 or 2), no traceback."""
    err = result.stderr.decode()
    assert result.returncode in (1, 2) and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not line.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    return lines[0]


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny trained dates run (its folder holds the model): the model to start from."""
    out = tmp_path_factory.mktemp("init") / "base"
    result = luong("train", "dates", "--out", str(out), *TINY_DATES_FLAGS)
    assert result.returncode == 0, result.stderr.decode()
    return out


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Your own data: 48 training pairs, 8 dev pairs and 100 general pairs of dates."""
    folder = tmp_path_factory.mktemp("tsv")
    rng = random.Random(1)

    def tsv(name: str, count: int) -> Path:
        lines = []
        for _ in range(count):
            year, month, day = rng.randint(1900, 2020), rng.randint(1, 12), rng.randint(1, 28)
            lines.append(f"{day}/{month}/{year}\t{year}-{month:02d}-{day:02d}\n")
        (folder / name).write_text("".join(lines), encoding="utf-8")
        return folder / name

    return {"train": tsv("own.tsv", 48), "dev": tsv("dev.tsv", 8), "mix": tsv("general.tsv", 100)}


def test_init_from_starts_from_the_models_weights_and_vocabularies(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[dict[str, torch.Tensor]] = []
    real = RUN.Trainer

    def trainer(model: Any, *args: Any, **kwargs: Any) -> Any:  # the weights at step 0
        started.append({name: w.clone() for name, w in model.weights().items()})
        return real(model, *args, **kwargs)

    monkeypatch.setattr(RUN, "Trainer", trainer)
    out = tmp_path / "tuned"
    # The size flags repeat the model's own values: equal values are fine.
    result = luong(
        "train", "dates", "--out", str(out), "--init-from", str(base), "--data-seed", "5",
        *TINY_DATES_FLAGS, "--lr", "0.01",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    (step_0,) = started
    assert same_weights(step_0, weights(base))
    assert not same_weights(weights(out), weights(base))  # and it trained on
    for name in ("src_vocab.json", "tgt_vocab.json"):
        assert (out / name).read_bytes() == (base / name).read_bytes()
    configs = [json.loads((folder / "config.json").read_text()) for folder in (out, base)]
    assert configs[0]["model"] == configs[1]["model"]
    # Recorded: config.toml relative to the run folder (as its data files), run.json as given.
    toml = tomllib.loads((out / "config.toml").read_text())
    kept = os.path.relpath(base, out)
    assert toml["train"]["init_from"] == kept and toml["train"]["lr"] == 0.01
    run = json.loads((out / "run.json").read_text())
    assert run["train_config"]["init_from"] == str(base)
    shutil.copytree(base, tmp_path / "base")  # luong runs shows the settings that differ
    runs = luong("runs", str(tmp_path), "--format", "json")
    assert runs.returncode == 0, runs.stderr.decode()
    assert [(row["run"], row["train.init_from"]) for row in json.loads(runs.stdout)] == [
        ("base", ""),
        ("tuned", kept),
    ]


CONFLICT = "conflicts with the model of {m}"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--attention", "general"], f"--attention general {CONFLICT} (dot)"),
        (["--enc-hidden", "16"], f"--enc-hidden 16 {CONFLICT} (8)"),
        (["--no-bidirectional"], f"--no-bidirectional {CONFLICT} (--bidirectional)"),
        (["--subword", "unigram"], f"--subword unigram {CONFLICT} (none)"),
        (["--joint-vocab"], f"--joint-vocab {CONFLICT} (--no-joint-vocab)"),
        (["--vocab-size", "30"], f"--vocab-size 30 {CONFLICT} (0)"),
        (
            ["--init-range", "0.1"],
            "init_range: draws every weight anew, which would undo init_from '{b}'; leave it 0, "
            "got 0.1",
        ),
        (["--config", "{cfg}"], f'[model] cell = "lstm" of {{cfg}} {CONFLICT} ("gru")'),
    ],
    ids=["attention", "size", "bool", "subword", "joint", "vocab-size", "init-range", "toml"],
)  # fmt: skip
def test_a_setting_that_conflicts_with_the_model_is_refused_in_one_line(
    base: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    cfg = tmp_path / "other.toml"
    cfg.write_text('[model]\ncell = "lstm"\n')
    out = tmp_path / "tuned"
    flags = [flag.format(cfg=cfg) for flag in flags]
    result = luong("train", "dates", "--out", str(out), "--init-from", str(base), *flags)
    assert error_line(result) == "luong: error: " + message.format(
        m=f"--init-from {base}", b=base, cfg=cfg
    )
    assert not out.exists()


def test_your_own_datas_tokens_and_a_prepared_corpus_conflict_too(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    own = ["--train", str(pairs["train"]), "--dev", str(pairs["dev"])]
    result = luong("train", *own, "--src-tokens", "space", "--out", str(tmp_path / "a"),
                   "--init-from", str(base))  # fmt: skip
    assert error_line(result) == (
        f"luong: error: --src-tokens space conflicts with the model of --init-from {base} (char)"
    )
    prepared = ["--data", str(tmp_path / "corpus"), "--dev", str(pairs["dev"])]
    result = luong("train", *prepared, "--out", str(tmp_path / "b"), "--init-from", str(base))
    assert error_line(result) == (
        "luong: error: --data: a prepared corpus brings its own vocabularies, --init-from the "
        "model's; give the training pairs as --train FILE.tsv"
    )


def test_a_folder_that_is_no_float_model_is_refused(base: Path, tmp_path: Path) -> None:
    int8 = tmp_path / "int8"
    assert luong("quantize", str(base), "--out", str(int8)).returncode == 0
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    shutil.copy(base / "run.json", unfinished)
    zoo = tmp_path / "zoo"
    for name in ("a", "b"):
        shutil.copytree(base, zoo / name)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    cases = {
        tmp_path / "missing": "no such folder",
        base / "run.json": "not a folder; expected a model folder (config.json and its weights) "
        "or a run folder",
        int8: "an int8 model (luong quantize), which decodes only and is not trained; start from "
        "the float model it was made from",
        unfinished: "a run folder that holds no model yet (its training has not finished); "
        f"finish it, or start from a checkpoint ({unfinished}/checkpoints/step-*)",
        zoo: "holds model folders (a, b), not a model of its own; start from one of them",
        tmp_path / "notes": "not a luong model folder (no config.json); expected a model folder "
        "or a run folder",
    }
    for folder, problem in cases.items():
        out = tmp_path / "tuned"
        result = luong("train", "dates", "--out", str(out), "--init-from", str(folder))
        assert error_line(result) == f"luong: error: --init-from {folder}: {problem}"
        assert not out.exists()


def test_the_python_api_takes_init_from_as_the_command_line_does(
    base: Path, tmp_path: Path
) -> None:
    config = TrainConfig(epochs=1, batch_size=32, progress=False)
    options = {"n_train": 64, "n_dev": 8, "n_test": 0}
    result = train("dates", tmp_path / "a", train_config=config, task_options=options,
                   init_from=base, log=lambda message: None)  # fmt: skip
    assert result.metrics["train_config"]["init_from"] == str(base)
    assert result.metrics["model_config"] == json.loads((base / "config.json").read_text())["model"]
    with pytest.raises(LuongError) as error:
        train("dates", tmp_path / "b", train_config=config, task_options=options,
              init_from=base, model_config=Seq2SeqConfig(attention="general"))  # fmt: skip
    assert str(error.value) == (
        f"model_config.emb_dim = 64 conflicts with the model of init_from {base} (8)"
    )
    with pytest.raises(
        TypeError, match=r"init_from: expected one model folder, got 2 \(an ensemble"
    ):
        train("dates", tmp_path / "c", init_from=[base, base])  # type: ignore[arg-type]


def test_preset_adapt_needs_init_from_and_shows_its_values(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    own = ["--train", str(pairs["train"]), "--dev", str(pairs["dev"])]
    result = luong("train", "--preset", "adapt", *own, "--out", str(tmp_path / "a"))
    assert error_line(result) == (
        "luong: error: --preset adapt: fine-tunes a trained model; name it with --init-from MODEL"
    )
    shown = luong("train", "--preset", "adapt", "--help").stdout.decode()
    text = " ".join(shown.split())
    own = len(dataclasses.fields(Seq2SeqConfig)) + len(dataclasses.fields(VocabConfig))
    assert text.count("(default: its own)") == own
    assert "training (overrides --config; defaults: adapt's):" in text
    for flag, value in (("--lr LR", ADAPT.train.lr), ("--batch-size BATCH_SIZE", 16)):
        start = text.index(flag + " ")
        assert f"(default: {value})" in text[start : text.index("--", start + len(flag))]


def test_preset_adapt_fine_tunes_on_your_own_data(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "adapted"
    own = ["--train", str(pairs["train"]), "--dev", str(pairs["dev"])]
    result = luong(
        "train", "--preset", "adapt", "--init-from", str(base), *own, "--out", str(out),
        "--epochs", "2", "--no-progress",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    toml = tomllib.loads((out / "config.toml").read_text())
    assert {k: toml["train"][k] for k in ("lr", "schedule", "batch_size", "patience")} == {
        "lr": 3e-4, "schedule": "constant", "batch_size": 16, "patience": 2
    }  # fmt: skip
    assert toml["model"] == json.loads((base / "config.json").read_text())["model"]
    assert toml["data"]["src_tokens"] == "char"
    assert json.loads((out / "metrics.json").read_text())["steps"] == 6  # 48 pairs: 3 a epoch


def test_mix_adds_general_pairs_to_the_training_pairs(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    own = ["--train", str(pairs["train"]), "--dev", str(pairs["dev"])]
    common = ["--init-from", str(base), *own, *TINY_MODEL_FLAGS]
    result = luong("train", *common, "--out", str(tmp_path / "a"), "--mix", str(pairs["mix"]),
                   "--mix-ratio", "0.5")  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert metrics["train_pairs"] == 48 + 24
    assert metrics["data"]["mixed"] == {"pairs": 24, "of": 100, "ratio": 0.5}
    assert tomllib.loads((tmp_path / "a" / "config.toml").read_text())["data"]["mix"] == (
        os.path.relpath(pairs["mix"], tmp_path / "a")
    )
    result = luong("train", *common, "--out", str(tmp_path / "b"), "--mix-ratio", "2")
    assert error_line(result) == (
        "luong: error: --mix-ratio: only with --mix FILE.tsv (the general pairs to mix in)"
    )


# The child: the luong command, signalled SIG at the CALL-th call of the loss
# (tests/test_robustness_runs.py's SIGNAL_AT).
SIGNAL_AT = """
    import os, signal, sys
    import luong.training.objective as objective
    from luong.cli import main

    call, sig, real, calls = int(sys.argv[1]), getattr(signal, sys.argv[2]), objective.loss_of, [0]

    def signal_then_call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == call:
            os.kill(os.getpid(), sig)
        return real(*args, **kwargs)

    objective.loss_of = signal_then_call
    sys.exit(main(sys.argv[3:]))
"""


def child(*args: str) -> subprocess.CompletedProcess[str]:
    result = forked_python(textwrap.dedent(SIGNAL_AT), *args)
    out, err = (stream.decode() for stream in (result.stdout, result.stderr))
    return subprocess.CompletedProcess(result.args, result.returncode, out, err)


@pytest.mark.parametrize("flags", [[], ["--l2sp", "5"]], ids=["plain", "l2sp"])
def test_a_fine_tuning_run_killed_resumes_from_its_own_checkpoint_bit_for_bit(
    base: Path, tmp_path: Path, flags: list[str]
) -> None:
    # With L2-SP too: the resumed run pulls toward the same anchor, the model's weights.
    def command(out: Path) -> list[str]:
        return ["train", "dates", "--out", str(out), "--init-from", str(base), "--data-seed", "3",
                *TINY_DATES_FLAGS, "--batch-size", "32", *flags]  # fmt: skip

    reference = child("0", "SIGTERM", *command(tmp_path / "reference"))
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    stopped = child("5", "SIGTERM", *command(out))
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr
    resumed = child("0", "SIGTERM", *command(out))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out}/checkpoints/step-0000005 (epoch 1, step 5/13)" in resumed.stderr
    assert same_weights(weights(out), weights(tmp_path / "reference"))
    assert not same_weights(weights(out), weights(base))


def test_a_run_folder_from_before_init_from_still_resumes(base: Path, tmp_path: Path) -> None:
    out = tmp_path / "old"
    shutil.copytree(base, out)
    # A run from before the field: neither config.toml nor run.json names it.
    toml = (out / "config.toml").read_text()
    assert 'init_from = ""\n' in toml
    (out / "config.toml").write_text(toml.replace('init_from = ""\n', ""))
    run = json.loads((out / "run.json").read_text())
    del run["train_config"]["init_from"]
    (out / "run.json").write_text(json.dumps(run))
    result = luong("train", "--out", str(out), "--resume")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().endswith(f"model and metrics.json written to {out}\n")


def test_a_fine_tuning_run_resumes_from_elsewhere_but_not_from_another_model(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, out = tmp_path / "model", tmp_path / "runs" / "tuned"
    shutil.copytree(base, model)
    flags = [*TINY_DATES_FLAGS, "--n-train", "64"]
    monkeypatch.chdir(tmp_path)  # run.json keeps "model", as given here
    done = luong("train", "dates", "--out", "runs/tuned", "--init-from", "model", *flags)
    assert done.returncode == 0, done.stderr.decode()
    # From another working directory, the run's own config.toml names the model from its
    # folder, and run.json knows the model by its weights.
    monkeypatch.chdir(out)
    assert luong("train", "--out", ".", "--resume").returncode == 0
    shutil.copy(out / "model.safetensors", model)  # the model's weights are another's now
    result = luong("train", "--out", ".", "--resume")
    assert error_line(result) == (
        "luong: error: . was fine-tuned from another model: the weights of init_from "
        "../../model are not those the run began from; choose another --out to start a new "
        "run, or restore the model to resume it"
    )


def test_a_model_folder_outside_a_run_takes_its_vocabulary_settings_from_its_files(
    base: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"  # the model alone: no config.toml records how it was built
    shutil.copytree(base, bare, ignore=shutil.ignore_patterns("checkpoints", "*.toml", "run.json"))
    out = tmp_path / "tuned"
    result = luong(
        "train", "dates", "--out", str(out), "--init-from", str(bare), "--vocab-size", "30"
    )
    assert error_line(result) == (
        f"luong: error: --vocab-size 30 conflicts with the model of --init-from {bare} (not "
        "recorded: no config.toml says how its vocabularies were built)"
    )
    # Its own config.toml names the default, which asks for nothing: it repeats the run.
    flags = [*TINY_DATES_FLAGS, "--n-train", "64"]
    assert (
        luong("train", "dates", "--out", str(out), "--init-from", str(bare), *flags).returncode == 0
    )
    again = luong("train", "--config", str(out / "config.toml"), "--out", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr.decode()
    assert same_weights(weights(tmp_path / "again"), weights(out))


def test_mix_draws_a_seeded_sample_and_takes_any_ratio(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    train, general = read_split(pairs["train"]).pairs, read_split(pairs["mix"]).pairs
    mixed, info = mix_pairs(train, general, 0.5)
    drawn = mixed[len(train) :]
    assert mixed[: len(train)] == train and len(drawn) == 24
    assert drawn == random.Random(0).sample(general, 24)  # seed 0, the same every time
    assert drawn != general[:24]  # not the file's first lines
    # a ratio as large as a float goes: every general pair (it was an OverflowError, exit 70)
    assert mix_pairs(train, general, 1e308)[1] == {
        "mixed": {"pairs": 100, "of": 100, "ratio": 1e308}
    }
    own = ["--train", str(pairs["train"]), "--dev", str(pairs["dev"])]
    result = luong(
        "train", "--init-from", str(base), *own, *TINY_MODEL_FLAGS, "--out", str(tmp_path / "a"),
        "--mix", str(pairs["mix"]), "--mix-ratio", "1e308",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert metrics["train_pairs"] == 48 + 100


def test_pairs_too_long_for_the_model_fine_tuned_ask_to_be_shortened(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    long = tmp_path / "long.tsv"
    long.write_text(pairs["train"].read_text() + "1/1/2000" * 30 + "\t2000-01-01\n")
    command = ["train", "--init-from", str(base), "--dev", str(pairs["dev"]), *TINY_MODEL_FLAGS]
    result = luong(*command, "--train", str(long), "--out", str(tmp_path / "a"))
    # it said: raise max_src_len (--max-src-len 240), which --init-from then refuses
    assert error_line(result) == (
        "luong: error: train_pairs: 1 sources are longer than the model's max_src_len=64 "
        "symbols (the longest has 240; the first is pair 49); the model of --init-from "
        f"{base} keeps its max_src_len, which a fine-tuning run cannot raise: shorten those "
        "sources or leave their pairs out"
    )
    result = luong(*command, "--train", str(pairs["train"]), "--dev", str(long), "--out",
                   str(tmp_path / "a"))  # fmt: skip
    said = error_line(result)
    assert said.startswith("luong: error: dev_pairs: 1 sources are longer") and "shorten" in said
    # a run still training (its checkpoints, no model yet), with pairs it could not read
    running = tmp_path / "running"
    shutil.copytree(base, running)
    for name in ("config.json", "model.safetensors", "src_vocab.json", "tgt_vocab.json"):
        (running / name).unlink()
    result = luong("train", "--init-from", str(running), "--train", str(long), "--dev",
                   str(pairs["dev"]), "--out", str(tmp_path / "b"))  # fmt: skip
    assert error_line(result).startswith(
        f"luong: error: --init-from {running}: a run folder that holds no model yet"
    )


def test_another_dropout_is_accepted_and_the_language_pair_kept(base: Path, tmp_path: Path) -> None:
    paired = tmp_path / "paired"
    shutil.copytree(base, paired)
    assert luong("pair", str(paired), "--src-lang", "en", "--tgt-lang", "de").returncode == 0
    out = tmp_path / "tuned"
    result = luong("train", "dates", "--out", str(out), "--init-from", str(paired),
                   *TINY_DATES_FLAGS, "--dropout", "0.3")  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()  # dropout shapes no weight
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["dropout"] == 0.3
    assert (config["src_lang"], config["tgt_lang"]) == ("en", "de")  # the base's pair


def test_l2sp_needs_init_from_and_a_share_at_most_one() -> None:
    with pytest.raises(ValueError, match=r"l2sp: expected a finite number >= 0, got -1"):
        TrainConfig(l2sp=-1)
    with pytest.raises(ValueError, match=r"l2sp: pulls the weights toward the model of init_from"):
        TrainConfig(l2sp=1.0)
    with pytest.raises(ValueError, match=r"at most 1; got 0\.01 x 200 = 2"):
        TrainConfig(init_from="runs/base", lr=0.01, l2sp=200.0)
    assert TrainConfig(init_from="runs/base", lr=0.01, l2sp=100.0).l2sp == 100.0


def test_l2sp_pulls_the_weights_back_to_the_models(
    base: Path, pairs: dict[str, Path], tmp_path: Path
) -> None:
    """L2-SP, decoupled: after each step every weight moves lr x l2sp of the way back to the
    --init-from model's. At a share of 1 the run ends where it began, bit for bit; at a
    share between, nearer the model than the run without it."""
    start = weights(base)
    own = ["--train", str(pairs["train"]), "--dev", str(pairs["dev"])]
    common = ["--init-from", str(base), *own, *TINY_MODEL_FLAGS, "--lr", "0.01",
              "--warmup-steps", "0", "--schedule", "constant"]  # fmt: skip

    def run(name: str, *flags: str) -> dict[str, torch.Tensor]:
        result = luong("train", *common, "--out", str(tmp_path / name), *flags)
        assert result.returncode == 0, result.stderr.decode()
        return weights(tmp_path / name)

    def distance(trained: dict[str, torch.Tensor]) -> float:
        return sum(float((trained[k] - start[k]).norm() ** 2) for k in start) ** 0.5

    assert same_weights(run("anchored", "--l2sp", "100"), start)  # 0.01 x 100: all the way
    free, pulled = run("free"), run("pulled", "--l2sp", "20")
    assert not same_weights(free, start) and not same_weights(pulled, start)
    assert distance(pulled) < distance(free)
