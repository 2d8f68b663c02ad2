"""Subword vocabularies: a sentencepiece model (unigram or BPE) as a ``Vocab``.

``train_subword`` learns a model from the training text when ``luong train`` starts;
``SubwordVocab`` reads and writes text through it. The ids agree with ``Vocab``'s: sentencepiece
is trained with pad 0, ``<s>`` 1, ``</s>`` 2 and ``<unk>`` 3, and the pieces follow from id 4.

Text goes through untouched: no normalisation inside sentencepiece (its ``identity`` rule),
runs of spaces kept, and byte fallback, so a character the model never saw becomes its UTF-8
bytes (``<0xE2>``...) instead of ``<unk>``. Detokenizing a segmentation gives back the text it
came from, character for character (after Unicode NFC, which ``normalize`` applies, and
lowercasing when asked), except what an output never holds: the byte pieces of a line break,
a tab or a NUL (``<0x0A>``, ``<0x0D>``, ``<0x09>``, ``<0x00>``, ``<0xE2><0x80><0xA8>``...)
decode to a space each (``luong.data.vocab.one_line``), whatever the model emits.

A subword vocabulary is saved as two files: ``NAME.json`` (what it is) and ``NAME.model``
(sentencepiece's own model file, usable by sentencepiece's tools), whose SHA-256 the JSON
records. ``load_vocab`` reads either kind of vocabulary file.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import sentencepiece as spm

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import MAX_JSON_BYTES, atomic_write, read_bounded, write_json
from luong.data.vocab import Vocab, one_line

__all__ = ["SUBWORDS", "SubwordVocab", "load_vocab", "nfc", "train_subword"]

SUBWORDS: tuple[str, ...] = ("unigram", "bpe")
"""The sentencepiece model types."""

SUBWORD = "subword"  # the ``tokens`` of a subword vocabulary
BYTES = 256  # the byte pieces byte fallback adds


class SubwordVocab(Vocab):
    """A vocabulary whose symbols are the pieces of a sentencepiece model.

    Args:
        model: the serialized sentencepiece model (``SentencePieceProcessor``'s proto).
        kind: ``"unigram"`` or ``"bpe"``, what the model was trained as (it says how
            ``sample`` reads its ``alpha``).
        lowercase: lowercase text in ``normalize``.

    Raises:
        ValueError: ``model`` is not a sentencepiece model, or its specials are not pad 0,
            ``<s>`` 1, ``</s>`` 2 and ``<unk>`` 3.
    """

    TOKEN_KINDS = (SUBWORD,)

    def __init__(self, model: bytes, kind: str = "unigram", lowercase: bool = False) -> None:
        if kind not in SUBWORDS:
            raise LuongError(f"kind: expected one of {', '.join(SUBWORDS)}, got {kind!r}")
        if not isinstance(model, bytes):
            raise LuongTypeError(f"model: expected bytes, got {type(model).__name__}")
        processor = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(model)
        except (RuntimeError, OSError) as error:
            raise LuongError(f"model: not a sentencepiece model ({error})") from None
        specials = [processor.id_to_piece(i) for i in range(len(self.SPECIALS))]
        if specials != list(self.SPECIALS):
            raise LuongError(
                f"model: expected the specials {list(self.SPECIALS)} at ids 0-3, got {specials}"
            )
        self.model = model
        self.processor = processor
        self.kind = kind
        pieces = [processor.id_to_piece(i) for i in range(4, processor.get_piece_size())]
        super().__init__(pieces, SUBWORD, lowercase, "NFC")

    def _check_symbol(self, position: int, symbol: str) -> None:
        if not symbol or any(c in symbol for c in "\n\r"):
            raise LuongError(f"symbols[{position}]: expected a piece without line breaks")

    def normalize(self, text: str) -> str:
        """Unicode NFC (and lowercasing when ``lowercase``): canonical equivalents become one
        spelling, nothing else changes (NFKC would turn ``m²`` into ``m2``)."""
        return nfc(text, self.lowercase)

    def split(self, text: str) -> list[str]:
        """Normalised ``text`` as sentencepiece pieces (the most probable segmentation)."""
        return list(self.processor.encode(text, out_type=str))

    def sample(self, text: str, alpha: float) -> list[int]:
        """Ids of a sampled segmentation of ``text`` with EOS (subword regularisation, Kudo
        2018: unigram samples with smoothing ``alpha``; BPE drops merges with probability
        ``alpha``). The draws come from sentencepiece's generator
        (``spm.set_random_generator_seed``)."""
        pieces = self.processor.encode(
            self.normalize(text), out_type=int, enable_sampling=True, alpha=alpha, nbest_size=-1
        )
        return [*pieces, self.eos_id]

    def join(self, symbols: Iterable[str]) -> str:
        """Pieces back to text (sentencepiece's detokenization), one line of it: the bytes of
        a line break, a tab or a NUL decode to a space each (``one_line``); byte pieces that
        form no whole UTF-8 character are left out (``whole_characters``)."""
        return one_line(str(self.processor.decode_pieces(whole_characters(symbols))))

    def surface_tokens(self, text: str) -> list[str]:
        """The pieces of ``text`` before lowercasing."""
        return self.split(nfc(text, lowercase=False))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        if not isinstance(other, SubwordVocab):
            return False
        return (self.model, self.lowercase) == (other.model, other.lowercase)

    def __repr__(self) -> str:
        return f"SubwordVocab(V={len(self)}, kind={self.kind!r}, lowercase={self.lowercase})"

    def to_json(self) -> dict[str, Any]:
        """What ``save`` writes beside the model file (the model itself is in ``NAME.model``)."""
        return {
            "tokens": SUBWORD,
            "kind": self.kind,
            "lowercase": self.lowercase,
            "size": len(self),
            "specials": list(self.SPECIALS),
            "sha256": hashlib.sha256(self.model).hexdigest(),
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``path`` (JSON) and the sentencepiece model beside it (``.model``), each
        atomically; the model first, so the JSON never names a model that is not there."""
        path = Path(path)

        def write(tmp: Path) -> None:
            tmp.write_bytes(self.model)

        atomic_write(path.with_suffix(".model"), write)
        write_json(path, {**self.to_json(), "model": path.with_suffix(".model").name})


BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")
"""A byte-fallback piece: one byte of a character the model has no piece for."""


def whole_characters(symbols: Iterable[str]) -> list[str]:
    """``symbols`` without the byte pieces (``<0xE2>``) that form no whole UTF-8 character
    with the byte pieces next to them: two of the three bytes of ``„``, a lone continuation
    byte, ``<0xFF>``. A model may emit any of them; sentencepiece decodes each as U+FFFD,
    which is no text (and which a catalog in ISO-8859-1 cannot hold)."""
    kept: list[str] = []
    run: list[str] = []  # the byte pieces since the last other piece
    for symbol in [*symbols, None]:
        if symbol is not None and BYTE_PIECE.fullmatch(symbol):
            run.append(symbol)
            continue
        data = bytes(int(piece[3:5], 16) for piece in run)
        at = 0
        while at < len(data):  # UTF-8 is prefix-free: the first length that decodes is it
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


def nfc(text: str, lowercase: bool) -> str:
    """Unicode NFC, then lowercasing (re-normalised) when ``lowercase``.

    Raises:
        TypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
    text = unicodedata.normalize("NFC", text)
    return unicodedata.normalize("NFC", text.lower()) if lowercase else text


def train_subword(
    texts: Iterable[str], kind: str, vocab_size: int, lowercase: bool = False
) -> SubwordVocab:
    """Learn a sentencepiece model of ``vocab_size`` pieces (the 4 specials and 256 byte
    pieces included) from ``texts``, deterministically (one thread).

    ``texts`` is read once, lazily, a line at a time (a generator over a file will do), but
    sentencepiece itself keeps every line it learns from in memory while it trains (its own
    copy, as bytes): that memory grows with the text, and is sentencepiece's.

    Args:
        texts: the training text, a line each (source and target lines for a joint model).
        kind: ``"unigram"`` or ``"bpe"``.
        vocab_size: V, at least 4 + 256 + a few.
        lowercase: lowercase the text first (and in ``normalize`` afterwards).

    Raises:
        ValueError: an unknown kind, or a size the text cannot support (sentencepiece's own
            complaint, on one line, with the size asked for).
    """
    if kind not in SUBWORDS:
        raise LuongError(f"subword: expected one of {', '.join(SUBWORDS)}, got {kind!r}")
    check_positive_int("vocab_size", vocab_size)
    reader = _TextReader(texts, lowercase)
    lines = iter(reader)
    first = next(lines, None)
    if first is None:
        raise LuongError("texts: expected some text to learn subwords from, got none")
    writer = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=itertools.chain([first], lines),
            model_writer=writer,
            model_type=kind,
            vocab_size=vocab_size,
            character_coverage=1.0,
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            byte_fallback=True,
            split_digits=False,
            pad_id=0,
            bos_id=1,
            eos_id=2,
            unk_id=3,
            pad_piece=Vocab.PAD,
            bos_piece=Vocab.BOS,
            eos_piece=Vocab.EOS,
            unk_piece=Vocab.UNK,
            num_threads=1,
            max_sentence_length=1 << 20,
            minloglevel=2,
        )
    except RuntimeError as error:
        if reader.error is not None:  # the text's own error (a bad line, a non-string)
            raise reader.error from None
        complaint = " ".join(str(error).split())
        # Too few pieces for the text's characters: sentencepiece's own advice names its
        # --character_coverage, which luong keeps at 1.0 (byte fallback covers the rest).
        needed = re.search(r"smaller than required_chars\. \d+ vs (\d+)", complaint)
        if needed:
            raise LuongError(
                f"vocab_size: {vocab_size} {kind} pieces cannot be learned from this text: "
                f"it needs at least {needed[1]} (the special and byte pieces, and one per "
                f"distinct character of the text); raise vocab_size (--vocab-size {needed[1]})"
            ) from None
        raise LuongError(
            f"vocab_size: {vocab_size} {kind} pieces cannot be learned from this text "
            f"(sentencepiece: {complaint})"
        ) from None
    if reader.error is not None:  # sentencepiece went on without the rest of the text
        raise reader.error
    return SubwordVocab(writer.getvalue(), kind, lowercase)


class _TextReader:
    """The non-blank lines of ``texts``, normalised (``nfc``), as sentencepiece reads them.
    An error raised while reading ``texts`` (a bad line of a file, a non-string) reaches
    sentencepiece, which either stops with a RuntimeError of its own or takes it for the end
    of the text: ``error`` keeps the original, for ``train_subword`` to raise instead."""

    def __init__(self, texts: Iterable[str], lowercase: bool) -> None:
        self.texts = texts
        self.lowercase = lowercase
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[str]:
        try:
            for text in self.texts:
                line = nfc(text, self.lowercase)
                if line.strip():
                    yield line
        except (Exception, KeyboardInterrupt) as error:
            self.error = error
            raise


def load_vocab(path: str | os.PathLike[str]) -> Vocab:
    """Read a vocabulary file of either kind (``Vocab.save`` or ``SubwordVocab.save``).

    Raises:
        FileNotFoundError: the file, or a subword vocabulary's model file, is missing.
        ValueError: not a vocabulary, or a model file whose SHA-256 differs from the JSON's;
            the message names the file.
    """
    path = Path(path)
    try:
        data = json.loads(read_bounded(path, MAX_JSON_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return Vocab.load(path)  # its message names the problem
    if not (isinstance(data, dict) and data.get("tokens") == SUBWORD):
        return Vocab.load(path)
    expected = {"tokens", "kind", "lowercase", "size", "specials", "sha256", "model"}
    if set(data) != expected or not isinstance(data["model"], str):
        raise LuongError(
            f"{path}: not a subword vocabulary: expected the fields {sorted(expected)}"
        )
    model_path = path.with_name(Path(data["model"]).name)
    try:
        model = read_bounded(model_path, MAX_JSON_BYTES)
    except FileNotFoundError:
        raise FileNotFoundError(f"{model_path}: missing (the model of {path})") from None
    if hashlib.sha256(model).hexdigest() != data["sha256"]:
        raise LuongError(f"{model_path}: is not the model {path} was saved with (SHA-256 differs)")
    if not isinstance(data["lowercase"], bool):
        raise LuongError(f"{path}: lowercase: expected true or false, got {data['lowercase']!r}")
    if data["kind"] not in SUBWORDS:
        raise LuongError(
            f"{path}: kind: expected one of {', '.join(SUBWORDS)}, got {data['kind']!r}"
        )
    try:
        vocab = SubwordVocab(model, data["kind"], data["lowercase"])
    except ValueError as error:
        raise LuongError(f"{model_path}: {error}") from None
    if len(vocab) != data["size"]:
        raise LuongError(f"{path}: size {data['size']} but the model has {len(vocab)} pieces")
    return vocab
