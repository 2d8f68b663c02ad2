"""The model a fine-tuning run starts from (``luong train --init-from MODEL``): Luong and
Manning (2015) adapted a general model to a new domain by training it further on a little
in-domain data.

A fine-tuning run takes three things from the model and nothing else:

1. its weights (the new run's step 0 is the model);
2. its vocabularies, copied into the new run as they are (never learned again from the new
   data: the weights' rows mean their symbols);
3. its ``[model]`` settings: a setting given to the run that differs from the model's is
   refused, naming the setting, the value given and the model's (``check_given``). Dropout
   alone may differ (``FREE_MODEL_FIELDS``): it shapes no weight.

Its training (schedule, learning rate, epochs, warm-up, early stopping, dev selection) and
its data are the run's own. The vocabulary settings the model was built with are read from
its run's ``config.toml`` where it has one (a run folder, a checkpoint of one, a folder
derived from one), and otherwise from its vocabularies themselves (sentencepiece or not,
joint or not, characters or tokens).

    init = find_init_model("runs/general", "--init-from")
    model = load_init_model(init, init.model, seed=0)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import shown_names
from luong.common.folder_files import (
    CHECKPOINTS,
    MODEL_CONFIG,
    RUN,
    RUN_CONFIG,
    SRC_VOCAB,
    TGT_VOCAB,
    WEIGHTS,
)
from luong.config.model import Seq2SeqConfig
from luong.config.run import read_toml_tables, run_of
from luong.config.vocab import VocabConfig
from luong.data.subword import SubwordVocab, load_vocab
from luong.model.folder import is_int8_folder, language_pair, read_model_config
from luong.model.seq2seq import Seq2Seq

__all__ = [
    "FREE_MODEL_FIELDS",
    "TOKEN_OPTIONS",
    "InitModel",
    "check_config",
    "check_given",
    "find_init_model",
    "load_init_model",
    "weights_sha256",
]

FREE_MODEL_FIELDS: tuple[str, ...] = ("dropout",)
"""The ``[model]`` settings a fine-tuning run may change: they shape no weight."""

TOKEN_OPTIONS: tuple[str, ...] = ("src_tokens", "tgt_tokens")
"""Your own data's options that say how its text is cut (``luong.tasks.tsv.load``): a plain
vocabulary's own, which a fine-tuning run may repeat but not change."""

# The vocabulary settings only a run's config.toml records (the vocabularies do not show them).
_RECORDED_ONLY = ("vocab_size", "min_count")


@dataclass(frozen=True)
class InitModel:
    """A trained model to start from, read (not loaded): where it is and its settings."""

    name: str  # how messages name it: "--init-from runs/general"
    folder: Path  # the model folder (a run folder is one)
    model: Seq2SeqConfig  # its architecture (config.json)
    # The VocabConfig fields its vocabularies were built with, where known (the languages
    # where config.json records them).
    vocab: dict[str, Any] = field(default_factory=dict)
    # How its plain vocabularies cut text ("char" or "space"); none for sentencepiece.
    tokens: dict[str, str] = field(default_factory=dict)

    def vocab_config(self) -> VocabConfig:
        """Its vocabulary settings as a ``VocabConfig`` (what is not known: the defaults)."""
        return VocabConfig(**self.vocab)


