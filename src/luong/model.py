"""The sequence-to-sequence model: configuration, encoder, bridge, decoder; save and load.

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``V`` target vocabulary.

A saved model is a folder of data, never pickled code:

    model.safetensors   the weights
    config.json         ``Seq2SeqConfig`` as JSON (and the package version that wrote it)
    src_vocab.json      the source vocabulary
    tgt_vocab.json      the target vocabulary
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, overload

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import Tensor, nn

from luong.attention import (
    GLOBAL_SCORES,
    LOCAL_MODES,
    LOCAL_SCORES,
    BahdanauAttention,
    LocalAttention,
    LuongAttention,
)
from luong.checkpoint import write_tensors, write_text
from luong.decoder import Decoder, DecoderState, Memory
from luong.encoder import Bridge, Encoder
from luong.vocab import Vocab, join_symbols

__all__ = ["ATTENTIONS", "LOCALS", "Seq2Seq", "Seq2SeqConfig"]

ATTENTIONS: tuple[str, ...] = (*GLOBAL_SCORES, "bahdanau")
LOCALS: tuple[str, ...] = ("none", *LOCAL_MODES)
CELLS = ("lstm", "gru")
BRIDGES = ("bridge", "last", "zero")

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
SRC_VOCAB = "src_vocab.json"
TGT_VOCAB = "tgt_vocab.json"


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The architecture. The defaults are the dates model of ``make demo``."""

    cell: str = "gru"  # recurrent cell of encoder and decoder: "lstm" or "gru"
    emb_dim: int = 64  # E: width of the source and target embeddings
    enc_hidden: int = 64  # encoder hidden size per direction
    enc_layers: int = 2  # encoder layers
    bidirectional: bool = True  # bidirectional encoder: keys are K = 2 * enc_hidden wide
    dec_hidden: int = 128  # d: decoder hidden size, the attention's query width
    dec_layers: int = 1  # decoder layers
    # The score (Luong eq. 8): "dot", "general", "concat", "location", "scaled_dot"
    # (dot / sqrt(d)), or "bahdanau" (additive, attends before the step).
    attention: str = "dot"
    # Luong section 3.2: "none" (global attention), "monotonic" (local-m, p_t = t) or
    # "predictive" (local-p, eq. 9-10); local takes dot, general, concat or scaled_dot.
    local: str = "none"
    window: int = 10  # D: local attention reads the source window [p_t - D, p_t + D]
    # The longest source the model takes, in symbols (its EOS not counted): longer training
    # sources stop the run, luong translate rejects (or --truncate cuts) longer lines, and
    # the location score's W_a has a row per position (max_src_len + 1, the EOS included).
    max_src_len: int = 64
    input_feed: bool = True  # feed h~_{t-1} into step t (Luong section 3.3)
    bridge: str = "bridge"  # initial decoder state: "bridge" (linear + tanh), "last", "zero"
    dropout: float = 0.0  # on embeddings, between layers and before the output layer

    def __post_init__(self) -> None:
        _choice("cell", self.cell, CELLS)
        _choice("attention", self.attention, ATTENTIONS)
        _choice("local", self.local, LOCALS)
        _choice("bridge", self.bridge, BRIDGES)
        sizes = ("emb_dim", "enc_hidden", "enc_layers", "dec_hidden", "dec_layers")
        for name in (*sizes, "window", "max_src_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        for name in ("bidirectional", "input_feed"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        if not isinstance(self.dropout, int | float) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a number in [0, 1), got {self.dropout!r}")
        if self.local != "none" and self.attention not in LOCAL_SCORES:
            raise ValueError(
                f"local {self.local!r}: expected attention one of {', '.join(LOCAL_SCORES)} "
                f"inside the window, got {self.attention!r} (use local 'none' for it)"
            )
        if self.attention in ("dot", "scaled_dot") and self.key_dim != self.dec_hidden:
            raise ValueError(
                f"attention {self.attention!r} needs keys as wide as the decoder: key width "
                f"{self.key_dim} (enc_hidden x directions) != dec_hidden {self.dec_hidden}; "
                "use general, concat or bahdanau, or change the sizes"
            )
        if self.bridge == "last" and self.key_dim != self.dec_hidden:
            raise ValueError(
                f"bridge 'last' copies the encoder state: key width {self.key_dim} != "
                f"dec_hidden {self.dec_hidden}; use bridge 'bridge' or 'zero'"
            )

    @property
    def key_dim(self) -> int:
        """K, the width of the encoder outputs."""
        return self.enc_hidden * (2 if self.bidirectional else 1)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Seq2SeqConfig:
        """Rebuild from ``to_json``'s dict; unknown or missing fields raise ``ValueError``."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown fields {unknown}; expected {sorted(names)}")
        missing = sorted(names - set(data))
        if missing:
            raise ValueError(f"missing fields {missing}; expected {sorted(names)}")
        return cls(**data)


def _choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")


class Seq2Seq(nn.Module):
    """An attentional encoder-decoder (Luong et al. 2015) with its vocabularies.

    Args:
        config: the architecture.
        src_vocab: source vocabulary.
        tgt_vocab: target vocabulary.
        seed: when given, the initial weights are drawn after ``torch.manual_seed(seed)`` and
            torch's global generator is restored afterwards; when None, they are drawn from
            the global generator.
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
            raise TypeError(f"config: expected a Seq2SeqConfig, got {type(config).__name__}")
        for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
            if not isinstance(vocab, Vocab):
                raise TypeError(f"{name}: expected a Vocab, got {type(vocab).__name__}")
        self.config = config
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
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

    @property
    def device(self) -> torch.device:
        return self.decoder.out.weight.device

    # -- the forward computation ------------------------------------------------------------

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, DecoderState]:
        """Encode a batch: src ``[B, S]``, src_lengths ``[B]`` -> the memory the decoder reads
        (keys projected once) and its initial state."""
        keys, final = self.encoder(src, src_lengths)
        mask = torch.arange(src.shape[1], device=src.device) < src_lengths.to(src.device)[:, None]
        memory = self.decoder.memory(keys, mask)
        return memory, self.decoder.initial_state(self.bridge(final), src.shape[0])

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits ``[B, T, V]`` for decoder inputs tgt_in ``[B, T]``.

        Raises:
            ValueError: shapes that do not fit together.
        """
        _check_batch(src, src_lengths)
        if not isinstance(tgt_in, Tensor) or tgt_in.dim() != 2 or tgt_in.shape[0] != src.shape[0]:
            got = tuple(tgt_in.shape) if isinstance(tgt_in, Tensor) else type(tgt_in).__name__
            raise ValueError(f"tgt_in: expected shape [B, T] with B = {src.shape[0]}, got {got}")
        memory, state = self.encode(src, src_lengths)
        logits, _ = self.decoder(tgt_in, state, memory)
        return logits

    # -- text in, text out ------------------------------------------------------------------

    def source_length(self, text: str) -> int:
        """The symbols the encoder reads for ``text``, the EOS it appends not counted
        (compare with ``config.max_src_len``)."""
        return len(self.src_vocab.tokenize(text))

    def truncate_source(self, text: str, limit: int) -> str:
        """``text`` cut to its first ``limit`` symbols (normalised as the vocabulary reads
        it: NFKC, and lowercase for a lowercasing vocabulary)."""
        tokens = self.src_vocab.tokenize(text)[:limit]
        return join_symbols(tokens, self.src_vocab.tokens)

    def encode_sources(self, texts: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Raw strings -> src ``[B, S]`` (ids, EOS appended, padded) and lengths ``[B]``."""
        ids = [self.src_vocab.encode(text, eos=True) for text in texts]
        return pad_batch(ids, self.device)

    @overload
    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int = 1,
        n_best: None = None,
        alpha: float = 0.0,
        beta: float = 0.0,
        replace_unk: bool = False,
        batch_size: int = 512,
        max_len: int | None = None,
    ) -> list[str]: ...

    @overload
    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int = 1,
        n_best: int,
        alpha: float = 0.0,
        beta: float = 0.0,
        replace_unk: bool = False,
        batch_size: int = 512,
        max_len: int | None = None,
    ) -> list[list[str]]: ...

    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int = 1,
        n_best: int | None = None,
        alpha: float = 0.0,
        beta: float = 0.0,
        replace_unk: bool = False,
        batch_size: int = 512,
        max_len: int | None = None,
    ) -> list[str] | list[list[str]]:
        """Translate raw strings, batched; one output per input, in order.

        Greedy search by default; beam search with ``beam_size > 1`` (``luong.search.decode``
        does the work and gives the hypotheses themselves: scores, tokens, attention).

        Args:
            texts: the sources.
            beam_size: k (1: greedy search).
            n_best: None gives the best output per input (a string); an int gives up to that
                many outputs per input, best first (a list of strings; at most ``beam_size``).
            alpha: length penalty weight (beam search scores, ``luong.search``).
            beta: coverage penalty weight.
            replace_unk: replace each ``<unk>`` in an output by the source token it attended
                to most (Luong et al. 2015, "Addressing the Rare Word Problem").
            batch_size: sentences per search call.
            max_len: the most output tokens; default twice the source length plus 10.

        Returns:
            one output per input. An empty (or whitespace-only) input gives ``""`` (with
            ``n_best``: an empty list).

        Raises:
            TypeError: ``texts`` is not a sequence of strings.
            ValueError: an option out of range (``batch_size`` or ``max_len`` below 1,
                ``n_best > beam_size``, ...).
        """
        from luong.search import decode, hypothesis_text

        lists = decode(
            self,
            texts,
            beam_size=beam_size,
            n_best=1 if n_best is None else n_best,
            alpha=alpha,
            beta=beta,
            batch_size=batch_size,
            max_len=max_len,
        )
        outputs = [
            [hypothesis_text(self, h, text if replace_unk else None) for h in hyps]
            for text, hyps in zip(texts, lists, strict=True)
        ]
        if n_best is None:
            return [outs[0] if outs else "" for outs in outputs]
        return outputs

    # -- save and load ----------------------------------------------------------------------

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write the model folder (weights, config, vocabularies); returns its path."""
        from luong import __version__

        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        # Each file is replaced atomically: a reader never sees half of one.
        write_tensors(path / WEIGHTS, self.state_dict(), metadata={"format": "luong"})
        config = {"luong_version": __version__, "model": self.config.to_json()}
        write_text(path / CONFIG, json.dumps(config, indent=2) + "\n")
        self.src_vocab.save(path / SRC_VOCAB)
        self.tgt_vocab.save(path / TGT_VOCAB)
        return path

    @classmethod
    def from_pretrained(cls, directory: str | Path, device: str | torch.device = "cpu") -> Seq2Seq:
        """Rebuild a model from ``save_pretrained``'s folder.

        Raises:
            FileNotFoundError: the folder or one of its files is missing.
            ValueError: a file is unreadable, or the weights do not match the config (names
                the tensor and the expected and found shapes).
        """
        path = Path(directory)
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no such model folder")
        for name in (WEIGHTS, CONFIG, SRC_VOCAB, TGT_VOCAB):
            if not (path / name).is_file():
                raise FileNotFoundError(f"{path / name}: missing (is {path} a luong model folder?)")
        try:
            raw = json.loads((path / CONFIG).read_text(encoding="utf-8"))
            config = Seq2SeqConfig.from_json(raw.get("model") if isinstance(raw, dict) else raw)
        except (ValueError, TypeError, UnicodeDecodeError) as error:
            raise ValueError(f"{path / CONFIG}: not a valid model config: {error}") from None
        model = cls(config, Vocab.load(path / SRC_VOCAB), Vocab.load(path / TGT_VOCAB))
        try:
            tensors = load_file(str(path / WEIGHTS))
        except (SafetensorError, OSError, ValueError) as error:
            raise ValueError(
                f"{path / WEIGHTS}: not a readable safetensors file: {error}"
            ) from None
        load_checked(model, tensors, path / WEIGHTS)
        return model.to(device).eval()


def load_checked(model: nn.Module, tensors: dict[str, Tensor], source: Path) -> None:
    """Copy ``tensors`` into ``model`` after checking that names and shapes match exactly.

    Raises:
        ValueError: names missing or unexpected, a shape that differs, or a value not finite.
    """
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise ValueError(
            f"{source}: does not match the config: missing tensors {missing}, "
            f"unexpected tensors {unexpected}"
        )
    for name, tensor in tensors.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise ValueError(
                f"{source}: tensor {name!r} has shape {tuple(tensor.shape)}, "
                f"the config expects {tuple(expected[name].shape)}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{source}: tensor {name!r} holds non-finite values")
    model.load_state_dict(tensors)


def pad_batch(ids: Sequence[Sequence[int]], device: torch.device) -> tuple[Tensor, Tensor]:
    """Id lists -> a padded ``[B, S]`` tensor (pad id 0) and the lengths ``[B]``."""
    width = max((len(x) for x in ids), default=0)
    rows = [list(x) + [Vocab.pad_id] * (width - len(x)) for x in ids]
    batch = torch.tensor(rows, dtype=torch.long).view(len(ids), width)
    lengths = torch.tensor([len(x) for x in ids], dtype=torch.long)
    return batch.to(device), lengths.to(device)


@contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode (no dropout) for the block; the model's previous mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def default_max_len(src_len: Tensor) -> Tensor:
    """How long each output may grow when the caller does not say: twice its source's length
    (EOS included), plus 10. src_len ``[B]`` -> ``[B]``."""
    return 2 * src_len + 10


def _check_batch(src: Tensor, src_lengths: Tensor) -> None:
    if not isinstance(src, Tensor) or src.dim() != 2 or src.dtype != torch.long:
        got = f"{src.dtype} {tuple(src.shape)}" if isinstance(src, Tensor) else type(src).__name__
        raise ValueError(f"src: expected a long tensor [B, S], got {got}")
    if (
        not isinstance(src_lengths, Tensor)
        or src_lengths.dim() != 1
        or src_lengths.shape[0] != src.shape[0]
    ):
        found = (
            str(tuple(src_lengths.shape))
            if isinstance(src_lengths, Tensor)
            else type(src_lengths).__name__
        )
        raise ValueError(f"src_lengths: expected shape [B] = ({src.shape[0]},), got {found}")
    if src_lengths.numel() and not (
        int(src_lengths.min()) >= 1 and int(src_lengths.max()) <= src.shape[1]
    ):
        raise ValueError(
            f"src_lengths: expected lengths in [1, S = {src.shape[1]}], got {src_lengths.tolist()}"
        )
