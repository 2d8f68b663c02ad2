"""The sequence-to-sequence model: encoder, bridge and decoder as ``Seq2SeqConfig``
(``luong.config``) describes them, with its vocabularies; save and load. It knows nothing of
search, training or the command line (``luong.search`` decodes it).

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``V`` target vocabulary.

A saved model is a folder of data, never pickled code:

    model.safetensors   the weights
    config.json         ``Seq2SeqConfig`` as JSON, the package version that wrote it, the
                        SHA-256 of each vocabulary file and, for an int8 model
                        (``Seq2Seq.to_int8``), ``"quantized": "int8"`` and its int8 parts;
                        ``"src_lang"`` and ``"tgt_lang"``, the language pair (ISO 639 codes,
                        ``luong.common.languages``), where known
    src_vocab.json      the source vocabulary
    tgt_vocab.json      the target vocabulary

The weights are trained for the vocabularies as saved: an edited vocabulary file (``"lowercase":
true``, another symbol order, another sentencepiece model) would change every output without
a word, so ``from_pretrained`` refuses a vocabulary file whose SHA-256 is not the one
``config.json`` records. Folders written before the hashes were recorded load unchecked.
(``config.json``'s keys and checks are in ``luong.model.folder``.)

An int8 model (``luong quantize``) holds, for each weight matrix of its int8 parts, the int8
values under the float weight's name and a float32 scale per row beside them
(``luong.model.int8``); it decodes on the CPU and is never trained.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import Tensor, nn

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import MAX_JSON_BYTES, read_bounded, write_text
from luong.common.folder_files import MODEL_CONFIG, SHORTLIST, SRC_VOCAB, TGT_VOCAB, WEIGHTS
from luong.common.languages import check_language
from luong.common.tensor_files import read_tensor_shapes, read_tensors, write_tensors
from luong.config.choices import INT8_PARTS
from luong.config.model import Seq2SeqConfig
from luong.data.batching import check_batch, source_mask
from luong.data.shortlist import Shortlist
from luong.data.subword import load_vocab
from luong.data.vocab import Vocab
from luong.model.attention import BahdanauAttention, LuongAttention
from luong.model.decoder import Decoder, DecoderState, Memory
from luong.model.encoder import Bridge, Encoder
from luong.model.folder import (
    INT8,
    QUANTIZED,
    SRC_LANG,
    TGT_LANG,
    VOCAB_SHA256,
    check_sizes,
    check_vocab_hashes,
    int8_parts,
    language_pair,
    no_model_folder,
    no_model_yet,
    vocab_file_sha256,
)
from luong.model.int8 import Int8Cells, Int8Linear
from luong.model.local_attention import LocalAttention
from luong.version import __version__

__all__ = [
    "Seq2Seq",
    "evaluating",
    "load_checked",
]


class Seq2Seq(nn.Module):
    """An attentional encoder-decoder (Luong et al. 2015) with its vocabularies.

    Args:
        config: the architecture.
        src_vocab: source vocabulary.
        tgt_vocab: target vocabulary.
        seed: when given, the initial weights are drawn after ``torch.manual_seed(seed)`` and
            torch's global generator is restored afterwards; when None, they are drawn from
            the global generator.

    Raises:
        TypeError: a config or a vocabulary of the wrong type.
        ValueError: tied embeddings with two vocabularies, or more than
            ``luong.config.model.MAX_PARAMETERS`` parameters with these vocabularies (refused
            before anything is allocated).
    """

    def __init__(
        self,
        config: Seq2SeqConfig,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise LuongTypeError(f"config: expected a Seq2SeqConfig, got {type(config).__name__}")
        for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
            if not isinstance(vocab, Vocab):
                raise LuongTypeError(f"{name}: expected a Vocab, got {type(vocab).__name__}")
        if config.tie_embeddings and src_vocab != tgt_vocab:
            raise LuongError(
                "tie_embeddings: one embedding matrix needs one joint vocabulary for source "
                f"and target, got {src_vocab!r} and {tgt_vocab!r}"
            )
        # With the vocabularies' sizes, before anything is allocated.
        config.check_parameters(len(src_vocab), len(tgt_vocab))
        self.config = config
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.int8_parts: tuple[str, ...] = ()  # to_int8's parts; empty: a float model
        # The language pair (ISO 639 codes; None: unknown): data, not architecture, so not in
        # the config; save_pretrained records it, from_pretrained reads it back.
        self.src_lang: str | None = None
        self.tgt_lang: str | None = None
        # The lexical shortlist decoding reads by default (luong.data.shortlist; None: none). Data
        # of the folder like the pair: save_pretrained writes it, from_pretrained reads it.
        self.shortlist: Shortlist | None = None
        if seed is None:
            self._build()  # from torch's global generator, which moves on
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self._build()

    def _build(self) -> None:
        cfg = self.config
        self.encoder = Encoder(
            len(self.src_vocab),
            cfg.emb_dim,
            cfg.enc_hidden,
            cfg.enc_layers,
            cfg.cell,  # type: ignore[arg-type]
            cfg.bidirectional,
            cfg.dropout,
            Vocab.pad_id,
        )
        self.bridge = Bridge(
            cfg.bridge,
            cfg.key_dim,
            cfg.dec_hidden,
            cfg.enc_layers,
            cfg.dec_layers,
            lstm=cfg.cell == "lstm",
        )
        seed = int(torch.randint(0, 2**31 - 1, ()).item())
        attention: LuongAttention | BahdanauAttention
        if cfg.attention == "bahdanau":
            attention = BahdanauAttention(cfg.dec_hidden, seed, key_dim=cfg.key_dim)
        elif cfg.local != "none":
            attention = LocalAttention(
                cfg.dec_hidden,
                cfg.attention,  # type: ignore[arg-type]
                cfg.local,  # type: ignore[arg-type]
                cfg.window,
                seed,
                key_dim=cfg.key_dim,
            )
        else:
            attention = LuongAttention(
                cfg.dec_hidden,
                cfg.attention,  # type: ignore[arg-type]
                seed,
                key_dim=cfg.key_dim,
                max_len=cfg.max_src_len + 1 if cfg.attention == "location" else None,
            )
        self.decoder = Decoder(
            len(self.tgt_vocab),
            cfg.emb_dim,
            cfg.dec_hidden,
            cfg.dec_layers,
            cfg.cell,
            attention,
            cfg.input_feed,
            cfg.dropout,
            Vocab.pad_id,
        )
        if cfg.tie_embeddings:
            self.decoder.embedding.weight = self.encoder.embedding.weight

    @property
    def device(self) -> torch.device:
        return self.decoder.out.weight.device

    def init_uniform_(self, bound: float, seed: int) -> None:
        """Draw every parameter afresh from U(-bound, bound) (Luong et al. 2015 section 4.1:
        ``bound`` 0.1), in registration order, from a generator seeded with ``seed``; the
        embeddings' padding rows stay zero (padding is never read into a prediction).

        Args:
            bound: the half-width of the range, a finite number > 0.
            seed: the generator's seed, an int from 0 to 2**64 - 1.

        Raises:
            ValueError: ``bound`` or ``seed`` out of range.
        """
        if (
            not isinstance(bound, int | float)
            or isinstance(bound, bool)
            or not 0 < bound < math.inf
        ):
            raise LuongError(f"bound: expected a finite number > 0, got {bound!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise LuongError(f"seed: expected an int from 0 to 2**64 - 1, got {seed!r}")
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for param in self.parameters():
                # Drawn on the CPU in float32, so that a seed gives the same weights anywhere.
                values = torch.empty(param.shape, dtype=torch.float32)
                param.copy_(values.uniform_(-bound, bound, generator=generator))
            for embedding in (self.encoder.embedding, self.decoder.embedding):
                embedding.weight[Vocab.pad_id].zero_()

    def to_int8(self, parts: Sequence[str] = INT8_PARTS) -> Seq2Seq:
        """Hold ``parts`` of the decoder in int8 (``luong.model.int8``), in place, for decoding on
        the CPU; returns the model, which can no longer be trained.

        ``"output"``: the output layer W_o. ``"cells"``: the decoder's cells, every layer's
        input and recurrent matrices (layer 0's embedding columns, whose input is not in
        [-1, 1], are multiplied in float32 from their int8 values). ``"attention"``: W_c of
        the attentional state (eq. 5). The encoder, the bridge, the embeddings and the
        attention's scores stay in float32: they run once per sentence or are lookups.

        Raises:
            TypeError: ``parts`` is not a sequence of strings.
            ValueError: no parts, an unknown or repeated one, a model already in int8, or
                one that is not on the CPU.
        """
        if isinstance(parts, str) or not isinstance(parts, Sequence):
            raise LuongTypeError(f"parts: expected a sequence of part names, got {parts!r}")
        unknown = [p for p in parts if p not in INT8_PARTS]
        if unknown or not parts or len(set(parts)) != len(parts):
            raise LuongError(
                f"parts: expected some of {', '.join(INT8_PARTS)}, each once, got "
                f"{', '.join(map(repr, parts)) or 'none'}"
            )
        if self.int8_parts:
            raise LuongError(
                f"model: already int8 ({', '.join(self.int8_parts)}); quantize the float "
                "model it was made from"
            )
        if self.device.type != "cpu":
            raise LuongError(f"model: int8 weights run on the CPU, got a model on {self.device}")
        decoder = self.decoder
        with torch.no_grad():
            if "output" in parts:
                assert isinstance(decoder.out, nn.Linear)
                decoder.out = Int8Linear.quantize(decoder.out)
            if "cells" in parts:
                assert not isinstance(decoder.rnn, Int8Cells)
                decoder.rnn = Int8Cells.quantize(decoder.rnn)
            if "attention" in parts:
                assert isinstance(decoder.attention.combine, nn.Linear)
                decoder.attention.combine = Int8Linear.quantize(decoder.attention.combine)
        self.int8_parts = tuple(p for p in INT8_PARTS if p in parts)
        return self.eval()

    # -- the forward computation ------------------------------------------------------------

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, DecoderState]:
        """Encode a batch: src ``[B, S]``, src_lengths ``[B]`` -> the memory the decoder reads
        (keys projected once) and its initial state."""
        keys, final = self.encoder(src, src_lengths)
        memory = self.decoder.memory(keys, source_mask(src, src_lengths))
        return memory, self.decoder.initial_state(self.bridge(final), src.shape[0])

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits ``[B, T, V]`` for decoder inputs tgt_in ``[B, T]``.

        Raises:
            ValueError: shapes that do not fit together.
        """
        check_batch(src, src_lengths)
        if not isinstance(tgt_in, Tensor) or tgt_in.dim() != 2 or tgt_in.shape[0] != src.shape[0]:
            got = tuple(tgt_in.shape) if isinstance(tgt_in, Tensor) else type(tgt_in).__name__
            raise LuongError(f"tgt_in: expected shape [B, T] with B = {src.shape[0]}, got {got}")
        memory, state = self.encode(src, src_lengths)
        logits, _ = self.decoder(tgt_in, state, memory)
        return logits

    # -- save and load ----------------------------------------------------------------------

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write the model folder (weights, config, vocabularies, the shortlist if the model
        has one); returns its path."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        # Each file is replaced atomically: a reader never sees half of one. The config comes
        # last: it records the vocabulary files' hashes.
        write_tensors(path / WEIGHTS, self.weights(), metadata={"format": "luong"})
        self.src_vocab.save(path / SRC_VOCAB)
        self.tgt_vocab.save(path / TGT_VOCAB)
        config: dict[str, object] = {
            "luong_version": __version__,
            "model": self.config.to_json(),
            VOCAB_SHA256: {name: vocab_file_sha256(path / name) for name in (SRC_VOCAB, TGT_VOCAB)},
        }
        if self.int8_parts:
            config |= {QUANTIZED: "int8", INT8: list(self.int8_parts)}
        for key, code in ((SRC_LANG, self.src_lang), (TGT_LANG, self.tgt_lang)):
            if code is not None:
                config[key] = check_language(code, key)
        if self.shortlist is not None:
            self.shortlist.save(path, self.src_vocab, self.tgt_vocab)
        write_text(path / MODEL_CONFIG, json.dumps(config, indent=2) + "\n")
        return path

    def weights(self) -> dict[str, Tensor]:
        """The tensors a model file holds: ``state_dict()``, each tied tensor once (the
        decoder's embedding is the encoder's with ``tie_embeddings``)."""
        state = self.state_dict()
        for name in self.tied():
            del state[name]
        return state

    def tied(self) -> dict[str, str]:
        """The names of ``state_dict()`` that are another name's tensor, and that name."""
        if not self.config.tie_embeddings:
            return {}
        return {"decoder.embedding.weight": "encoder.embedding.weight"}

    @classmethod
    def from_pretrained(
        cls, directory: str | Path, device: str | torch.device = "cpu", *, shortlist: bool = True
    ) -> Seq2Seq:
        """Rebuild a model from ``save_pretrained``'s folder (``shortlist``: with its lexical
        shortlist, when the folder has one; False: without, the file not read).

        The config's sizes are checked against the weights' header (``check_sizes``) before
        the model is built, so a config that does not match costs nothing.

        An int8 model (``to_int8``; ``config.json`` says ``"quantized": "int8"``) loads on
        the CPU only.

        Raises:
            FileNotFoundError: the folder or one of its files is missing
                (``NotADirectoryError``: the folder is a file).
            ValueError: a file is unreadable, a vocabulary file is not the one the model was
                saved with (its SHA-256 differs from the one ``config.json`` records), the
                weights do not match the config (names the tensor and the expected and
                found shapes), an int8 model and another device than the CPU, or a
                shortlist file (``SHORTLIST``) that is not this model's (``Shortlist.load``).
        """
        path = Path(directory)
        if not path.is_dir():
            raise no_model_folder(path)
        unfinished = no_model_yet(path)
        if unfinished is not None:
            raise FileNotFoundError(unfinished)
        for name in (WEIGHTS, MODEL_CONFIG, SRC_VOCAB, TGT_VOCAB):
            if not (path / name).is_file():
                raise FileNotFoundError(f"{path / name}: missing (is {path} a luong model folder?)")
        text = read_bounded(path / MODEL_CONFIG, MAX_JSON_BYTES)
        try:
            raw = json.loads(text.decode("utf-8"))
            config = Seq2SeqConfig.from_json(raw.get("model") if isinstance(raw, dict) else raw)
        except (ValueError, TypeError, UnicodeDecodeError) as error:
            raise LuongError(f"{path / MODEL_CONFIG}: not a valid model config: {error}") from None
        except RecursionError:
            raise LuongError(f"{path / MODEL_CONFIG}: not valid JSON (nested too deep)") from None
        parts = int8_parts(raw, path / MODEL_CONFIG)
        src_lang, tgt_lang = language_pair(raw, path / MODEL_CONFIG)
        if parts and torch.device(device).type != "cpu":
            raise LuongError(
                f"{path}: an int8 model (luong quantize) decodes on the CPU only, got device "
                f"{device}; decode it on the CPU (--device cpu), or the float model it was made "
                f"from on {device}"
            )
        src_vocab, tgt_vocab = load_vocab(path / SRC_VOCAB), load_vocab(path / TGT_VOCAB)
        # After reading them, so that a file that is no vocabulary says what is wrong with it.
        if isinstance(raw, dict) and VOCAB_SHA256 in raw:
            check_vocab_hashes(path, raw[VOCAB_SHA256])
        # The sizes first, from the header: a tampered config (emb_dim = 800000, 10,000
        # layers) is refused before it is built.
        check_sizes(
            config,
            len(src_vocab),
            len(tgt_vocab),
            read_tensor_shapes(path / WEIGHTS),
            path / WEIGHTS,
        )
        model = cls(config, src_vocab, tgt_vocab)
        if parts:
            model.to_int8(parts)
        load_checked(model, read_tensors(path / WEIGHTS), path / WEIGHTS)
        model.src_lang, model.tgt_lang = src_lang, tgt_lang
        if shortlist and (path / SHORTLIST).is_file():  # optional; another model's is refused
            model.shortlist = Shortlist.load(path, src_vocab, tgt_vocab)
        return model.to(device).eval()


