"""A training run from start to finish: task -> vocabularies -> model -> trainer -> test
scores -> run folder. What ``luong train`` does, as a library call.

    result = luong.train("dates", "runs/dates")
    result.metrics["test_exact_match"]

A run folder holds the model (``model.safetensors``, ``config.json``, the vocabularies),
``run.json`` (what the run was made of), ``metrics.json`` (what it gave) and
``checkpoints/``. A folder that holds a checkpoint is resumed, not overwritten.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from luong.config import Seq2SeqConfig, TrainConfig, config_from_dict, read_toml_tables
from luong.distributed import pick_device, setup
from luong.evaluation import PAIR_SCORES, REFERENCE_SCORES, evaluate, prefixed
from luong.files import read_json, write_json
from luong.model import Seq2Seq
from luong.tasks import TaskData, load_task, task_configs
from luong.trainer import Trainer
from luong.version import __version__
from luong.vocab import Vocab

__all__ = ["RunConfig", "TrainResult", "configure", "run", "test_scores", "train"]


@dataclass(frozen=True)
class RunConfig:
    """What a run is made of: a task and its data options, the architecture, the training."""

    task: str = "dates"  # a built-in task (luong.tasks.TASKS) or OWN_DATA ("tsv")
    data: dict[str, Any] = field(default_factory=dict)  # the options of ``load_task``
    model: Seq2SeqConfig = field(default_factory=Seq2SeqConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


@dataclass
class TrainResult:
    """What a run leaves: the best model (by dev exact match) and the metrics."""

    model: Seq2Seq
    metrics: dict[str, Any] = field(default_factory=dict)
    main: bool = True  # False on the other ranks under torchrun: rank 0 reports and writes


def configure(
    task: str = "dates",
    data: Mapping[str, Any] | None = None,
    *,
    preset: str | None = None,
    config_file: str | Path | None = None,
    model: Mapping[str, Any] | None = None,
    train: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Resolve a run's settings, later ones winning: the defaults of the task (or of
    ``preset``, a built-in task whose defaults your own data borrows), the ``[model]`` and
    ``[train]`` tables of ``config_file`` (TOML), then ``model`` and ``train`` (fields by name,
    the command line's flags).

    Raises:
        FileNotFoundError: ``config_file`` does not exist.
        ValueError: an unknown task, preset, table or field (named, with the valid ones), or
            a value a config refuses.
    """
    model_defaults, train_defaults = task_configs(preset or task)
    tables = read_toml_tables(config_file) if config_file is not None else {}
    model_fields = {**model_defaults.to_json(), **tables.get("model", {}), **(model or {})}
    train_fields = {**train_defaults.to_json(), **tables.get("train", {}), **(train or {})}
    return RunConfig(
        task,
        dict(data or {}),
        config_from_dict(Seq2SeqConfig, model_fields, "[model]"),
        config_from_dict(TrainConfig, train_fields, "[train]"),
    )


def train(
    task: str = "dates",
    out: str | Path | None = None,
    *,
    model_config: Seq2SeqConfig | None = None,
    train_config: TrainConfig | None = None,
    task_options: dict[str, Any] | None = None,
    data: TaskData | None = None,
    log: Callable[[str], None] | None = None,
    resume: bool = False,
) -> TrainResult:
    """Train on a task, evaluate on its test split and write the run folder.

    Args:
        task: a task name from ``luong.tasks.TASKS`` (or ``OWN_DATA`` with ``task_options``
            naming the files).
        out: the run folder (model files, checkpoints, ``metrics.json``); None writes nothing.
        model_config: the architecture; the task's default when None.
        train_config: the training settings; the task's default when None.
        task_options: options of the task's data (for dates: ``seed``, ``locales``, sizes).
        data: the task's data when the caller has loaded it already (``load_task``).
        log: where to report resuming and skipped steps (default: stderr).
        resume: require a checkpoint to resume from (``luong train --resume``).

    Returns:
        the trained model and its metrics (also in ``out/metrics.json``).

    Raises:
        ValueError: the run folder holds a different run, or a checkpoint is unreadable.
        TrainingDiverged: too many non-finite steps in a row.
        TrainingInterrupted: SIGINT, after a resumable checkpoint was written.
    """
    model_defaults, train_defaults = task_configs(task)
    config = RunConfig(
        task,
        dict(task_options or {}),
        model_config or model_defaults,
        train_config or train_defaults,
    )
    return run(config, out, data=data, log=log, resume=resume)


