"""Translate with an exported luong model (``luong export``): tokenization, greedy search and
beam search in numpy over onnxruntime, with neither torch nor the rest of luong.

    python luong_onnx.py DIR [--beam 5 --nbest 3 --alpha 0.6 --beta 0.2 --shortlist K] < sources

    import luong_onnx
    model = luong_onnx.load("DIR")
    model.translate(["3 May 1979"], luong_onnx.SearchOptions(beam=5))

This file imports numpy, onnxruntime, for a sentencepiece (subword) vocabulary
sentencepiece, and for an export with a lexical shortlist safetensors; nothing of luong.
``luong export`` copies it into every export folder as ``luong_onnx.py``; inside the luong
package it is ``luong.export.runtime``.

Shapes: ``B`` sentences, ``S`` source length (EOS included), ``R`` decoder rows, ``k`` beam
size, ``n`` n-best size, ``V`` target vocabulary, ``L`` decoder layers, ``d`` decoder width,
``K`` key width, ``T`` output length, ``C`` the target ids a search call decodes over (a
lexical shortlist's candidates).

An export folder holds (``export.json`` lists it):

    encoder.onnx    src [B, S] (ids, EOS appended, 0-padded), src_lengths [B]
                    -> keys [B, S, K], proj [B, S, d] (the attention's key projection, for
                    the scores that have one), hidden [L, B, d], cell [L, B, d] (LSTM)
    step.onnx       one decoder step (``luong.model.decoder.Decoder.step``): tokens [R], hidden,
                    cell (LSTM), feed [R, d] (input feeding), keys, proj, mask [B, S] and
                    rows [R] (the sentence of each row), step [] (local-m: the target
                    position) -> log_probs [R, V], new_hidden, new_cell, new_feed (the
                    state after the step), weights [R, S]
    src_vocab.json, tgt_vocab.json (and their .model files for sentencepiece vocabularies):
                    luong's own vocabulary files, read here as luong reads them
    luong_onnx.py   this file
    export.json     the format, the model's config and max_src_len, each graph's file, inputs
                    and outputs, and each vocabulary file's SHA-256, checked when the folder
                    is loaded (an edited vocabulary would decode other text, silently)

A model with a lexical shortlist (``luong shortlist``, ``luong.data.shortlist``) is exported with it
(format version 2), and the search runs over each call's candidates as ``luong.search`` does:

    step.onnx       also takes out_weight [C, d] and out_bias [C], the output layer's rows of
                    C target ids, and gives log_probs [R, C] over those ids
    shortlist.safetensors
                    the model folder's table: targets [V_src, K] (each source piece's K most
                    likely target pieces, best first), frequent [N] (the most frequent ones)
    output_layer.safetensors
                    the output layer: weight [V, d], bias [V]
    export.json     "shortlist" and "output_layer": each file and its SHA-256, checked on load

A search call's candidates (``OnnxTranslator.columns``) are the union of its sources' rows
(their first K pieces: ``SearchOptions.shortlist``), the frequent pieces and the special
symbols, sorted, so that PAD, BOS and EOS keep their ids; the output layer's rows are cut to
them once per call, every step computes and searches those columns only, and the outputs
are mapped back to target ids at the end (``luong.search.text.run_search``).

The search is luong's (``luong.search``) for the options kept here (``SearchOptions``: beam,
nbest, alpha, beta, min_len, max_len), with the same semantics: greedy search picks the most
probable token; beam search ranks open beams by log P, keeps greedy search's path (its argmax
extension takes the last place when it falls out), pools ended hypotheses scored with GNMT's
s(Y, X) = log P / lp + cp (Wu et al. 2016, eq. 14), stops a sentence once no open beam can
beat its n-th pooled hypothesis, and rescores each n-best list in float64. Like luong's
decoding, it runs no greedy search first to prune the beams that cannot beat its hypothesis
(``luong.search.beam.greedy_floor``): that search costs more than the beams it drops, and
the outputs are the same. Sampling, a target prefix, ensembles and unknown-word replacement
are luong's alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

__all__ = [
    "ENCODER",
    "FORMAT",
    "FORMAT_VERSION",
    "LINE_BREAKS",
    "MANIFEST",
    "MAX_LINE_BYTES",
    "OUTPUT_LAYER",
    "OUTPUT_LAYER_FORMAT",
    "RUNTIME",
    "SHORTLIST_VERSION",
    "STEP",
    "VOCAB_SHA256",
    "Columns",
    "Hypothesis",
    "OnnxTranslator",
    "SearchOptions",
    "Vocabulary",
    "file_sha256",
    "load",
    "main",
    "usable_threads",
]

FORMAT = "luong-onnx"
FORMAT_VERSION = 1  # an export without a shortlist
SHORTLIST_VERSION = 2  # an export with a shortlist: its step graph takes the output layer
OUTPUT_LAYER = "output_layer.safetensors"  # a shortlisted export's output layer
OUTPUT_LAYER_FORMAT = "luong-onnx-output-layer"  # that file's metadata "format"
MANIFEST = "export.json"
ENCODER = "encoder.onnx"
STEP = "step.onnx"
RUNTIME = "luong_onnx.py"  # this file's name in an export folder

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")
# What an output never holds, each written as a space: luong.config.search.LINE_BREAKS (a
# test checks that the two agree).
LINE_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00")
_AS_SPACES = str.maketrans(dict.fromkeys(LINE_BREAKS, " "))
SEARCH_ROWS = 8192  # luong.search.text.SEARCH_ROWS: the most decoder rows per search call
MAX_BEAM = 1000  # the bounds of luong.config.search
MAX_ALPHA = 5.0
MAX_BETA = 10.0
MAX_OUTPUT_LEN = 10_000
MAX_JSON_BYTES = 64 << 20  # the largest manifest or vocabulary file read
MAX_LINE_BYTES = 1 << 20  # luong.common.files.MAX_LINE_BYTES: the longest input line read (1 MiB)
VOCAB_SHA256 = "vocab_sha256"  # export.json's SHA-256 of each vocabulary file, as config.json's
TOP_CHUNK = 50  # _top's chunk of a wide row (fastest of 25 to 200 on a 4,000-piece vocabulary)


# -- vocabularies ------------------------------------------------------------------------------


class Vocabulary:
    """A luong vocabulary file read without luong: ``luong.data.vocab.Vocab`` (characters or
    whitespace tokens, NFKC or NFC, lowercasing) or ``luong.data.subword.SubwordVocab`` (a
    sentencepiece model, NFC, lowercasing). Text is tokenized and detokenized as luong does.

    Args:
        path: the vocabulary's JSON file (a subword vocabulary's model file lies beside it).

    Raises:
        FileNotFoundError: the file, or a subword vocabulary's model file, is missing.
        ValueError: not a luong vocabulary, or a model file whose SHA-256 is not the one the
            JSON records; the message names the file.
    """

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        data = _read_json(path)
        if not isinstance(data, dict) or data.get("specials") != list(SPECIALS):
            raise ValueError(f"{path}: not a luong vocabulary (expected the specials {SPECIALS})")
        self.tokens = data.get("tokens")
        self.lowercase = data.get("lowercase")
        if not isinstance(self.lowercase, bool):
            raise ValueError(f"{path}: lowercase: expected true or false, got {self.lowercase!r}")
        self.processor: Any = None
        self.normalization: Literal["NFKC", "NFC"] = "NFC"
        if self.tokens == "subword":
            self.processor = _sentencepiece(path, data)
            symbols = [
                self.processor.id_to_piece(i) for i in range(self.processor.get_piece_size())
            ]
        elif self.tokens in ("char", "space"):
            normalization = data.get("normalization", "NFKC")
            if normalization not in ("NFKC", "NFC"):
                raise ValueError(
                    f"{path}: normalization: expected NFKC or NFC, got {normalization!r}"
                )
            self.normalization = normalization
            listed = data.get("symbols")
            if not isinstance(listed, list) or not all(isinstance(s, str) for s in listed):
                raise ValueError(f"{path}: symbols: expected a list of strings")
            symbols = [*SPECIALS, *listed]
        else:
            raise ValueError(
                f"{path}: tokens: expected char, space or subword, got {self.tokens!r}"
            )
        self.symbols: list[str] = symbols
        # A token spelled like a special is unknown: raw text never injects an EOS.
        self.ids = {symbol: i for i, symbol in enumerate(symbols) if i >= len(SPECIALS)}

    def __len__(self) -> int:
        """V: the specials and the symbols."""
        return len(self.symbols)

    def normalize(self, text: str) -> str:
        """Unicode NFKC or NFC, then lowercasing (normalised again) when asked."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        text = unicodedata.normalize(self.normalization, text)
        if self.lowercase:
            text = unicodedata.normalize(self.normalization, text.lower())
        return text

    def tokenize(self, text: str) -> list[str]:
        """``normalize``, then characters, ``str.split()`` or sentencepiece's pieces."""
        text = self.normalize(text)
        if self.processor is not None:
            return list(self.processor.encode(text, out_type=str))
        return list(text) if self.tokens == "char" else text.split()

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``'s tokens (unknown ones as ``<unk>``) and EOS."""
        return [*(self.ids.get(token, UNK) for token in self.tokenize(text)), EOS]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids`` up to the first EOS, without PAD and BOS, on one line (a line
        break, tab or NUL in it becomes a space).

        Raises:
            ValueError: an id outside ``[0, V)``.
        """
        symbols = []
        for i in ids:
            if not 0 <= i < len(self.symbols):
                raise ValueError(f"ids: expected ids in [0, {len(self.symbols)}), got {i!r}")
            if i == EOS:
                break
            if i not in (PAD, BOS):
                symbols.append(self.symbols[i])
        if self.processor is not None:
            text = str(self.processor.decode_pieces(_whole_characters(symbols)))
        else:
            text = ("" if self.tokens == "char" else " ").join(symbols)
        return text.translate(_AS_SPACES)


_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


def _whole_characters(symbols: list[str]) -> list[str]:
    """``symbols`` without the byte pieces that form no whole UTF-8 character with those
    next to them (which sentencepiece decodes as U+FFFD): luong.data.subword.whole_characters."""
    kept: list[str] = []
    run: list[str] = []
    for symbol in [*symbols, None]:
        if symbol is not None and _BYTE_PIECE.fullmatch(symbol):
            run.append(symbol)
            continue
        data = bytes(int(piece[3:5], 16) for piece in run)
        at = 0
        while at < len(data):
            size = next((n for n in range(1, 5) if _decodes(data[at : at + n])), 0)
            kept += run[at : at + size]
            at += size or 1
        run = []
        if symbol is not None:
            kept.append(symbol)
    return kept


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _sentencepiece(path: Path, data: dict[str, Any]) -> Any:
    """The sentencepiece processor of a subword vocabulary file, its model checked."""
    import sentencepiece  # only subword vocabularies need it

    name = data.get("model")
    if not isinstance(name, str):
        raise ValueError(f"{path}: model: expected the name of the sentencepiece model file")
    model_path = path.with_name(Path(name).name)
    try:
        model = model_path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{model_path}: missing (the model of {path})") from None
    if hashlib.sha256(model).hexdigest() != data.get("sha256"):
        raise ValueError(f"{model_path}: is not the model {path} was saved with (SHA-256 differs)")
    processor = sentencepiece.SentencePieceProcessor()
    processor.LoadFromSerializedProto(model)
    return processor


def _read_json(path: Path) -> Any:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_JSON_BYTES + 1)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    if len(raw) > MAX_JSON_BYTES:
        raise ValueError(f"{path}: larger than {MAX_JSON_BYTES} bytes")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _read_tensors(path: Path, expected: str) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (``safetensors.numpy``: no torch), once its bytes have
    the SHA-256 ``expected`` (what ``export.json`` records). safetensors is imported here: only
    an export with a lexical shortlist holds such files, so only its deployment needs it.

    Raises:
        FileNotFoundError: no such file.
        ValueError: another SHA-256, not a safetensors file, or no safetensors package.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: missing (the export lists it in {MANIFEST}); restore it, or export the "
            "model again"
        ) from None
    if hashlib.sha256(raw).hexdigest() != expected:
        raise ValueError(
            f"{path}: changed since the model was exported (its SHA-256 is not the one "
            f"{MANIFEST} records); restore the file, or export the model again"
        )
    try:
        import safetensors
        import safetensors.numpy
    except ImportError:
        raise ValueError(
            f"{path}: an export with a lexical shortlist needs the safetensors package to read "
            "it: pip install safetensors"
        ) from None
    try:
        return safetensors.numpy.load(raw)
    except safetensors.SafetensorError as error:
        raise ValueError(
            f"{path}: not a safetensors file ({error}); the export is damaged: export the "
            "model again (luong export)"
        ) from None


def _declared_k(path: Path) -> int | None:
    """The ``K`` of a shortlist file's ``targets`` ``[V_src, K]`` as its safetensors header
    declares it (``safe_open`` reads the header alone); None where the file or the package
    is missing or the header is not one, which ``_read_tensors`` then names."""
    try:
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as file:
            shape = file.get_slice("targets").get_shape()
        return int(shape[1]) if len(shape) == 2 else None
    except Exception:  # noqa: BLE001 - safetensors' own errors: named when the file is read
        return None


def _check_sha256(path: Path, expected: str) -> None:
    """``path``'s bytes have the SHA-256 ``expected`` (what ``export.json`` records).

    Raises:
        FileNotFoundError: no such file.
        ValueError: another SHA-256.
    """
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read(MAX_JSON_BYTES + 1)).hexdigest()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    if digest != expected:
        raise ValueError(
            f"{path}: changed since the model was exported (its SHA-256 is not the one "
            f"{MANIFEST} records); the graphs were exported with the vocabulary as written: "
            "restore the file, or export the model again"
        )


def _check_manifest(manifest: dict[str, Any], path: Path) -> None:
    """Every field of ``export.json`` that the runtime reads, with its type: a field missing
    or of another type is one line naming it, not a ``KeyError`` in the middle of loading.

    Raises:
        ValueError: the first field that is wrong.
    """

    def wrong(key: str, expected: str, value: object) -> ValueError:
        shown = "nothing" if value is _MISSING else f"{value!r:.60}"
        return ValueError(
            f"{path}: {key}: expected {expected}, got {shown}; the export is damaged: export "
            "the model again (luong export)"
        )

    def name(value: object) -> bool:  # a file of the folder, by its plain name
        return isinstance(value, str) and value not in ("", ".", "..") and "/" not in value

    def names(value: object) -> bool:
        return isinstance(value, list) and all(isinstance(one, str) for one in value)

    def sha256(value: object) -> bool:
        return (
            isinstance(value, str)
            and len(value) == 64
            and all(c in "0123456789abcdef" for c in value)
        )

    length = manifest.get("max_src_len", _MISSING)
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise wrong("max_src_len", "an int >= 1", length)
    model = manifest.get("model", _MISSING)
    if not isinstance(model, dict):
        raise wrong("model", "the model's config (an object)", model)
    hidden = model.get("dec_hidden", _MISSING)
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
        raise wrong("model.dec_hidden", "an int >= 1", hidden)
    for key in ("src_vocab", "tgt_vocab"):
        if not name(manifest.get(key, _MISSING)):
            raise wrong(
                key, "the name of a vocabulary file of the folder", manifest.get(key, _MISSING)
            )
    for key in ("encoder", "step"):
        graph = manifest.get(key, _MISSING)
        if not isinstance(graph, dict):
            raise wrong(key, '{"file": ..., "inputs": [...], "outputs": [...]}', graph)
        if not name(graph.get("file", _MISSING)):
            raise wrong(
                f"{key}.file", "the name of a graph file of the folder", graph.get("file", _MISSING)
            )
        for part in ("inputs", "outputs"):
            if not names(graph.get(part, _MISSING)):
                raise wrong(f"{key}.{part}", "a list of names", graph.get(part, _MISSING))
    if VOCAB_SHA256 in manifest:
        hashes = manifest[VOCAB_SHA256]
        files = {manifest["src_vocab"], manifest["tgt_vocab"]}
        if not (
            isinstance(hashes, dict)
            and files <= set(hashes)
            and all(sha256(hashes[file]) for file in files)
        ):
            raise wrong(
                VOCAB_SHA256,
                f"the SHA-256 (64 hex digits) of {' and '.join(sorted(files))}",
                hashes,
            )
    # A shortlisted export (version 2): the step graph takes the output layer's rows, which
    # the runtime reads from a file, and the shortlist's table; each file with its SHA-256.
    inputs = manifest["step"]["inputs"]
    takes_layer = "out_weight" in inputs
    if takes_layer != ("out_bias" in inputs):
        raise wrong("step.inputs", "out_weight and out_bias both, or neither", inputs)
    for key, needed in (("output_layer", takes_layer), ("shortlist", False)):
        if key not in manifest and not needed:
            continue
        entry = manifest.get(key, _MISSING)
        if not (
            isinstance(entry, dict)
            and name(entry.get("file", _MISSING))
            and sha256(entry.get("sha256", _MISSING))
        ):
            raise wrong(
                key, '{"file": ..., "sha256": ...} (a file of the folder and its SHA-256)', entry
            )
    if "shortlist" in manifest and not takes_layer:
        raise wrong(
            "step.inputs", "the output layer (out_weight, out_bias) beside a shortlist", inputs
        )


_MISSING = object()  # a field absent from export.json


# -- options and hypotheses --------------------------------------------------------------------


@dataclass(frozen=True)
class SearchOptions:
    """How to decode: the fields of ``luong.config.search.SearchOptions`` this runtime has,
    with their defaults and bounds. The default is greedy search with each source's own
    output limit (twice its length, EOS included, plus 10).

    Raises:
        TypeError: a value of the wrong type.
        ValueError: a value out of its bounds, or nbest above beam, min_len not below max_len.
    """

    beam: int = 1  # beam size k, 1 to 1000 (1: greedy search)
    nbest: int = 1  # outputs per source, best first, at most the beam
    alpha: float = 0.0  # length penalty weight, lp = ((5 + |Y|) / 6) ** alpha, 0 to 5
    beta: float = 0.0  # coverage penalty weight, beta * sum_s log(min(sum_t a_ts, 1)), 0 to 10
    min_len: int = 0  # EOS is forbidden until the output has this many tokens
    max_len: int | None = None  # the most output tokens, EOS included
    # The output layer and the softmax over a lexical shortlist only: the K most likely target
    # pieces of each source piece in the call, the most frequent ones and the specials; 0: the
    # full vocabulary, exact; None: the export's shortlist whole when it has one, else the
    # full vocabulary (luong's --shortlist K).
    shortlist: int | None = None

    def __post_init__(self) -> None:
        for name, low, high in (
            ("beam", 1, MAX_BEAM),
            ("nbest", 1, MAX_BEAM),
            ("min_len", 0, MAX_OUTPUT_LEN),
            ("max_len", 1, MAX_OUTPUT_LEN),
        ):
            value = getattr(self, name)
            if value is None and name == "max_len":
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name}: expected an int >= {low}, got {value!r:.60}")
            if not low <= value <= high:
                raise ValueError(f"{name}: expected an int in [{low}, {high}], got {value}")
        for name, most in (("alpha", MAX_ALPHA), ("beta", MAX_BETA)):
            number = getattr(self, name)
            if not isinstance(number, int | float) or isinstance(number, bool):
                raise TypeError(f"{name}: expected a number in [0, {most:g}], got {number!r:.60}")
            if not (math.isfinite(number) and 0.0 <= number <= most):
                raise ValueError(f"{name}: expected a number in [0, {most:g}], got {number!r}")
            object.__setattr__(self, name, float(number))
        if self.shortlist is not None:
            if not isinstance(self.shortlist, int) or isinstance(self.shortlist, bool):
                raise TypeError(f"shortlist: expected an int >= 0, got {self.shortlist!r:.60}")
            if self.shortlist < 0:
                raise ValueError(f"shortlist: expected an int >= 0, got {self.shortlist}")
        if self.nbest > self.beam:
            raise ValueError(f"nbest: expected at most beam = {self.beam}, got {self.nbest}")
        if self.max_len is not None and self.min_len >= self.max_len:
            raise ValueError(
                f"min_len: expected < max_len = {self.max_len} (EOS could never come), "
                f"got {self.min_len}"
            )

    @property
    def greedy(self) -> bool:
        """Plain greedy search (one beam, no penalty, no minimum): the shortest path."""
        return self.beam == 1 and not (self.alpha or self.beta or self.min_len)


@dataclass(frozen=True)
class Hypothesis:
    """One output of a search, as ``luong.search.Hypothesis``: tokens (ending with EOS unless
    the search stopped at the limit), the model's log-probability of each, the search's score
    (the sum of log_probs for greedy search, s(Y, X) for beam search) and the attention
    ``[len(tokens), S_real]`` on the real source positions (its EOS included)."""

    tokens: list[int]
    score: float
    log_probs: list[float]
    attention: np.ndarray


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def coverage_penalty(coverage: np.ndarray, mask: np.ndarray, beta: float) -> np.ndarray:
    """GNMT's ``beta * sum_s log(min(coverage_s, 1))`` over the real positions (mask True):
    coverage ``[..., S]``, mask broadcastable -> ``[...]``, in coverage's dtype."""
    tiny = np.finfo(coverage.dtype).tiny
    logs = np.log(np.clip(coverage, tiny, 1.0))
    return (beta * np.where(mask, logs, 0.0).sum(axis=-1)).astype(coverage.dtype)