def find_init_model(folder: object, flag: str = "init_from") -> InitModel:
    """The model ``folder`` names: a model folder, or a run folder (which holds its model);
    ``flag`` is what messages call the setting (``"--init-from"`` on the command line).

    Raises:
        TypeError: ``folder`` is not one path (several: an ensemble).
        ValueError: no such folder, not a folder, an int8 model, a folder of model folders,
            a run folder without its model yet, no model folder, or a damaged file (each
            one line naming the folder).
    """
    if isinstance(folder, list | tuple):
        raise LuongTypeError(
            f"{flag}: expected one model folder, got {len(folder)} (an ensemble decodes as one "
            "but trains as its members: start from one of them)"
        )
    if not isinstance(folder, str | os.PathLike):
        raise LuongTypeError(f"{flag}: expected a model folder, got {type(folder).__name__}")
    path = Path(folder)
    name = f"{flag} {os.fspath(folder)}"
    if not path.exists():
        raise LuongError(f"{name}: no such folder")
    if not path.is_dir():
        raise LuongError(
            f"{name}: not a folder; expected a model folder ({MODEL_CONFIG} and its weights) or "
            "a run folder"
        )
    if is_int8_folder(path):
        raise LuongError(
            f"{name}: an int8 model (luong quantize), which decodes only and is not trained; "
            "start from the float model it was made from"
        )
    if not (path / MODEL_CONFIG).is_file():
        models = sorted(p.name for p in path.iterdir() if (p / MODEL_CONFIG).is_file())
        if models:
            raise LuongError(
                f"{name}: holds model folders ({shown_names(models)}), not a model of its "
                "own; start from one of them"
            )
        if (path / RUN).is_file():
            raise LuongError(
                f"{name}: a run folder that holds no model yet (its training has not "
                f"finished); finish it, or start from a checkpoint ({path / CHECKPOINTS}/step-*)"
            )
        raise LuongError(
            f"{name}: not a luong model folder (no {MODEL_CONFIG}); expected a model folder or "
            "a run folder"
        )
    try:
        config_path, _, raw = read_model_config(path)
        model = Seq2SeqConfig.from_json(raw.get("model"))
        src_lang, tgt_lang = language_pair(raw, config_path)
        src_vocab, tgt_vocab = load_vocab(path / SRC_VOCAB), load_vocab(path / TGT_VOCAB)
    except (OSError, ValueError) as error:
        raise LuongError(f"{flag}: {error}") from None
    subword = src_vocab.kind if isinstance(src_vocab, SubwordVocab) else "none"
    vocab: dict[str, Any] = {"subword": subword, "joint_vocab": src_vocab == tgt_vocab}
    recorded = _recorded_tables(path)
    recorded_vocab = recorded.get("vocab", {})
    if all(recorded_vocab.get(key) == vocab[key] for key in vocab):
        vocab |= {key: recorded_vocab[key] for key in _RECORDED_ONLY if key in recorded_vocab}
    vocab |= {key: code for key, code in (("src_lang", src_lang), ("tgt_lang", tgt_lang)) if code}
    tokens = {
        key: one.tokens
        for key, one in zip(TOKEN_OPTIONS, (src_vocab, tgt_vocab), strict=True)
        if not isinstance(one, SubwordVocab)
    }
    return InitModel(name, path, model, vocab, tokens)


def _recorded_tables(folder: Path) -> dict[str, Any]:
    """The TOML tables of the run ``folder``'s model comes from (its own ``config.toml``,
    else its run's: ``run_of``); none when there is none or it does not read."""
    path = folder / RUN_CONFIG
    if not path.is_file():
        run = run_of(folder)
        path = run / RUN_CONFIG if run is not None else path
    try:
        return read_toml_tables(path) if path.is_file() else {}
    except (OSError, ValueError):  # the run's own commands report a damaged file
        return {}


def _own(init: InitModel, table: str) -> dict[str, Any]:
    """The model's known values of ``table``: "model", "vocab" or "data" (its tokens)."""
    if table == "model":
        return {k: v for k, v in init.model.to_json().items() if k not in FREE_MODEL_FIELDS}
    return dict(init.vocab if table == "vocab" else init.tokens)