def run(
    config: RunConfig,
    out: str | Path | None = None,
    *,
    data: TaskData | None = None,
    log: Callable[[str], None] | None = None,
    resume: bool = False,
) -> TrainResult:
    """The run ``config`` describes: the data, vocabularies built on the training split, the
    model, the training loop, the test split's scores, the run folder.

    A run folder that already holds a checkpoint is resumed, not overwritten: the run
    continues from its latest checkpoint (a finished run is only evaluated again). Its
    ``run.json`` must then describe the same run (task, data options and configs).

    Args:
        config: the run.
        out: the run folder; None writes nothing.
        data: the task's data when the caller has loaded it already (``load_task``).
        log: where to report skipped lines, resuming and skipped steps (default: stderr).
        resume: require a checkpoint to resume from.

    Returns and raises as ``train``.
    """
    say = log or (lambda message: print(message, file=sys.stderr))
    if data is None:
        data = load_task(config.task, **config.data)
        for name, count in data.info.get("skipped_lines", {}).items():
            say(f"skipped {count} bad line{'s' * (count != 1)} in {name}")
    model_config, train_config = config.model, config.train
    torch.manual_seed(train_config.seed)
    src_vocab = Vocab.build(
        (s for s, _ in data.train), tokens=data.src_tokens, lowercase=data.lowercase
    )
    # Targets: NFC at most, so they are written as spelled (luong.vocab).
    tgt_vocab = Vocab.build((t for _, t in data.train), tokens=data.tgt_tokens, normalization="NFC")
    model = Seq2Seq(model_config, src_vocab, tgt_vocab, seed=train_config.seed)
    description = {
        "task": config.task,
        "task_options": {k: list(v) if isinstance(v, tuple) else v for k, v in config.data.items()},
        "model_config": model_config.to_json(),
        "train_config": train_config.to_json(),
        "seed": train_config.seed,
        "versions": {
            "luong": __version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "command": sys.argv,
    }
    world = setup(train_config.device)
    try:
        model.to(pick_device(train_config.device, world))
        # The trainer checks the data (source lengths) before anything is written.
        trainer = Trainer(model, data.train, data.dev, train_config, out, log=log, world=world)
        if out is not None and world.main:
            _check_or_write_run(Path(out), description)
        if not trainer.resume() and resume:
            raise ValueError(f"--resume: {out} holds no checkpoint to resume from")
        metrics = trainer.run()
    finally:
        world.close()
    description["world_size"] = world.size
    if not world.main:
        return TrainResult(model, {**metrics, **description}, main=False)
    metrics = {
        "task": config.task,
        **test_scores(model, data, train_config),
        **metrics,
        "train_pairs": len(data.train),
        "dev_pairs": len(data.dev),
        "test_pairs": len(data.test),
        "parameters": sum(p.numel() for p in model.parameters()),
        **{k: v for k, v in description.items() if k != "task"},
        "data": data.info,
    }
    if out is not None:
        model.save_pretrained(out)
        write_json(Path(out) / "metrics.json", metrics)
    return TrainResult(model, metrics)


def test_scores(model: Seq2Seq, data: TaskData, config: TrainConfig) -> dict[str, Any]:
    """The test split's figures under ``test_`` names (None without a test split).

    Pairs (dates): ``test_exact_match`` and ``test_char_accuracy``. Sources that may have
    several references (``data.references``: G2P, your own files): each unique source counts
    once, right when its output equals any reference: ``test_exact_match``, ``test_wer``,
    ``test_per``, ``test_sources`` and the unknown-symbol counts (``luong.evaluation``).
    """
    names = REFERENCE_SCORES if data.references else PAIR_SCORES
    empty = prefixed({}, "test_", ("exact_match", "char_accuracy"))
    if not data.test:
        return empty
    scores = evaluate(
        model,
        data.test,
        references=data.references,
        batch_size=config.eval_batch_size,
        max_len=config.max_decode_len or None,
    )
    return {**empty, **prefixed(scores, "test_", names)}


# Settings that may differ between a run and its resumption: they change no result.
_COSMETIC = {"progress", "eval_batch_size", "device"}


def _check_or_write_run(out: Path, description: dict[str, Any]) -> None:
    """Write ``out/run.json`` for a new run; for an existing one, check it is the same run."""
    path = out / "run.json"
    if not path.is_file():
        out.mkdir(parents=True, exist_ok=True)
        write_json(path, description)
        return
    saved = read_json(path)
    differences = []
    for key in ("task", "task_options", "model_config", "train_config"):
        old, new = saved.get(key), description[key]
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [
                f"{key}.{name}: {old.get(name)!r} -> {new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if name not in _COSMETIC and old.get(name) != new.get(name)
            ]
        elif old != new:
            differences.append(f"{key}: {old!r} -> {new!r}")
    if differences:
        raise ValueError(
            f"{out} holds another run ({'; '.join(differences)}); "
            "choose another --out to start a new run"
        )