def hypothesis_score(
    log_probs: Sequence[float], attention: np.ndarray, alpha: float, beta: float
) -> float:
    """s(Y, X) of a whole output in float64, from its own log_probs ``[T]`` and attention
    ``[T, S_real]`` (``luong.search.penalties.hypothesis_score``)."""
    score = sum(log_probs) / length_penalty(len(log_probs), alpha)
    if beta and attention.size:
        coverage = attention.astype(np.float64).sum(axis=0)
        score += float(coverage_penalty(coverage, np.ones_like(coverage, dtype=bool), beta))
    return float(score)


# -- the model ---------------------------------------------------------------------------------


@dataclass
class Encoded:
    """A batch of sources after the encoder: keys ``[B, S, K]``, proj ``[B, S, d]`` (None
    when the scores need none), mask ``[B, S]`` (True at real positions), lengths ``[B]``
    (EOS included) and the decoder's initial state (``hidden``, ``cell``, ``feed``, as the
    step graph takes them)."""

    keys: np.ndarray
    proj: np.ndarray | None
    mask: np.ndarray
    lengths: np.ndarray
    state: dict[str, np.ndarray]


@dataclass(frozen=True)
class Columns:
    """A search over some target ids only (``luong.model.ensemble.Columns``): ids ``[C]``, sorted,
    the special symbols among them at their own ids (0 to 3), and the output layer's rows of
    those ids, weight ``[C, d]`` and bias ``[C]``, cut once per search call. The search then
    works in columns: token c is ``ids[c]``, and PAD, BOS and EOS are where they always
    are."""

    ids: np.ndarray
    weight: np.ndarray
    bias: np.ndarray


