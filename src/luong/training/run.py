"""A training run from start to finish: task -> vocabularies -> model -> trainer -> test
scores -> run folder. What ``luong train`` does, as a library call.

    result = luong.train("dates", "runs/dates")
    result.metrics["test_exact_match"]

A run folder holds the model (``model.safetensors``, ``config.json``, the vocabularies),
``run.json`` (what the run was made of), ``metrics.json`` (what it gave) and
``checkpoints/``. A folder that holds a checkpoint is resumed, not overwritten.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import platform
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from luong.common.errors import LuongError
from luong.common.files import (
    FolderLocked,
    locked,
    read_json,
    shown_names,
    stale_write_leftovers,
    write_json,
    write_text,
)
from luong.common.folder_files import LOCK, METRICS, MODEL_CONFIG, RUN, RUN_CONFIG, TRAIN_LOG
from luong.common.languages import check_language
from luong.common.progress import stage
from luong.config.model import Seq2SeqConfig
from luong.config.presets import Preset
from luong.config.run import DATA_FILES, RunConfig, run_toml
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.data.prepare import build_vocabularies
from luong.data.prepared import PreparedData, prepared_task
from luong.evaluation.evaluate import BLEU_SCORES, PAIR_SCORES, REFERENCE_SCORES, evaluate, prefixed
from luong.model.folder import is_int8_folder, language_pair
from luong.model.seq2seq import Seq2Seq
from luong.tasks import OWN_DATA, TaskData, load_task, task_configs
from luong.training.data import check_lengths
from luong.training.distributed import pick_device, setup
from luong.training.fine_tuning import (
    check_config,
    find_init_model,
    load_init_model,
    weights_sha256,
)
from luong.training.settings import relative, same_files
from luong.training.trainer import Trainer
from luong.version import __version__

__all__ = [
    "RunConfig",
    "TrainResult",
    "build_vocabularies",
    "run",
    "test_scores",
    "train",
]

LOGGER = logging.getLogger("luong")
# Your own data's options with a prepared corpus (``luong train --data``): the corpus's folder
# (its vocabularies), and dev and test as text files.
_PREPARED_OPTIONS = {"prepared", "dev", "test", "skip_bad_lines"}


@dataclass
class TrainResult:
    """What a run leaves: the best model (by dev exact match) and the metrics."""

    model: Seq2Seq
    metrics: dict[str, Any] = field(default_factory=dict)
    main: bool = True  # False on the other ranks under torchrun: rank 0 reports and writes


def train(
    task: str = "dates",
    out: str | Path | None = None,
    *,
    model_config: Seq2SeqConfig | None = None,
    train_config: TrainConfig | None = None,
    vocab_config: VocabConfig | None = None,
    task_options: dict[str, Any] | None = None,
    data: TaskData | None = None,
    log: Callable[[str], None] | None = None,
    resume: bool = False,
    init_from: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train on a task, evaluate on its test split and write the run folder.

    Args:
        task: a task name from ``luong.tasks.TASKS`` (or ``OWN_DATA`` with ``task_options``
            naming the files).
        out: the run folder (model files, checkpoints, ``metrics.json``); None writes nothing.
        model_config: the architecture; the task's default when None.
        train_config: the training settings; the task's default when None.
        vocab_config: how the vocabularies are built; the task's default when None.
        task_options: options of the task's data (for dates: ``seed``, ``locales``, sizes).
        data: the task's data when the caller has loaded it already (``load_task``).
        log: where to report resuming and skipped steps (default: stderr).
        resume: require a checkpoint to resume from (``luong train --resume``).
        init_from: fine-tune this trained model (a model folder, or a run folder: its
            model; ``TrainConfig.init_from``, ``luong.training.fine_tuning``): its weights, its
            vocabularies and its architecture (``model_config`` and ``vocab_config`` then
            default to its own, and may repeat them, not change them), trained on the task's
            data with ``train_config``.

    Returns:
        the trained model and its metrics (also in ``out/metrics.json``).

    Raises:
        ValueError: the run folder holds a different run, or a checkpoint is unreadable;
            an ``init_from`` that is no float model folder, or a setting that conflicts
            with its model.
        TrainingDiverged: too many non-finite steps in a row.
        TrainingInterrupted: SIGINT or SIGTERM, after a resumable checkpoint was written.
    """
    defaults = task_configs(task)
    if init_from is not None:
        init = find_init_model(init_from, "init_from")
        given = train_config or defaults.train
        if given.init_from and not same_files(given.init_from, os.fspath(init_from)):
            raise LuongError(
                f"init_from: {os.fspath(init_from)!r}, but train_config.init_from says "
                f"{given.init_from!r}; give one"
            )
        train_config = dataclasses.replace(given, init_from=os.fspath(init_from))
        defaults = Preset(init.model, train_config, init.vocab_config())
    config = RunConfig(
        task,
        dict(task_options or {}),
        model_config or defaults.model,
        train_config or defaults.train,
        vocab_config or defaults.vocab,
    )
    return run(config, out, data=data, log=log, resume=resume)