def check_given(
    init: InitModel, table: str, given: Mapping[str, Any], source: str | os.PathLike[str] | None
) -> None:
    """Refuse a setting of ``given`` that differs from the model's: ``table`` is "model",
    "vocab" or "data" (``TOKEN_OPTIONS`` alone are checked there); ``source`` says where the
    values come from: None for the command line's flags (``--attention dot``), a TOML file
    (``[model] attention = "dot" of FILE``), or a name (``model_config``: its fields).

    A vocabulary setting the model's folder does not record (``vocab_size``, ``min_count``
    of a model folder outside any run) is refused when given other than its default: the
    vocabularies are the model's own, whatever it says.

    Raises:
        ValueError: ``--attention dot conflicts with the model of --init-from X (general)``.
    """
    own = _own(init, table)
    for name, value in given.items():
        if table == "model" and name in FREE_MODEL_FIELDS:
            continue
        if table == "data" and name not in TOKEN_OPTIONS:
            continue
        if name in own and own[name] == value:
            continue
        if name not in own and not (table == "vocab" and name in _RECORDED_ONLY):
            continue  # nothing to differ from: a subword model's tokens, an unknown pair
        if name not in own and value == getattr(VocabConfig(), name):
            continue  # the default asks for nothing (a config.toml written by such a run)
        if name in own:
            mine = _shown(name, own[name], source, value_only=True)
        else:
            mine = f"not recorded: no {RUN_CONFIG} says how its vocabularies were built"
        raise LuongError(
            f"{_shown(name, value, source, table=table)} conflicts with the model of "
            f"{init.name} ({mine})"
        )


def _shown(
    name: str,
    value: Any,
    source: str | os.PathLike[str] | None,
    *,
    table: str = "",
    value_only: bool = False,
) -> str:
    """A setting as its ``source`` spells it: a flag (``--attention dot``,
    ``--no-input-feed``), a TOML key (``attention = "dot"``) or a field."""
    if source is None:
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            return ("--" if value else "--no-") + name.replace("_", "-")
        return str(value) if value_only else f"{flag} {value}"
    shown = json.dumps(value, ensure_ascii=False)  # TOML's spelling of a str, number, bool
    if value_only:
        return shown
    if isinstance(source, str):
        return f"{source}.{name} = {shown}"
    return f"[{table}] {name} = {shown} of {os.fspath(source)}"


def check_config(init: InitModel, model: Seq2SeqConfig, vocab: VocabConfig) -> None:
    """Refuse a run's whole ``model`` and ``vocab`` configs where they differ from the
    model's (``check_given`` on every field; a language left empty is the model's).

    Raises:
        ValueError: as ``check_given``, naming ``model_config.FIELD`` or ``vocab_config.FIELD``.
    """
    check_given(init, "model", model.to_json(), "model_config")
    default = VocabConfig()
    given = {
        f.name: getattr(vocab, f.name)
        for f in fields(vocab)
        if f.name in init.vocab or getattr(vocab, f.name) != getattr(default, f.name)
    }
    for key in ("src_lang", "tgt_lang"):  # empty: unknown, so the model's
        if given.get(key) == "":
            del given[key]
    check_given(init, "vocab", given, "vocab_config")


def load_init_model(init: InitModel, config: Seq2SeqConfig, seed: int) -> Seq2Seq:
    """The model of ``init`` to train further: its weights, its vocabularies (the same
    objects the folder's files give, saved again byte for byte) and its language pair, as a
    model of ``config`` (the model's own, dropout aside: ``check_config`` first).

    Raises:
        ValueError: as ``Seq2Seq.from_pretrained`` (a damaged file, a changed vocabulary).
    """
    trained = Seq2Seq.from_pretrained(init.folder)
    if dataclasses.replace(config, dropout=trained.config.dropout) != trained.config:
        raise LuongError(f"{init.name}: config: expected the model's own settings, got {config}")
    model = Seq2Seq(config, trained.src_vocab, trained.tgt_vocab, seed=seed)
    model.load_state_dict(trained.state_dict())
    model.src_lang, model.tgt_lang = trained.src_lang, trained.tgt_lang
    return model


def weights_sha256(init: InitModel) -> str:
    """The SHA-256 (hex) of the model's weights file: what a fine-tuning run's ``run.json``
    knows its starting model by, wherever the folder is named from or moved to."""
    digest = hashlib.sha256()
    with open(init.folder / WEIGHTS, "rb") as weights:
        for block in iter(lambda: weights.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()
