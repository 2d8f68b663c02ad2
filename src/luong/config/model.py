"""``Seq2SeqConfig``: the model's architecture, a checked dataclass (the ``[model]`` table of
a run's TOML), saved as ``config.json`` beside the weights and rebuilt from it on load.

Its sizes are bounded, generously (``MAX_WIDTH``, ``MAX_LAYERS``, ``MAX_SRC_LEN``,
``MAX_PARAMETERS``), so that a size no machine can allocate is refused on construction,
before anything is allocated; ``parameter_count`` gives a model's parameters without
building it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import MAX_LINE_BYTES
from luong.config.choices import (
    ATTENTIONS,
    BRIDGES,
    CELLS,
    LOCAL_SCORES,
    LOCALS,
    SAME_WIDTH_SCORES,
)
from luong.config.fields import check_choice, is_number, setting
from luong.data.vocab import Vocab

__all__ = [
    "MAX_LAYERS",
    "MAX_PARAMETERS",
    "MAX_SRC_LEN",
    "MAX_WIDTH",
    "Seq2SeqConfig",
]

# Bounds on the architecture, generous ones: sizes no real model needs, which could not be
# allocated (--emb-dim 100000000000 ended in a torch allocator traceback) or would build for
# minutes (--enc-layers 100000). Checked on construction, before anything is allocated.
MAX_WIDTH = 16_384
"""The widest embedding or hidden layer: 16 times Luong et al.'s 1000-wide LSTMs."""
MAX_LAYERS = 64
"""The most layers of the encoder or the decoder: 8 times GNMT's stacks (Wu et al. 2016, 8
LSTM layers each)."""
MAX_SRC_LEN = MAX_LINE_BYTES
"""The longest source and the widest local window, in symbols: no line luong reads holds more
bytes (``luong.common.files.MAX_LINE_BYTES``, 1,048,576)."""
MAX_PARAMETERS = 4_000_000_000
"""The most parameters a model may have: 16 GB of float32 weights, 64 GB to train with Adam
(weights, gradients and two moments), about what one large accelerator holds."""


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The architecture. The defaults are the dates model of ``make demo``."""

    # The sizes are bounded (generously: widths up to MAX_WIDTH = 16,384, layers up to
    # MAX_LAYERS = 64, lengths up to MAX_SRC_LEN = 1,048,576, at most MAX_PARAMETERS = 4
    # billion parameters in all), so that a size no machine can allocate is refused at once.
    cell: str = setting("gru", "the recurrent cell of the encoder and the decoder", choices=CELLS)
    emb_dim: int = setting(64, "E: the width of the source and target embeddings, 1 to 16,384")
    enc_hidden: int = setting(64, "the encoder's hidden size per direction, 1 to 16,384")
    enc_layers: int = setting(2, "the encoder's layers, 1 to 64")
    bidirectional: bool = setting(
        True, "a bidirectional encoder (its keys are then K = 2 x enc-hidden wide)"
    )
    dec_hidden: int = setting(
        128, "d: the decoder's hidden size, the attention's query width, 1 to 16,384"
    )
    dec_layers: int = setting(1, "the decoder's layers, 1 to 64")
    attention: str = setting(
        "dot",
        "the score (Luong eq. 8; scaled_dot: dot / sqrt(d); bahdanau: additive, attending "
        "before the step)",
        choices=ATTENTIONS,
    )
    local: str = setting(
        "none",
        "none: global attention; monotonic (local-m, p_t = t) or predictive (local-p, eq. 9-10): "
        "local attention (Luong section 3.2), with dot, general, concat or scaled_dot",
        choices=LOCALS,
    )
    window: int = setting(
        10, "D: local attention reads the source positions p_t - D to p_t + D, 1 to 1,048,576"
    )
    # No line luong reads holds more than 1,048,576 bytes; the location score's W_a has a row
    # per position (max_src_len + 1, the EOS included).
    max_src_len: int = setting(
        64,
        "the longest source, in symbols (its EOS not counted), 1 to 1,048,576: longer "
        "training sources stop the run, luong translate refuses (or --truncate cuts) longer lines",
    )
    input_feed: bool = setting(
        True, "feed the attentional state h~_{t-1} into step t (Luong section 3.3)"
    )
    bridge: str = setting(
        "bridge",
        "the decoder's initial state: bridge (linear + tanh of the encoder's last state), last "
        "(that state itself: K = d) or zero",
        choices=BRIDGES,
    )
    dropout: float = setting(
        0.0,
        "dropout on the embeddings, between layers and before the output layer, 0 to < 1 (0: none)",
    )
    tie_embeddings: bool = setting(
        False, "one embedding matrix for the source and the target (a joint vocabulary only)"
    )

    def __post_init__(self) -> None:
        check_choice("cell", self.cell, CELLS)
        check_choice("attention", self.attention, ATTENTIONS)
        check_choice("local", self.local, LOCALS)
        check_choice("bridge", self.bridge, BRIDGES)
        for name, most in SIZE_BOUNDS.items():
            value = getattr(self, name)
            check_positive_int(name, value)
            if value > most:
                raise LuongError(f"{name}: expected at most {most}, got {value}")
        for name in ("bidirectional", "input_feed", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise LuongTypeError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        if not is_number(self.dropout) or not 0.0 <= self.dropout < 1.0:
            raise LuongError(f"dropout: expected a number in [0, 1), got {self.dropout!r}")
        if self.local != "none" and self.attention not in LOCAL_SCORES:
            raise LuongError(
                f"local {self.local!r}: expected attention one of {', '.join(LOCAL_SCORES)} "
                f"inside the window, got {self.attention!r} (use local 'none' for it)"
            )
        if self.attention in SAME_WIDTH_SCORES and self.key_dim != self.dec_hidden:
            raise LuongError(
                f"attention {self.attention!r} needs keys as wide as the decoder: key width "
                f"{self.key_dim} (enc_hidden x directions) != dec_hidden {self.dec_hidden}; "
                "use general, concat or bahdanau, or change the sizes"
            )
        if self.bridge == "last" and self.key_dim != self.dec_hidden:
            raise LuongError(
                f"bridge 'last' copies the encoder state: key width {self.key_dim} != "
                f"dec_hidden {self.dec_hidden}; use bridge 'bridge' or 'zero'"
            )
        # The vocabularies are not known yet: the smallest, the specials alone.
        specials = len(Vocab.SPECIALS)
        self._check_parameters(specials, specials, f"with vocabularies of the {specials} specials")

    @property
    def key_dim(self) -> int:
        """K, the width of the encoder outputs."""
        return self.enc_hidden * (2 if self.bidirectional else 1)

    def parameter_count(self, src_size: int, tgt_size: int) -> int:
        """The parameters of a ``Seq2Seq`` of this config with vocabularies of ``src_size``
        and ``tgt_size`` symbols (specials included), a tied embedding once: what
        ``sum(p.numel() for p in model.parameters())`` gives, computed without building it."""
        return sum(self._parameter_parts(src_size, tgt_size).values())

    def check_parameters(self, src_size: int, tgt_size: int) -> None:
        """Refuse a model of more than ``MAX_PARAMETERS`` parameters with vocabularies of
        ``src_size`` and ``tgt_size`` symbols, before anything is allocated.

        Raises:
            ValueError: the count and the limit, and the part that holds the most parameters
                with the sizes that make it.
        """
        vocabularies = f"with vocabularies of {src_size:,} and {tgt_size:,} symbols"
        self._check_parameters(src_size, tgt_size, vocabularies)

    def _check_parameters(self, src_size: int, tgt_size: int, vocabularies: str) -> None:
        parts = self._parameter_parts(src_size, tgt_size)
        total = sum(parts.values())
        if total <= MAX_PARAMETERS:
            return
        largest = max(parts, key=parts.__getitem__)
        d, k = self.dec_hidden, self.key_dim
        embedded = src_size if self.tie_embeddings else src_size + tgt_size
        what = {
            "embeddings": f"emb_dim {self.emb_dim} x {embedded:,} symbols",
            "encoder": f"enc_hidden {self.enc_hidden}, enc_layers {self.enc_layers}",
            "bridge": f"key width {k}, dec_hidden {d}",
            "attention": (
                f"max_src_len {self.max_src_len}, dec_hidden {d}"
                if self.attention == "location"
                else f"key width {k}, dec_hidden {d}"
            ),
            "decoder": f"dec_hidden {d}, dec_layers {self.dec_layers}",
            "output layer": f"dec_hidden {d} x {tgt_size:,} symbols",
        }[largest]
        raise LuongError(
            f"model: {total:,} parameters {vocabularies}, above the limit of "
            f"{MAX_PARAMETERS:,} (16 GB of float32 weights); {parts[largest]:,} of them in the "
            f"{largest} ({what})"
        )

    def _parameter_parts(self, src_size: int, tgt_size: int) -> dict[str, int]:
        """The parameters of each part of the model (``parameter_count``). Each recurrent
        layer and direction of ``nn.LSTM`` / ``nn.GRU`` has W_ih ``[G h, input]``, W_hh
        ``[G h, h]`` and two biases ``[G h]``, G = 4 gates (LSTM) or 3 (GRU)."""
        gates = 4 if self.cell == "lstm" else 3
        d, k, e = self.dec_hidden, self.key_dim, self.emb_dim

        def recurrent(first_input: int, hidden: int, layers: int, directions: int) -> int:
            above = hidden * directions  # the input of the layers above the first
            per_layer = [first_input] + [above] * (layers - 1)
            return sum(directions * gates * hidden * (n + hidden + 2) for n in per_layer)

        bahdanau = self.attention == "bahdanau"
        score = {
            "dot": 0,
            "scaled_dot": 0,
            "general": k * d,  # W_a [d, K]
            "concat": (d + k) * d + d,  # W_a [d, d + K], v [1, d]
            "location": (self.max_src_len + 1) * d,  # W_a [max_src_len + 1, d]
            "bahdanau": d * d + k * d + d,  # W_q [d, d], W_k [d, K], v [1, d]
        }[self.attention]
        position = d * d + d if self.local == "predictive" else 0  # W_p [d, d], v_p [1, d]
        # The first decoder layer reads the embedding, h~_{t-1} (input feeding) and, with
        # Bahdanau's score, the context.
        first = e + (d if self.input_feed else 0) + (k if bahdanau else 0)
        # W [d, K] and b [d] for h (and for c, LSTM) with bridge "bridge"; "last" and "zero"
        # have none.
        bridge = (k * d + d) * (2 if self.cell == "lstm" else 1) if self.bridge == "bridge" else 0
        return {
            "embeddings": (src_size if self.tie_embeddings else src_size + tgt_size) * e,
            "encoder": recurrent(
                e, self.enc_hidden, self.enc_layers, 2 if self.bidirectional else 1
            ),
            "bridge": bridge,
            "attention": score + position + (k + d) * d,  # and W_c [d, K + d]
            "decoder": recurrent(first, d, self.dec_layers, 1),
            "output layer": (d + 1) * tgt_size,
        }

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Seq2SeqConfig:
        """Rebuild from ``to_json``'s dict; unknown or missing fields raise ``ValueError``
        (fields added since the first release may be missing: they take their defaults)."""
        if not isinstance(data, dict):
            raise LuongError(f"expected a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise LuongError(f"unknown fields {unknown}; expected {sorted(names)}")
        missing = sorted(names - set(data) - ADDED_MODEL_FIELDS)
        if missing:
            raise LuongError(f"missing fields {missing}; expected {sorted(names)}")
        return cls(**data)


# The most each size field of Seq2SeqConfig may be.
SIZE_BOUNDS = {
    "emb_dim": MAX_WIDTH,
    "enc_hidden": MAX_WIDTH,
    "enc_layers": MAX_LAYERS,
    "dec_hidden": MAX_WIDTH,
    "dec_layers": MAX_LAYERS,
    "window": MAX_SRC_LEN,
    "max_src_len": MAX_SRC_LEN,
}

# Seq2SeqConfig fields added after 0.1.0: a config.json written before them has none.
ADDED_MODEL_FIELDS = frozenset({"tie_embeddings"})