def _data_name(config: RunConfig) -> str:
    """What a run reads, as its first line says: the files of its own data, or its task."""
    if config.task != OWN_DATA:
        return f"the {config.task} task's data"
    if "prepared" in config.data:
        return f"the prepared corpus {config.data['prepared']}"
    files = []  # a split is one TSV file, or a source file and a target file
    for split in ("train", "dev", "test"):
        given = config.data.get(split) or ()
        files += [str(given)] if isinstance(given, (str, Path)) else [str(f) for f in given]
    return ", ".join(files)


def run(
    config: RunConfig,
    out: str | Path | None = None,
    *,
    data: TaskData | None = None,
    log: Callable[[str], None] | None = None,
    resume: bool = False,
    flag: str = "--out",
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
        flag: what messages call the run folder (``luong po --adapt`` names its own).

    Returns and raises as ``train``.
    """
    say = log or LOGGER.warning
    languages = _languages(config.vocab, out)
    prepared: PreparedData | None = None
    if data is None:
        with stage(f"reading {_data_name(config)}"):
            if config.task == OWN_DATA and "prepared" in config.data:
                prepared, data = _prepared(config.data)
            else:
                data = load_task(config.task, **config.data)
        for name, count in data.info.get("skipped_lines", {}).items():
            say(f"skipped {count} bad line{'s' * (count != 1)} in {name}")
    model_config, train_config = config.model, config.train
    torch.manual_seed(train_config.seed)
    if train_config.init_from:  # fine-tuning: the model's weights and vocabularies
        init = find_init_model(train_config.init_from, "init_from")
        if prepared is not None:
            raise LuongError(
                "init_from: a prepared corpus brings its own vocabularies, the model its "
                "own; give the training pairs as files"
            )
        check_config(init, model_config, config.vocab)
        init_sha256: dict[str, str] = {"init_sha256": weights_sha256(init)}
        model = load_init_model(init, model_config, train_config.seed)
        model.src_lang = languages[0] or model.src_lang  # given: the model's own or new
        model.tgt_lang = languages[1] or model.tgt_lang
    else:
        init_sha256 = {}
        if prepared is not None:  # the corpus's own: its ids mean their symbols
            src_vocab, tgt_vocab = prepared.src_vocab, prepared.tgt_vocab
        else:
            with stage(f"learning the vocabularies from {len(data.train):,} training pairs"):
                src_vocab, tgt_vocab = build_vocabularies(data, config.vocab)
        model = Seq2Seq(model_config, src_vocab, tgt_vocab, seed=train_config.seed)
        if train_config.init_range:  # Luong et al. 2015's U(-0.1, 0.1) instead of each layer's
            model.init_uniform_(train_config.init_range, train_config.seed)
        model.src_lang, model.tgt_lang = languages
    description = {
        "task": config.task,
        "task_options": {k: list(v) if isinstance(v, tuple) else v for k, v in config.data.items()},
        "model_config": model_config.to_json(),
        "train_config": train_config.to_json(),
        "vocab_config": config.vocab.to_json(),
        "seed": train_config.seed,
        # A prepared corpus is known by its manifest's SHA-256 (which holds every file's).
        "data_sha256": {**data.sha256(), **({"train": prepared.sha256} if prepared else {})},
        # The model a fine-tuning run started from, known by its weights wherever it is.
        **init_sha256,
        "versions": {
            "luong": __version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "command": sys.argv,
    }
    world = setup(train_config.device)
    folder = Path(out) if out is not None and world.main else None
    with ExitStack() as lock:
        try:
            model.to(pick_device(train_config.device, world))
            # The trainer checks the data (source lengths) before anything is written, and
            # the test split is checked here, not when it is decoded after the last epoch.
            check_lengths(model, data.test, "test_pairs", train_config.init_from)
            train_data = prepared if prepared is not None else data.train
            trainer = Trainer(model, train_data, data.dev, train_config, out, log=log, world=world)
            if folder is not None:
                _check_run_folder(folder, flag)
                folder.mkdir(parents=True, exist_ok=True)
                _lock_run_folder(folder, lock, flag)
                for leftover in stale_write_leftovers(folder):
                    leftover.unlink(missing_ok=True)
                _check_or_write_run(folder, description, flag)
                if not (folder / RUN_CONFIG).is_file():
                    write_text(folder / RUN_CONFIG, run_toml(_as_kept_in(folder, config)))
                lock.enter_context(_log_to_file(folder / TRAIN_LOG))
            if not trainer.resume() and resume:
                raise LuongError(f"--resume: {out} holds no checkpoint to resume from")
            metrics = trainer.run()
        finally:
            world.close()
        description["world_size"] = world.size
        if not world.main:
            return TrainResult(model, {**metrics, **description}, main=False)
        metrics["train_pairs"] = len(trainer.data)
        return _finish(config, model, data, metrics, description, folder, trainer.bleu)


def _finish(
    config: RunConfig,
    model: Seq2Seq,
    data: TaskData,
    metrics: dict[str, Any],
    description: dict[str, Any],
    out: Path | None,
    bleu: bool,
) -> TrainResult:
    """Score the test split (with BLEU and chrF when ``bleu``) and write the model and
    ``metrics.json`` (rank 0)."""
    train_config = config.train
    metrics = {
        "task": config.task,
        **test_scores(model, data, train_config, bleu=bleu),
        **metrics,
        "dev_pairs": len(data.dev),
        "test_pairs": len(data.test),
        "parameters": sum(p.numel() for p in model.parameters()),
        **{k: v for k, v in description.items() if k != "task"},
        "data": data.info,
    }
    if out is not None:
        model.save_pretrained(out)
        write_json(out / METRICS, metrics)
    return TrainResult(model, metrics)


def test_scores(
    model: Seq2Seq, data: TaskData, config: TrainConfig, bleu: bool = False
) -> dict[str, Any]:
    """The test split's figures under ``test_`` names (None without a test split), decoded
    as ``config`` says (``test_beam``, ``test_alpha``).

    Pairs (dates): ``test_exact_match`` and ``test_char_accuracy``. Sources that may have
    several references (``data.references``: G2P, your own files): each unique source counts
    once, right when its output equals any reference: ``test_exact_match``, ``test_wer``,
    ``test_per``, ``test_sources`` and the unknown-symbol counts (``luong.evaluation.evaluate``).
    With ``bleu``: ``test_bleu``, ``test_chrf`` and their sacrebleu signatures.
    """
    names = (*(REFERENCE_SCORES if data.references else PAIR_SCORES), *(BLEU_SCORES * bleu))
    empty = prefixed({}, "test_", ("exact_match", "char_accuracy"))
    if not data.test:
        return empty
    scores = evaluate(
        model,
        data.test,
        config.test_search,
        references=data.references,
        bleu=bleu,
        batch_size=config.eval_batch_size,
    )
    return {**empty, **prefixed(scores, "test_", names)}


# Settings that may differ between a run and its resumption: they change no result.
_COSMETIC = {
    "progress",
    "eval_batch_size",
    "device",
    "checkpoint_every",
    "keep_checkpoints",
    "log_every",
    "tensorboard",
}


def _prepared(options: Mapping[str, Any]) -> tuple[PreparedData, TaskData]:
    """A prepared corpus and the dev and test files that go with it (``luong train --data``).

    Raises:
        ValueError: an option that does not go with a prepared corpus, no dev, or as
            ``luong.data.prepared.prepared_task``.
    """
    others = sorted(set(options) - _PREPARED_OPTIONS)
    if others:
        raise LuongError(
            f"{', '.join(others)}: not an option of a prepared corpus (its own settings are "
            "those luong prepare was given); expected some of "
            f"{', '.join(sorted(_PREPARED_OPTIONS))}"
        )
    if "dev" not in options:
        raise LuongError("dev: a prepared corpus needs dev pairs (--dev FILE.tsv)")
    return prepared_task(
        options["prepared"],
        options["dev"],
        options.get("test"),
        skip_bad_lines=bool(options.get("skip_bad_lines", False)),
    )


def _as_kept_in(folder: Path, config: RunConfig) -> RunConfig:
    """``config`` as the run folder ``folder`` keeps it in ``config.toml``: your own data's
    files relative to the folder, where every TOML config's relative paths are read from,
    so that ``luong train --config FOLDER/config.toml`` repeats the run from any working
    directory (and from a copy of the whole tree: no absolute path of this machine)."""
    if config.train.init_from:  # the model a fine-tuning run started from
        train = dataclasses.replace(
            config.train, init_from=relative(config.train.init_from, folder)
        )
        config = dataclasses.replace(config, train=train)
    if config.task != OWN_DATA:
        return config

    def kept(value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [kept(one) for one in value]
        return relative(value, folder) if isinstance(value, str | os.PathLike) else value

    data = {k: kept(v) if k in DATA_FILES else v for k, v in config.data.items()}
    return dataclasses.replace(config, data=data)


@contextmanager
def _log_to_file(path: Path) -> Iterator[None]:
    """Append the "luong" logger's records to ``path`` while the run lasts (at least its
    INFO records: a logger left at NOTSET is raised to INFO meanwhile)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    level = LOGGER.level
    if level == logging.NOTSET:
        LOGGER.setLevel(logging.INFO)
    LOGGER.addHandler(handler)
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)
        handler.close()