class OnnxTranslator:
    """An export folder loaded into onnxruntime: ``translate`` strings as luong would.

    Args:
        folder: what ``luong export`` wrote.
        threads: onnxruntime's intra-op threads (0: its default, one per physical core),
            at most the CPUs this process may use (``usable_threads``; ``self.threads``).

    Raises:
        FileNotFoundError: the folder or one of its files is missing.
        ValueError: not a luong ONNX export (of format version 1 or 2), an ``export.json``
            that lacks a field or holds one of the wrong type, a vocabulary file, shortlist
            or output layer whose SHA-256 is not the one ``export.json`` records (or a
            shortlist or output layer of other shapes than the model's), a graph
            onnxruntime cannot load (a truncated file), or graphs whose inputs and outputs
            are not the ones ``export.json`` lists; each message names the file.
    """

    def __init__(self, folder: str | Path, threads: int = 0) -> None:
        folder = Path(folder)
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: no such export folder")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads: expected an int >= 0, got {threads!r}")
        import onnxruntime as ort  # here, so that luong imports this file without it

        manifest = _read_json(folder / MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"{folder / MANIFEST}: not a luong ONNX export")
        if manifest.get("version") not in (FORMAT_VERSION, SHORTLIST_VERSION):
            raise ValueError(
                f"{folder / MANIFEST}: format version {manifest.get('version')!r}, this runtime "
                f"reads versions {FORMAT_VERSION} and {SHORTLIST_VERSION}; export the model again"
            )
        _check_manifest(manifest, folder / MANIFEST)
        self.folder = folder
        self.manifest = manifest
        self.max_src_len = int(manifest["max_src_len"])
        for key in ("src_vocab", "tgt_vocab"):
            if VOCAB_SHA256 in manifest:  # exports from before it record none
                _check_sha256(folder / manifest[key], manifest[VOCAB_SHA256][manifest[key]])
        self.src_vocab = Vocabulary(folder / manifest["src_vocab"])
        self.tgt_vocab = Vocabulary(folder / manifest["tgt_vocab"])
        options = ort.SessionOptions()
        self.threads = usable_threads(threads)
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: its warnings are not the user's
        self.encoder = self._session(options, "encoder")
        self.step = self._session(options, "step")
        self.encoder_outputs: list[str] = manifest["encoder"]["outputs"]
        self.step_inputs: list[str] = manifest["step"]["inputs"]
        self.step_outputs: list[str] = manifest["step"]["outputs"]
        self.state_names = [name for name in ("hidden", "cell", "feed") if name in self.step_inputs]
        self.hidden_size = int(manifest["model"]["dec_hidden"])
        # A shortlisted export's output layer (weight [V, d], bias [V]), which its step graph
        # takes as inputs, and its table (targets [V_src, K], frequent [N]); else None.
        self.output_layer: tuple[np.ndarray, np.ndarray] | None = None
        self.shortlist: tuple[np.ndarray, np.ndarray] | None = None
        if "output_layer" in manifest:
            self.output_layer = self._output_layer(manifest["output_layer"])
        if "shortlist" in manifest:
            self.shortlist = self._shortlist(manifest["shortlist"])

    def _output_layer(self, entry: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
        path = self.folder / entry["file"]
        tensors = _read_tensors(path, entry["sha256"])
        shapes = {"weight": (len(self.tgt_vocab), self.hidden_size), "bias": (len(self.tgt_vocab),)}
        for key, shape in shapes.items():
            found = tensors.get(key)
            if found is None or found.dtype != np.float32 or found.shape != shape:
                shown = "nothing" if found is None else f"{found.dtype} {list(found.shape)}"
                raise ValueError(
                    f"{path}: {key}: expected float32 {list(shape)} (the model's output layer), "
                    f"got {shown}; the export is damaged: export the model again (luong export)"
                )
        return tensors["weight"], tensors["bias"]

    def _shortlist(self, entry: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
        path = self.folder / entry["file"]
        size = len(self.tgt_vocab)
        k = _declared_k(path)  # from the header, before the table is read
        if k is not None and k > size:
            raise ValueError(
                f"{path}: not a shortlist of this model (targets: K = {k} pieces per source "
                f"piece, above the {size} of the target vocabulary); the export is damaged: "
                "export the model again (luong export)"
            )
        tensors = _read_tensors(path, entry["sha256"])
        targets, frequent = tensors.get("targets"), tensors.get("frequent")
        problem = None
        if targets is None or targets.dtype.kind != "i" or targets.ndim != 2:
            problem = "targets: expected ints [V_src, K]"
        elif targets.shape[0] != len(self.src_vocab) or targets.shape[1] < 1:
            problem = f"targets: shape {list(targets.shape)}, expected [{len(self.src_vocab)}, K]"
        elif frequent is None or frequent.dtype.kind != "i" or frequent.ndim != 1:
            problem = "frequent: expected ints [N]"
        else:
            for key, ids in (("targets", targets), ("frequent", frequent)):
                if ids.size and not 0 <= int(ids.min()) <= int(ids.max()) < len(self.tgt_vocab):
                    problem = f"{key}: ids out of [0, {len(self.tgt_vocab)})"
                elif np.isin(ids, (PAD, BOS)).any():  # luong.data.shortlist.NEVER_LISTED
                    problem = f"{key}: holds PAD or BOS, which no shortlist lists"
        if problem is not None or targets is None or frequent is None:
            raise ValueError(
                f"{path}: not a shortlist of this model ({problem}); the export is damaged: "
                "export the model again (luong export)"
            )
        return targets.astype(np.int64), frequent.astype(np.int64)

    def _session(self, options: Any, name: str) -> Any:
        import onnxruntime as ort

        graph = self.manifest[name]
        path = self.folder / graph["file"]
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing (is {self.folder} a luong ONNX export?)")
        try:
            session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime's own types (InvalidProtobuf, Fail, ...)
            reason = (str(error).strip().splitlines() or [type(error).__name__])[-1]
            raise ValueError(
                f"{path}: not a graph onnxruntime can load ({reason[:200]}); the export is "
                "damaged: export the model again (luong export)"
            ) from None
        found = (
            [i.name for i in session.get_inputs()],
            [o.name for o in session.get_outputs()],
        )
        if found != (graph["inputs"], graph["outputs"]):
            raise ValueError(
                f"{path}: inputs and outputs {found}, {MANIFEST} lists "
                f"{(graph['inputs'], graph['outputs'])}"
            )
        return session

    # -- strings in, strings out

    def translate(
        self, texts: Sequence[str], options: SearchOptions | None = None, batch_size: int = 512
    ) -> list[str]:
        """The best output per input, in order (``""`` for an empty input), as
        ``luong.translate`` gives it."""
        return [
            outs[0] if outs else "" for outs in self.translate_nbest(texts, options, batch_size)
        ]

    def translate_nbest(
        self, texts: Sequence[str], options: SearchOptions | None = None, batch_size: int = 512
    ) -> list[list[str]]:
        """Each input's ``options.nbest`` outputs, best first (none for an empty input)."""
        lists = self.decode(texts, options, batch_size)
        return [[self.tgt_vocab.decode(h.tokens) for h in hyps] for hyps in lists]

    def decode(
        self, texts: Sequence[str], options: SearchOptions | None = None, batch_size: int = 512
    ) -> list[list[Hypothesis]]:
        """Each input's n-best list (``luong.search.decode``): sources sorted by length and
        searched ``batch_size`` at a time (fewer with wide beams: at most ``SEARCH_ROWS``
        decoder rows), each call over its shortlist's candidates (``columns``) when the
        export has one (``options.shortlist``); an empty or whitespace-only input gets an
        empty list.

        Raises:
            TypeError: ``texts`` is not a sequence of strings, ``options`` not a
                ``SearchOptions``.
            ValueError: ``batch_size`` below 1, a source longer than the model's
                ``max_src_len`` symbols (``input N: ...``), ``options.shortlist`` K >= 1 for
                an export without a shortlist or above the pieces its shortlist holds per
                source piece.
        """
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts: expected a sequence of strings")
        options = SearchOptions() if options is None else options
        if not isinstance(options, SearchOptions):
            raise TypeError(f"options: expected SearchOptions, got {type(options).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size: expected an int >= 1, got {batch_size!r}")
        per_source = self._per_source(options.shortlist)
        ids = [self.src_vocab.encode(text) for text in texts]
        for i, row in enumerate(ids):
            if len(row) - 1 > self.max_src_len:
                raise ValueError(
                    f"input {i + 1}: {len(row) - 1} symbols, above the maximum source length "
                    f"{self.max_src_len}"
                )
        outputs: list[list[Hypothesis]] = [[] for _ in texts]
        todo = sorted(
            (i for i, text in enumerate(texts) if text.strip()), key=lambda i: len(texts[i])
        )
        per_call = min(batch_size, max(1, SEARCH_ROWS // max(options.beam, options.nbest)))
        for start in range(0, len(todo), per_call):
            chunk = todo[start : start + per_call]
            encoded = self.encode([ids[i] for i in chunk])
            limits = (
                2 * encoded.lengths + 10
                if options.max_len is None
                else np.full_like(encoded.lengths, options.max_len)
            )
            columns = None
            if per_source:
                columns = self.columns([ids[i] for i in chunk], per_source)
            if options.greedy:
                tokens, log_probs, weights = self.greedy(encoded, limits, columns)
                if columns is not None:
                    tokens = columns.ids[tokens]
                lists = [[h] for h in _row_hypotheses(tokens, log_probs, weights, encoded, limits)]
            else:
                lists = self.beam(encoded, limits, options, columns)
                if columns is not None:
                    lists = _in_vocabulary(lists, columns)
            for i, hyps in zip(chunk, lists, strict=True):
                outputs[i] = hyps
        return outputs

    def _per_source(self, shortlist: int | None) -> int:
        """The target pieces per source piece a search call's candidates take from the
        export's shortlist, from ``SearchOptions.shortlist`` (0: the full vocabulary; None:
        the table whole, when the export has one).

        Raises:
            ValueError: K >= 1 for an export without a shortlist, or above what it holds.
        """
        if shortlist == 0 or (shortlist is None and self.shortlist is None):
            return 0
        if self.shortlist is None:
            raise ValueError(
                f"shortlist: the export has no lexical shortlist (build one: luong shortlist "
                f"MODEL, then luong export MODEL), got {shortlist}"
            )
        held = self.shortlist[0].shape[1]
        if shortlist is None:
            return held
        if shortlist > held:
            raise ValueError(
                f"shortlist: expected at most {held} (the pieces the export's shortlist holds per "
                f"source piece), got {shortlist}"
            )
        return shortlist

    def columns(self, sources: Sequence[Sequence[int]], per_source: int) -> Columns:
        """The candidates of a search call (``luong.data.shortlist.Shortlist.candidates``): the
        specials, the frequent pieces and the first ``per_source`` pieces of the row of each
        id of ``sources`` (as ``encode`` pads them: PAD's row too, when their lengths
        differ), sorted; with the output layer's rows of those ids.

        Raises:
            ValueError: an export without a shortlist; ``per_source`` out of [1, K]; no
                source, or an id outside the source vocabulary.
        """
        if self.shortlist is None or self.output_layer is None:
            raise ValueError("columns: the export has no lexical shortlist")
        targets, frequent = self.shortlist
        if not 1 <= per_source <= targets.shape[1]:
            raise ValueError(f"per_source: expected 1 to {targets.shape[1]}, got {per_source!r}")
        rows = [np.asarray(row, dtype=np.int64) for row in sources]
        present = np.unique(np.concatenate(rows or [np.array([-1])]))  # none: refused below
        if not 0 <= present[0] <= present[-1] < len(targets):
            raise ValueError(f"sources: expected one or more sources of ids in [0, {len(targets)})")
        keep = np.zeros(len(self.tgt_vocab), dtype=bool)
        keep[: len(SPECIALS)] = True
        keep[frequent] = True
        if len({len(row) for row in sources}) > 1:
            present = np.union1d(present, [PAD])
        keep[targets[present, :per_source].reshape(-1)] = True
        ids = np.flatnonzero(keep)
        weight, bias = self.output_layer
        return Columns(ids, weight[ids], bias[ids])

    # -- the graphs

    def encode(self, ids: Sequence[Sequence[int]]) -> Encoded:
        """Run the encoder on sources given as ids (each ending with EOS, as
        ``Vocabulary.encode`` gives them).

        Raises:
            ValueError: no source, an empty source, or an id outside the source vocabulary.
        """
        size = len(self.src_vocab)
        if not ids or not all(row and all(0 <= i < size for i in row) for row in ids):
            raise ValueError(
                f"ids: expected one or more sources of ids in [0, {size}), each ending with EOS"
            )
        lengths = np.array([len(row) for row in ids], dtype=np.int64)
        src = np.zeros((len(ids), int(lengths.max())), dtype=np.int64)
        for b, row in enumerate(ids):
            src[b, : len(row)] = row
        outputs = dict(
            zip(
                self.encoder_outputs,
                self.encoder.run(None, {"src": src, "src_lengths": lengths}),
                strict=True,
            )
        )
        state = {"hidden": outputs["hidden"]}
        if "cell" in outputs:
            state["cell"] = outputs["cell"]
        if "feed" in self.step_inputs:  # h~_0 = 0 (Luong section 3.3)
            state["feed"] = np.zeros((len(ids), self.hidden_size), dtype=np.float32)
        mask = np.arange(src.shape[1]) < lengths[:, None]
        return Encoded(outputs["keys"], outputs.get("proj"), mask, lengths, state)

    def run_step(
        self,
        tokens: np.ndarray,
        state: dict[str, np.ndarray],
        encoded: Encoded,
        rows: np.ndarray,
        t: int,
        columns: Columns | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """One decoder step of rows ``rows`` ``[R]`` (each row's sentence) from tokens ``[R]``
        at target position ``t``: the next-token log-probabilities ``[R, V]`` with PAD and
        BOS ruled out (-inf, as ``luong.search.hypothesis.next_token_log_probs``), the new
        state (a ``coverage`` in it accumulates the weights) and the weights ``[R, S]``.
        With ``columns`` (a shortlisted export's), tokens are columns and the
        log-probabilities those of the columns ``[R, C]``. No checks: the search calls it
        every step with what ``encode`` and the last step gave (``Decoder.step``'s
        contract)."""
        layer = self.output_layer
        if columns is not None:
            tokens, layer = columns.ids[tokens], (columns.weight, columns.bias)
        given = {
            "tokens": tokens,
            "keys": encoded.keys,
            "proj": encoded.proj,
            "mask": encoded.mask,
            "rows": rows,
            "step": np.array(t, dtype=np.int64),
            **state,
        }
        if layer is not None:
            given["out_weight"], given["out_bias"] = layer
        outputs = dict(
            zip(
                self.step_outputs,
                self.step.run(None, {name: given[name] for name in self.step_inputs}),
                strict=True,
            )
        )
        log_probs = outputs["log_probs"]
        log_probs[:, PAD] = -np.inf
        log_probs[:, BOS] = -np.inf
        new_state = {name: outputs[f"new_{name}"] for name in self.state_names}
        if "coverage" in state:
            new_state["coverage"] = state["coverage"] + outputs["weights"]
        return log_probs, new_state, outputs["weights"]

    # -- search

    def greedy(
        self, encoded: Encoded, limits: np.ndarray, columns: Columns | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Greedy search (``luong.search.greedy.greedy_steps``): tokens, log_probs ``[B, T]``
        and weights ``[B, T, S]``, T <= max(limits); after a row is done its tokens are PAD.
        A row that is done leaves the batch once half of the rows still decoded are done.
        ``columns``: a shortlist's (``run_step``; the tokens are then columns)."""
        batch = len(limits)
        tokens = np.full(batch, BOS, dtype=np.int64)
        rows = np.arange(batch)
        done = np.zeros(batch, dtype=bool)
        state = encoded.state
        steps = []
        for t in range(int(limits.max())):
            log_probs, state, weights = self.run_step(tokens, state, encoded, rows, t, columns)
            tokens = log_probs.argmax(axis=1)
            steps.append((rows, tokens, log_probs[np.arange(len(rows)), tokens], weights))
            done = done | (tokens == EOS) | (limits[rows] <= t + 1)
            remaining = int((~done).sum())
            if remaining == 0:
                break
            if 2 * remaining <= len(rows):
                keep = np.flatnonzero(~done)
                rows, tokens, done = rows[keep], tokens[keep], done[keep]
                state = _reorder(state, keep)
        out_tokens = np.full((batch, len(steps)), PAD, dtype=np.int64)
        out_log_probs = np.zeros((batch, len(steps)), dtype=np.float32)
        out_weights = np.zeros((batch, len(steps), encoded.mask.shape[1]), dtype=np.float32)
        for t, (at, step_tokens, step_log_probs, step_weights) in enumerate(steps):
            out_tokens[at, t] = step_tokens
            out_log_probs[at, t] = step_log_probs
            out_weights[at, t] = step_weights
        return out_tokens, out_log_probs, out_weights

    def beam(
        self,
        encoded: Encoded,
        limits: np.ndarray,
        options: SearchOptions,
        columns: Columns | None = None,
    ) -> list[list[Hypothesis]]:
        """Beam search (``luong.search.beam.search_beams`` as luong decodes: without a prefix,
        ``prune=False``): per sentence, its n-best list, sorted by s(Y, X) recomputed in
        float64. ``columns``: a shortlist's (``run_step``; the hypotheses' tokens are then
        columns).

        Raises:
            ValueError: the model's scores are NaN (weights that overflow).
        """
        batch, source_len = encoded.mask.shape
        k, n, alpha = options.beam, options.nbest, options.alpha
        limits = np.maximum(limits, 1)
        min_lens = np.minimum(limits, options.min_len + 1) - 1
        sentences = np.arange(batch)
        alive = np.full((batch, k), -np.inf, dtype=np.float32)  # the open beams' log P
        alive[:, 0] = 0.0
        greedy = np.zeros(batch, dtype=np.int64)  # the slot on greedy search's path, or -1
        last_lp = _length_penalties(limits, alpha)
        pool = _Pool(batch, n)
        history: list[tuple[np.ndarray, ...]] = []  # token, parent, token_lp, row, weights
        state = dict(encoded.state)
        if options.beta:
            state["coverage"] = np.zeros((batch, source_len), dtype=np.float32)
        live = sentences * k  # each row's slot in the dense [B * k] layout
        tokens = np.full(batch, BOS, dtype=np.int64)
        last = int(limits.max())
        for t in range(last):
            log_probs, state, weights = self.run_step(tokens, state, encoded, live // k, t, columns)
            early = t < min_lens[live // k]
            log_probs[early, EOS] = -np.inf
            # The k best of the B x k x V extensions are among each row's own k best.
            width = min(k, log_probs.shape[1])
            row_token = _top(log_probs, width)
            row_lp = np.take_along_axis(log_probs, row_token, axis=1)
            broken = bool(np.isnan(row_lp).any())  # _top shows a row's NaN among its best
            candidates = alive.reshape(-1)[live][:, None] + row_lp
            position = None
            if len(live) != batch * k:
                dense = np.full((batch * k, width), -np.inf, dtype=np.float32)
                dense[live] = candidates
                candidates = dense
                position = np.zeros(batch * k, dtype=np.int64)
                position[live] = np.arange(len(live))
            flat = candidates.reshape(batch, k * width)
            index = _top(flat, k)
            score = np.take_along_axis(flat, index, axis=1)
            parent = index // width
            # Keep the greedy path: its argmax extension takes the last slot when it fell out.
            g_slot = np.maximum(greedy, 0)
            g_dense = sentences * k + g_slot
            g_row = g_dense if position is None else position[g_dense]
            g_token = log_probs[g_row].argmax(axis=1)
            source = sentences[:, None] * k + parent
            row = source if position is None else position[source]
            token = row_token[row, index - parent * width]
            on_path = greedy >= 0
            g_kept = on_path[:, None] & (parent == g_slot[:, None]) & (token == g_token[:, None])
            missing = on_path & ~g_kept.any(axis=1)
            g_score = alive.reshape(-1)[g_dense] + log_probs[g_row, g_token]
            score[:, -1] = np.where(missing, g_score, score[:, -1])
            parent[:, -1] = np.where(missing, g_slot, parent[:, -1])
            token[:, -1] = np.where(missing, g_token, token[:, -1])
            row[:, -1] = np.where(missing, g_row, row[:, -1])
            g_kept[:, -1] |= missing
            token_lp = log_probs[row, token]
            # At its limit, a sentence's open beams count as hypotheses without EOS.
            ends = np.isfinite(score) & ((token == EOS) | (limits <= t + 1)[:, None])
            final = score / np.float32(length_penalty(t + 1, alpha))
            if options.beta:
                coverage = state["coverage"][row]  # [B, k, S]
                final = final + coverage_penalty(coverage, encoded.mask[:, None, :], options.beta)
            pool.add(np.where(ends, final, -np.inf).astype(np.float32), ends, len(history))
            alive = np.where(ends, -np.inf, score).astype(np.float32)
            g_on = g_kept & ~ends
            greedy = np.where(g_on.any(axis=1), g_on.argmax(axis=1), -1)
            history.append((token, parent, token_lp, row, weights))
            # No open beam can beat the n-th in the pool: the sentence is done.
            with np.errstate(invalid="ignore"):
                best_open = alive.max(axis=1) / last_lp
            done = (pool.score[:, -1] >= best_open) | (limits <= t + 1)
            if t == last - 1 or done.all() or broken:
                if broken:
                    raise ValueError(
                        f"the model's scores are NaN at output step {t + 1}: its weights overflow"
                    )
                break
            alive[done] = -np.inf
            greedy[done] = -1
            next_live = np.flatnonzero(np.isfinite(alive))
            if len(next_live) == 0:
                break
            state = _reorder(state, row.reshape(-1)[next_live])
            tokens = token.reshape(-1)[next_live]
            live = next_live
        return self._collect(pool, history, encoded.lengths, options)

    def _collect(
        self,
        pool: _Pool,
        history: list[tuple[np.ndarray, ...]],
        lengths: np.ndarray,
        options: SearchOptions,
    ) -> list[list[Hypothesis]]:
        """Each sentence's n-best list: each pooled hypothesis followed back through the
        steps, scored (``hypothesis_score``) and sorted, best first."""
        result = []
        for b in range(pool.score.shape[0]):
            real = int(lengths[b])
            hyps = []
            for i in np.flatnonzero(pool.filled[b]):
                end, slot = int(pool.step[b, i]), int(pool.slot[b, i])
                tokens, log_probs, rows = [], [], []
                for t in range(end, -1, -1):
                    token, parent, token_lp, row, weights = history[t]
                    tokens.append(int(token[b, slot]))
                    log_probs.append(float(token_lp[b, slot]))
                    rows.append(weights[row[b, slot], :real])
                    slot = int(parent[b, slot])
                tokens.reverse()
                log_probs.reverse()
                attention = np.stack(rows[::-1])
                score = hypothesis_score(log_probs, attention, options.alpha, options.beta)
                hyps.append(Hypothesis(tokens, score, log_probs, attention))
            hyps.sort(key=lambda h: -h.score)
            result.append(hyps)
        return result


class _Pool:
    """The n best ended hypotheses per sentence (``luong.search.beam.Pool``): score
    ``[B, n]`` sorted best first, filled ``[B, n]``, and the step and slot each ended at."""

    def __init__(self, batch: int, n: int) -> None:
        self.score = np.full((batch, n), -np.inf, dtype=np.float32)
        self.filled = np.zeros((batch, n), dtype=bool)
        self.step = np.zeros((batch, n), dtype=np.int64)
        self.slot = np.zeros((batch, n), dtype=np.int64)

    def add(self, score: np.ndarray, ended: np.ndarray, step: int) -> None:
        """Merge the candidates score ``[B, k]`` that ended (``ended``) at ``step``. An ended
        hypothesis is kept whatever its score (-inf, NaN), below every finite one."""
        batch, n = self.score.shape
        slots = np.broadcast_to(np.arange(score.shape[1]), score.shape)
        merged = np.concatenate([self.score, score], axis=1)
        filled = np.concatenate([self.filled, ended], axis=1)
        lowest = np.finfo(np.float32).min
        rank = np.where(np.isnan(merged) | np.isneginf(merged), lowest, merged)
        order = _top(np.where(filled, rank, -np.inf).astype(np.float32), n)
        self.score = np.take_along_axis(merged, order, axis=1)
        self.filled = np.take_along_axis(filled, order, axis=1)
        steps = np.concatenate([self.step, np.full(score.shape, step, dtype=np.int64)], axis=1)
        self.step = np.take_along_axis(steps, order, axis=1)
        self.slot = np.take_along_axis(np.concatenate([self.slot, slots], axis=1), order, axis=1)


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """The indices of each row's ``k`` largest values ``[R, k]``, largest first (torch.topk;
    equal values in either order). NaN ranks above everything (numpy's order), so that a row
    holding a NaN shows one among its ``k`` and a caller finds it there without a pass over
    all of ``values``."""
    rows, size = values.shape
    chunks = size // TOP_CHUNK
    if chunks >= 4 * k:
        # A value in none of the k chunks with the largest maxima has k values (those maxima)
        # at least as large, so the k largest lie in those chunks and the tail that fills no
        # chunk: one fast max over the row, then a partition of k * TOP_CHUNK values, not V.
        view = np.lib.stride_tricks.as_strided(
            values,
            (rows, chunks, TOP_CHUNK),
            (values.strides[0], TOP_CHUNK * values.strides[1], values.strides[1]),
            writeable=False,
        )
        best = np.argpartition(view.max(axis=2), chunks - k, axis=1)[:, chunks - k :]
        within = (best[:, :, None] * TOP_CHUNK + np.arange(TOP_CHUNK)).reshape(rows, -1)
        tail = np.arange(chunks * TOP_CHUNK, size)
        if len(tail):
            within = np.concatenate([within, np.broadcast_to(tail, (rows, len(tail)))], axis=1)
        found = _top(np.take_along_axis(values, within, axis=1), k)
        return np.take_along_axis(within, found, axis=1)
    if k < size:
        # Partitioned at size - k on the values themselves: no negated copy.
        part = np.argpartition(values, size - k, axis=1)[:, size - k :]
    else:
        part = np.broadcast_to(np.arange(size), values.shape)
    order = np.argsort(-np.take_along_axis(values, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def _in_vocabulary(lists: list[list[Hypothesis]], columns: Columns) -> list[list[Hypothesis]]:
    """Hypotheses whose tokens are ``columns``' columns, with their target ids instead
    (``luong.search.text``'s)."""
    ids = columns.ids.tolist()
    return [
        [Hypothesis([ids[c] for c in h.tokens], h.score, h.log_probs, h.attention) for h in hyps]
        for hyps in lists
    ]


def _length_penalties(lengths: np.ndarray, alpha: float) -> np.ndarray:
    """lp of each length ``[B]`` in float32 (``luong.search.penalties.length_penalties``)."""
    return ((np.float32(5.0) + lengths.astype(np.float32)) / np.float32(6.0)) ** np.float32(alpha)


def _reorder(state: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    """The state of rows ``rows`` (``DecoderState.reorder``): hidden and cell ``[L, R, d]``
    on their axis 1, feed and coverage on axis 0."""
    return {
        name: value[:, rows] if name in ("hidden", "cell") else value[rows]
        for name, value in state.items()
    }


def _row_hypotheses(
    tokens: np.ndarray,
    log_probs: np.ndarray,
    weights: np.ndarray,
    encoded: Encoded,
    limits: np.ndarray,
) -> list[Hypothesis]:
    """One hypothesis per row, cut after its first EOS or at its limit; the score is the sum
    of its log_probs (``luong.search.hypothesis.row_hypotheses``)."""
    result = []
    for b in range(tokens.shape[0]):
        row = tokens[b, : limits[b]].tolist()
        length = row.index(EOS) + 1 if EOS in row else len(row)
        row_lp = log_probs[b, :length].tolist()
        attention = weights[b, :length, : encoded.lengths[b]].copy()
        result.append(Hypothesis(row[:length], float(sum(row_lp)), row_lp, attention))
    return result


def usable_threads(threads: int) -> int:
    """``threads`` (onnxruntime's intra-op threads; 0: its own default) capped at the CPUs
    this process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``), as
    ``luong.common.devices.use_threads`` caps torch's: 1,000 threads on two CPUs did not finish two
    lines in 120 s."""
    if threads == 0:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity masks (macOS, Windows)
        cpus = os.cpu_count() or 1
    return min(threads, max(1, cpus))


def load(folder: str | Path, threads: int = 0) -> OnnxTranslator:
    """``OnnxTranslator(folder, threads)``: an export folder, ready to translate."""
    return OnnxTranslator(folder, threads)


# -- the command ------------------------------------------------------------------------------


def _lines(stream: BinaryIO, name: str) -> Iterator[str]:
    """UTF-8 lines without their ends (``\\n`` or ``\\r\\n``; a BOM before the first
    dropped), as luong reads input (``luong.common.files.iter_lines``): no line is read past
    ``MAX_LINE_BYTES``, so ``/dev/zero`` is an error, not a process out of memory.

    Raises:
        ValueError: ``NAME:LINE: line longer than N bytes``, or a line that is not UTF-8.
    """
    number = 0
    while True:
        # At most the limit and a b"\r\n": a longer line is refused unread.
        line = stream.readline(MAX_LINE_BYTES + 2)
        if not line:
            return
        number += 1
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if len(line) > MAX_LINE_BYTES:
            raise ValueError(
                f"{name}:{number}: line longer than {MAX_LINE_BYTES} bytes; expected a text "
                "file of one sentence a line"
            )
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{name}:{number}: not valid UTF-8 ({error.reason})") from None
        if "\x00" in text:  # as luong translate: a binary file's byte, no text to translate
            raise ValueError(
                f"{name}:{number}: a NUL byte (byte {line.index(0) + 1} of the line); "
                "expected text, not binary data"
            )
        yield text


def main(argv: Sequence[str] | None = None) -> int:
    """``python luong_onnx.py DIR``: one source a line in (stdin or --input), its outputs
    out (the n-best tab-separated); errors are one line on stderr and exit status 1."""
    parser = argparse.ArgumentParser(
        prog="luong_onnx",
        description="Translate with a model that luong export wrote, with onnxruntime.",
    )
    parser.add_argument("folder", type=Path, help="the export folder")
    parser.add_argument("--input", type=Path, help="read sources from FILE (default: stdin)")
    parser.add_argument("--beam", type=int, default=1, help="beam size (default 1: greedy)")
    parser.add_argument("--nbest", type=int, default=1, help="outputs per source, at most beam")
    parser.add_argument("--alpha", type=float, default=0.0, help="length penalty weight (0)")
    parser.add_argument("--beta", type=float, default=0.0, help="coverage penalty weight (0)")
    parser.add_argument("--min-len", type=int, default=0, help="no EOS before N tokens (0)")
    parser.add_argument(
        "--max-len", type=int, help="the most output tokens (default: 2 x source + 10)"
    )
    parser.add_argument(
        "--shortlist",
        type=int,
        metavar="K",
        help="the output layer over a lexical shortlist only: the K most likely target pieces "
        "of each source piece in a call, the most frequent ones and the specials; 0: the full "
        "vocabulary, exact (default: the export's shortlist whole when it has one)",
    )
    parser.add_argument("--batch-size", type=int, default=512, help="sources per search call")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="onnxruntime threads, at most the CPUs this process may use (0: auto)",
    )
    args = parser.parse_args(argv)
    try:
        options = SearchOptions(
            args.beam, args.nbest, args.alpha, args.beta, args.min_len, args.max_len, args.shortlist
        )
        model = OnnxTranslator(args.folder, args.threads)
        if model.threads < args.threads:
            print(
                f"luong_onnx: --threads {args.threads}: capped at {model.threads}, the CPUs "
                "this process may use (os.sched_getaffinity)",
                file=sys.stderr,
            )
        if args.input is None:
            sources = list(_lines(sys.stdin.buffer, "<stdin>"))
        else:
            with open(args.input, "rb") as stream:
                sources = list(_lines(stream, str(args.input)))
        for outputs in model.translate_nbest(sources, options, args.batch_size):
            sys.stdout.write("\t".join(outputs) + "\n")
        sys.stdout.flush()
    except (ValueError, TypeError, OSError) as error:
        print(f"luong_onnx: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
