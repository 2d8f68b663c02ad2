"""A model folder's ``config.json`` read and checked, with the files beside it: the keys it
records beside the ``Seq2SeqConfig`` (the vocabulary files' SHA-256, an int8 model's parts,
the language pair), the language pair recorded afterwards (``luong pair``), the config's sizes
against the weights' header, and what to do with a run folder that holds no model yet.
``luong.model.seq2seq`` writes the folder (``Seq2Seq.save_pretrained``) and loads it
(``Seq2Seq.from_pretrained``) through these; no torch here.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from luong.common.errors import LuongError
from luong.common.files import MAX_JSON_BYTES, read_bounded, write_text
from luong.common.folder_files import (
    CHECKPOINT_PREFIX,
    CHECKPOINTS,
    MODEL_CONFIG,
    RUN,
    RUN_CONFIG,
    SRC_VOCAB,
    TGT_VOCAB,
    WEIGHTS,
)
from luong.common.languages import check_language
from luong.config.choices import INT8_PARTS
from luong.config.model import Seq2SeqConfig

__all__ = [
    "INT8",
    "QUANTIZED",
    "SRC_LANG",
    "TGT_LANG",
    "VOCAB_SHA256",
    "check_sizes",
    "check_vocab_hashes",
    "int8_parts",
    "is_int8_folder",
    "language_pair",
    "no_model_folder",
    "no_model_yet",
    "read_model_config",
    "record_language_pair",
    "vocab_file_sha256",
]

# The key of config.json that records each vocabulary file's SHA-256, by file name.
VOCAB_SHA256 = "vocab_sha256"
# config.json's keys of an int8 model: QUANTIZED: "int8", and INT8: the parts in int8.
QUANTIZED = "quantized"
INT8 = "int8_parts"
# config.json's keys of the language pair (absent: unknown). luong po reads them too.
SRC_LANG = "src_lang"
TGT_LANG = "tgt_lang"


def language_pair(raw: object, source: Path) -> tuple[str | None, str | None]:
    """The language pair a model folder's ``config.json`` (``raw``, parsed) records: its
    ``"src_lang"`` and ``"tgt_lang"``, each None when absent (unknown).

    Raises:
        ValueError: a code that is not a language code (``luong.common.languages.check_language``),
            naming ``source`` and the key.
    """
    if not isinstance(raw, dict):
        return None, None
    codes = []
    for key in (SRC_LANG, TGT_LANG):
        code = raw.get(key)
        if code is not None:
            try:
                check_language(code, f"{source}: {key}")
            except TypeError as error:
                raise LuongError(str(error)) from None
        codes.append(code)
    return codes[0], codes[1]


def record_language_pair(folder: str | Path, src_lang: str, tgt_lang: str) -> Path:
    """Record the language pair in an existing model folder's ``config.json`` (``"src_lang"``
    and ``"tgt_lang"``): ``luong pair DIR --src-lang en --tgt-lang de``, for a model trained
    before ``luong train --src-lang`` or without it. Only those two fields change: the rest
    of the file keeps its text as far as JSON allows (its keys' order, its indentation, its
    characters as written, ``Müller`` not ``M\\u00fcller``), and the file is replaced all or
    nothing; the weights and vocabularies are not touched.

    Returns:
        the path of ``config.json``.

    Raises:
        FileNotFoundError: ``folder`` or its ``config.json`` is missing
            (``NotADirectoryError``: ``folder`` is a file).
        ValueError, TypeError: a code babel does not know (``check_language``), the same code
            twice, or a folder that is not a luong model folder (``read_model_config``).
    """
    check_language(src_lang, "src_lang")
    check_language(tgt_lang, "tgt_lang")
    if src_lang == tgt_lang:
        raise LuongError(
            f"src_lang and tgt_lang: expected two languages, got {src_lang!r} for both"
        )
    path, text, raw = read_model_config(folder)
    raw[SRC_LANG], raw[TGT_LANG] = src_lang, tgt_lang
    write_text(path, _json_as(text, raw))
    return path


def no_model_folder(folder: Path) -> OSError:
    """The error for a model folder that is not a folder: a file given where the folder goes
    (``luong translate notes.txt``) is named as one; else there is no such folder."""
    if folder.exists():
        return NotADirectoryError(f"{folder}: a file, not a model folder")
    return FileNotFoundError(f"{folder}: no such model folder")


def read_model_config(folder: str | Path) -> tuple[Path, str, dict[str, Any]]:
    """A model folder's ``config.json``: its path, its text and its object, once the folder
    is known to be a luong model folder (its weights beside it, and a config whose
    ``"model"`` is a ``Seq2SeqConfig``): not any folder that happens to hold a
    ``config.json``.

    Raises:
        FileNotFoundError: ``folder`` or its ``config.json`` is missing
            (``NotADirectoryError``: ``folder`` is a file).
        ValueError: not a luong model folder (no weights file, or another program's
            ``config.json``), naming the folder and why.
    """
    folder = Path(folder)
    path = folder / MODEL_CONFIG
    if not folder.is_dir():
        raise no_model_folder(folder)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (is {folder} a luong model folder?)")
    try:
        text = read_bounded(path, MAX_JSON_BYTES).decode("utf-8")
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise LuongError(f"{path}: not a valid model config: {error}") from None
    try:
        if not isinstance(raw, dict):
            raise LuongError(f"a JSON {type(raw).__name__}, not an object")
        Seq2SeqConfig.from_json(raw.get("model"))
    except (ValueError, TypeError) as error:
        raise LuongError(
            f"{folder}: not a luong model folder ({MODEL_CONFIG} is not a luong model's "
            f"config: {error})"
        ) from None
    if not (folder / WEIGHTS).is_file():
        raise LuongError(f"{folder}: not a luong model folder (no {WEIGHTS} beside {MODEL_CONFIG})")
    return path, text, raw


def _json_as(text: str, value: Any) -> str:
    """``value`` as JSON laid out as ``text`` is: its indentation (spaces or a tab, or one
    line), its separators, a final newline if it had one; non-ASCII characters as they are."""
    lines = text.strip("\n").splitlines()
    indent: int | str | None = None
    if len(lines) > 1:
        lead = re.match(r"[ \t]*", lines[1])
        spaces = lead.group() if lead else ""
        indent = spaces if "\t" in spaces else len(spaces)
    key_sep = ": " if re.search(r'"\s*: ', text) or not re.search(r'"\s*:', text) else ":"
    item_sep = "," if indent is not None or not re.search(r",\s", text) else ", "
    dumped = json.dumps(value, ensure_ascii=False, indent=indent, separators=(item_sep, key_sep))
    return dumped + ("\n" if text.endswith("\n") else "")


def int8_parts(raw: object, source: Path) -> tuple[str, ...]:
    """The int8 parts a model folder's ``config.json`` (``raw``, parsed) records: empty for a
    float model.

    Raises:
        ValueError: ``"quantized"`` is there but not ``"int8"``, or its parts are not some of
            ``INT8_PARTS`` (naming ``source``).
    """
    if not isinstance(raw, dict) or QUANTIZED not in raw:
        return ()
    parts = raw.get(INT8)
    if (
        raw[QUANTIZED] != "int8"
        or not isinstance(parts, list)
        or not parts
        or not set(parts) <= set(INT8_PARTS)
        or len(set(parts)) != len(parts)
    ):
        raise LuongError(
            f'{source}: expected {QUANTIZED!r}: "int8" and {INT8!r}: some of '
            f"{list(INT8_PARTS)}, got {raw[QUANTIZED]!r:.40} and {parts!r:.80}"
        )
    return tuple(parts)


def is_int8_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds an int8 model (its ``config.json`` says so); False for any
    other folder, a missing one or an unreadable config."""
    path = Path(folder) / MODEL_CONFIG
    try:
        raw = json.loads(read_bounded(path, MAX_JSON_BYTES).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(raw, dict) and QUANTIZED in raw


def check_vocab_hashes(folder: Path, recorded: object) -> None:
    """Check each vocabulary file of a model folder against the SHA-256 that ``config.json``
    records for it (``recorded``: ``{"src_vocab.json": HEX, "tgt_vocab.json": HEX}``).

    Raises:
        ValueError: ``recorded`` is not such an object (naming ``config.json``), or a file's
            SHA-256 differs (naming the file).
    """
    names = (SRC_VOCAB, TGT_VOCAB)
    if not (
        isinstance(recorded, dict)
        and set(recorded) == set(names)
        and all(isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v) for v in recorded.values())
    ):
        raise LuongError(
            f"{folder / MODEL_CONFIG}: {VOCAB_SHA256}: expected the SHA-256 (64 hex digits) of "
            f"{' and '.join(names)}, got {recorded!r:.80}"
        )
    for name in names:
        if vocab_file_sha256(folder / name) != recorded[name]:
            raise LuongError(
                f"{folder / name}: changed since the model was saved (its SHA-256 is not the "
                f"one {MODEL_CONFIG} records); the weights were trained with the vocabulary as "
                "saved: restore the file"
            )