def load_checked(model: Seq2Seq, tensors: dict[str, Tensor], source: Path) -> None:
    """Copy ``tensors`` into ``model`` after checking that names, shapes and dtypes match
    exactly (``model.weights()``: a tied tensor once; float32 weights: an int64, bool,
    float64 or float8 tensor of the right shape is refused, not converted) and that every
    value is finite.

    Raises:
        ValueError: names missing or unexpected, a shape or dtype that differs, or a value not
            finite; the message names the file and the tensor.
    """
    expected = model.weights()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise LuongError(
            f"{source}: does not match the config: missing tensors {missing}, "
            f"unexpected tensors {unexpected}"
        )
    for name, tensor in tensors.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise LuongError(
                f"{source}: tensor {name!r} has shape {tuple(tensor.shape)}, "
                f"the config expects {tuple(expected[name].shape)}"
            )
        if tensor.dtype != expected[name].dtype:
            raise LuongError(
                f"{source}: tensor {name!r} has dtype {_dtype_name(tensor.dtype)}, expected "
                f"{_dtype_name(expected[name].dtype)}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise LuongError(f"{source}: tensor {name!r} holds non-finite values")
    tied = model.tied()
    model.load_state_dict({**tensors, **{name: tensors[of] for name, of in tied.items()}})


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode (no dropout) for the block; the model's previous mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)