def _check_run_folder(out: Path, flag: str) -> None:
    """``out`` is new, empty or a run folder of ours (it has ``run.json``): never a folder of
    the user's own files, which the run would overwrite."""
    if out.exists() and not out.is_dir():
        raise LuongError(f"{out}: not a folder; {flag} names the run folder to write")
    if is_int8_folder(out):
        raise LuongError(
            f"{out}: holds an int8 model (luong quantize), which decodes only and is not "
            f"trained; train or resume the float run it was made from, or choose another {flag}"
        )
    if not out.is_dir() or (out / RUN).is_file():
        return
    leftovers = set(stale_write_leftovers(out))  # a run killed while it wrote run.json
    others = sorted(
        path.name for path in out.iterdir() if path.name != LOCK and path not in leftovers
    )
    if others:
        shown = shown_names(others)
        raise LuongError(
            f"{out}: not empty and not a luong run folder (it holds {shown}, but no {RUN}); "
            f"choose a new or empty folder for {flag}"
        )


def _lock_run_folder(out: Path, stack: ExitStack, flag: str) -> None:
    """One writer per run folder, until ``stack`` closes: a second ``luong train`` on it is
    refused at once (its start-up clean-up would delete the first one's partial files)."""
    try:
        stack.enter_context(locked(out))
    except FolderLocked as error:
        raise FolderLocked(
            f"{out}: another luong train (process {error.pid or '?'}) is writing this run "
            f"folder; wait for it to end, or choose another {flag}",
            error.pid,
        ) from None