def vocab_file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a vocabulary file of a model folder, as ``config.json`` records it
    (``VOCAB_SHA256``); the file is read bounded, as a JSON file is."""
    return hashlib.sha256(read_bounded(path, MAX_JSON_BYTES)).hexdigest()


def check_sizes(
    config: Seq2SeqConfig,
    src_size: int,
    tgt_size: int,
    shapes: dict[str, tuple[int, ...]],
    source: Path,
) -> None:
    """Check the sizes a model of ``config`` would have against the tensor shapes of a weights
    file (``luong.common.tensor_files.read_tensor_shapes``), without building it: the embeddings
    (vocabulary sizes, ``emb_dim``), the recurrent cells (``enc_hidden``, ``dec_hidden``,
    ``cell``), the number of layers, the output layer and the location score's rows
    (``max_src_len``). Every
    other tensor's size follows from these, so once they match the model is no larger than
    the file; ``load_checked`` then checks every tensor.

    Raises:
        ValueError: a size that differs, naming the file, the tensor and both shapes, or the
            number of layers.
    """
    gates = 4 if config.cell == "lstm" else 3
    expected = {
        "encoder.embedding.weight": (src_size, config.emb_dim),
        "encoder.rnn.weight_hh_l0": (gates * config.enc_hidden, config.enc_hidden),
        "decoder.embedding.weight": (tgt_size, config.emb_dim),
        "decoder.rnn.weight_hh_l0": (gates * config.dec_hidden, config.dec_hidden),
        "decoder.out.weight": (tgt_size, config.dec_hidden),
    }
    if config.tie_embeddings:
        del expected["decoder.embedding.weight"]  # the encoder's, saved once
    if config.attention == "location":
        expected["decoder.attention.score_proj.weight"] = (
            config.max_src_len + 1,
            config.dec_hidden,
        )
    missing = sorted(name for name in expected if name not in shapes)
    if missing:
        raise LuongError(f"{source}: does not match the config: missing tensors {missing}")
    for name, shape in expected.items():
        if shapes[name] != shape:
            raise LuongError(
                f"{source}: tensor {name!r} has shape {shapes[name]}, the config expects {shape}"
            )
    for part, layers, field in (
        ("encoder", config.enc_layers, "enc_layers"),
        ("decoder", config.dec_layers, "dec_layers"),
    ):
        found = sum(
            re.fullmatch(rf"{part}\.rnn\.weight_hh_l\d+", name) is not None for name in shapes
        )
        if found != layers:
            raise LuongError(
                f"{source}: holds {found} {part} layers, the config expects {field} = {layers}"
            )


def no_model_yet(folder: Path) -> str | None:
    """What to do with a run folder stopped before it wrote its model (no
    ``model.safetensors``): resume it, or make a model of its last checkpoint; before its
    first checkpoint, resume it alone. None for a folder that holds a model or is no run.
    (``luong.load`` takes a stopped run's checkpoint itself: ``luong.training.checkpoint``.)"""
    if (folder / WEIGHTS).exists():
        return None
    resume = f"luong train --config {folder / RUN_CONFIG} --out {folder}"
    if any(p.is_dir() for p in (folder / CHECKPOINTS).glob(f"{CHECKPOINT_PREFIX}*")):
        return (
            f"{folder}: no {WEIGHTS} (the run stopped before its end): resume it with "
            f"{resume}, or make a model of its last checkpoint with luong average {folder} "
            "--last 1 --out DIR"
        )
    if (folder / RUN).is_file():
        return (
            f"{folder}: no {WEIGHTS} and no checkpoint yet (the run stopped before its "
            f"first): resume it with {resume}"
        )
    return None
