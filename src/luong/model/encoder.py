"""The encoder: embedding and a (bidirectional) LSTM or GRU over the real source lengths.

Shapes: ``B`` batch, ``S`` source length, ``E`` embedding width, ``H`` encoder hidden size,
``K`` key width (``H``, or ``2 H`` when bidirectional), ``L`` layers, ``d`` decoder width.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

__all__ = ["Bridge", "Encoder", "RNNState", "make_rnn"]

Cell = Literal["lstm", "gru"]
# An RNN state: h [L, B, H] and, for an LSTM, c [L, B, H] (None for a GRU).
RNNState = tuple[Tensor, Tensor | None]


def make_rnn(
    cell: str, input_size: int, hidden: int, layers: int, dropout: float, bidirectional: bool
) -> nn.LSTM | nn.GRU:
    """A batch-first ``nn.LSTM`` or ``nn.GRU`` (inter-layer dropout only when layers > 1)."""
    rnn_class = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
    return rnn_class(
        input_size,
        hidden,
        num_layers=layers,
        batch_first=True,
        dropout=dropout if layers > 1 else 0.0,
        bidirectional=bidirectional,
    )


class Encoder(nn.Module):
    """Embeds the source and runs the RNN over the real positions only.

    Padding never enters a state: a sentence gives the same keys and final state whatever
    the batch it is in and however much padding follows it. A batch with few distinct
    lengths (what length bucketing makes) runs one plain RNN call per length on exactly
    those rows and columns: the fused kernels (oneDNN on the CPU) run these calls two to
    three times faster than the packed-sequence path, which is used for batches of many
    lengths.
    """

    max_groups = 4  # the most distinct lengths a batch may have for per-length calls

    def __init__(
        self,
        vocab_size: int,
        emb_dim: int,
        hidden: int,
        layers: int,
        cell: Cell,
        bidirectional: bool,
        dropout: float,
        pad_id: int,
    ) -> None:
        super().__init__()
        self.cell = cell
        self.layers = layers
        self.directions = 2 if bidirectional else 1
        self.out_dim = hidden * self.directions  # K
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.dropout = nn.Dropout(dropout)
        self.rnn = make_rnn(cell, emb_dim, hidden, layers, dropout, bidirectional)

    def forward(self, src: Tensor, lengths: Tensor) -> tuple[Tensor, RNNState]:
        """Encode.

        Args:
            src: token ids ``[B, S]``.
            lengths: real lengths ``[B]`` (each >= 1), on any device.

        Returns:
            keys ``[B, S, K]`` (zeros at padding) and the final state per layer, the two
            directions concatenated: h ``[L, B, K]`` and c ``[L, B, K]`` (LSTM) or None.
        """
        embedded = self.dropout(self.embedding(src))  # [B, S, E]
        distinct = sorted(set(lengths.tolist()))
        if len(distinct) <= self.max_groups:
            keys, final = self._by_length(embedded, lengths, distinct)
        else:
            packed = pack_padded_sequence(
                embedded, lengths.cpu(), batch_first=True, enforce_sorted=False
            )
            outputs, final = self.rnn(packed)
            keys, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.shape[1])
        if isinstance(final, tuple):
            return keys, (self._per_layer(final[0]), self._per_layer(final[1]))
        return keys, (self._per_layer(final), None)

    def _by_length(
        self, embedded: Tensor, lengths: Tensor, distinct: list[int]
    ) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]:
        """One RNN call per distinct length n, on the rows of that length, columns < n."""
        batch, width = embedded.shape[0], embedded.shape[1]
        if len(distinct) == 1:
            outputs, final = self.rnn(embedded[:, : distinct[0]])
            return F.pad(outputs, (0, 0, 0, width - distinct[0])), final
        keys = embedded.new_zeros(batch, width, self.out_dim)
        finals: list[Tensor] | None = None
        for n in distinct:
            rows = (lengths == n).nonzero().squeeze(1)  # [B_n]
            outputs, final = self.rnn(embedded.index_select(0, rows)[:, :n])
            keys = keys.index_copy(0, rows, F.pad(outputs, (0, 0, 0, width - n)))
            parts = list(final) if isinstance(final, tuple) else [final]  # [L dirs, B_n, H]
            if finals is None:
                finals = [p.new_zeros(p.shape[0], batch, p.shape[2]) for p in parts]
            finals = [f.index_copy(1, rows, p) for f, p in zip(finals, parts, strict=True)]
        assert finals is not None  # distinct is not empty
        return keys, (finals[0], finals[1]) if len(finals) == 2 else finals[0]

    def _per_layer(self, state: Tensor) -> Tensor:
        """[L * dirs, B, H] (layer-major, forward first) -> [L, B, dirs * H]."""
        if self.directions == 1:
            return state
        layers_, batch, hidden = state.shape
        state = state.view(layers_ // 2, 2, batch, hidden)
        return torch.cat([state[:, 0], state[:, 1]], dim=-1)


class Bridge(nn.Module):
    """The decoder's initial state from the encoder's final state.

    ``"bridge"``: tanh(W h + b) per layer (and a second map for the LSTM cell state);
    ``"last"``: the final state itself (needs K == d); ``"zero"``: zeros. When the encoder
    and decoder have different numbers of layers, every decoder layer starts from the
    encoder's top layer.
    """

    def __init__(
        self, mode: str, key_dim: int, d: int, enc_layers: int, dec_layers: int, lstm: bool
    ) -> None:
        super().__init__()
        self.mode = mode
        self.d = d
        self.dec_layers = dec_layers
        self.same_layers = enc_layers == dec_layers
        if mode == "bridge":
            self.hidden = nn.Linear(key_dim, d)
            self.cell = nn.Linear(key_dim, d) if lstm else None
        self.lstm = lstm

    def forward(self, final: RNNState) -> RNNState:
        """final: h ``[L_enc, B, K]``, c or None -> h ``[L_dec, B, d]``, c or None."""
        h, c = final
        if self.mode == "zero":
            zeros = h.new_zeros(self.dec_layers, h.shape[1], self.d)
            return zeros, (zeros.clone() if self.lstm else None)
        h = self._layers(h)
        c = self._layers(c) if c is not None else None
        if self.mode == "bridge":
            h = torch.tanh(self.hidden(h))
            if self.cell is not None and c is not None:
                c = torch.tanh(self.cell(c))
        if self.lstm and c is None:
            c = torch.zeros_like(h)
        return h.contiguous(), (c.contiguous() if self.lstm and c is not None else None)

    def _layers(self, state: Tensor) -> Tensor:
        if self.same_layers:
            return state
        return state[-1:].expand(self.dec_layers, -1, -1)