def _languages(vocab: VocabConfig, out: str | Path | None) -> tuple[str | None, str | None]:
    """The language pair the model records: ``vocab``'s codes (checked), or when it gives
    none, the pair ``out``'s model already records (``luong pair`` after the run), so that
    evaluating a finished run again does not lose it.

    Raises:
        ValueError: a code babel does not know (``luong.common.languages.check_language``).
    """
    codes = (vocab.src_lang or None, vocab.tgt_lang or None)
    for name, code in zip(("src_lang", "tgt_lang"), codes, strict=True):
        if code is not None:
            check_language(code, name)
    if codes == (None, None) and out is not None and (Path(out) / MODEL_CONFIG).is_file():
        path = Path(out) / MODEL_CONFIG
        try:
            return language_pair(read_json(path), path)
        except ValueError:
            return codes  # an unreadable config.json is from_pretrained's to report
    return codes


def _check_or_write_run(out: Path, description: dict[str, Any], flag: str) -> None:
    """Write ``out/run.json`` for a new run; for an existing one, check it is the same run."""
    path = out / RUN
    if not path.is_file():
        out.mkdir(parents=True, exist_ok=True)
        write_json(path, description)
        return
    saved = read_json(path)
    if not isinstance(saved, dict):
        raise LuongError(
            f"{path}: not a luong run description (expected a JSON object, got "
            f"{type(saved).__name__}); choose another {flag} to start a new run"
        )
    own_data, hashed = description["task"] == OWN_DATA, isinstance(saved.get("data_sha256"), dict)
    # A field added to a config since the run began is missing from its run.json: there it
    # reads as its default, which the run had without the field.
    defaults = {"model_config": Seq2SeqConfig().to_json(), "train_config": TrainConfig().to_json()}

    def differs(key: str, name: str, old: dict[str, Any], new: dict[str, Any]) -> bool:
        before = old.get(name, defaults.get(key, {}).get(name))
        if name in _COSMETIC or before == new.get(name):
            return False
        if key == "train_config" and name == "init_from" and before and new.get(name):
            # The same model named from another working directory, or moved: known by its
            # weights (below), else by its path.
            return "init_sha256" not in saved and not same_files(before, new[name])
        if key == "task_options" and own_data and name in DATA_FILES:
            # Your own data's files, perhaps named another way (from config.toml's folder,
            # from another working directory): with the hashes, their contents are compared
            # below.
            return not (
                name in old and name in new and (hashed or same_files(old[name], new[name]))
            )
        return True

    differences = []
    for key in ("task", "task_options", "model_config", "train_config"):
        old, new = saved.get(key), description[key]
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [
                f"{key}.{name}: {old.get(name, defaults.get(key, {}).get(name))!r} -> "
                f"{new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if differs(key, name, old, new)
            ]
        elif old != new:
            differences.append(f"{key}: {old!r} -> {new!r}")
    if differences:
        raise LuongError(
            f"{out} holds another run ({'; '.join(differences)}); "
            f"choose another {flag} to start a new run"
        )
    old_init, new_init = saved.get("init_sha256"), description.get("init_sha256")
    if old_init is not None and new_init is not None and old_init != new_init:
        raise LuongError(
            f"{out} was fine-tuned from another model: the weights of init_from "
            f"{description['train_config']['init_from']} are not those the run began from; "
            f"choose another {flag} to start a new run, or restore the model to resume it"
        )
    # A run folder from before the hashes has none: its checkpoint's vocabularies are
    # compared with the rebuilt ones instead (checkpoint.read_checkpoint).
    old_sha, new_sha = saved.get("data_sha256"), description["data_sha256"]
    if isinstance(old_sha, dict):
        files = description["task_options"] if description["task"] == OWN_DATA else {}
        if "prepared" in files:  # luong train --data: the training pairs are the corpus's
            files = {**files, "train": files["prepared"]}
        changed = [
            split + (f" ({files[split]})" if split in files else "")
            for split in new_sha
            if old_sha.get(split) != new_sha[split]
        ]
        if changed:
            raise LuongError(
                f"{out} was trained on other data: {', '.join(changed)} changed since the run "
                f"began; choose another {flag} to start a new run, or restore the data to "
                "resume it"
            )
