"""The attentional decoder with input feeding (Luong et al. 2015, sections 3 and 3.3).

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``E`` embedding width,
``d`` decoder width, ``K`` key width, ``V`` target vocabulary, ``L`` layers, ``G`` gates
per cell (3 for a GRU, 4 for an LSTM).

One decoder step, for an attention with ``query_from == "current"`` (Luong):

    1. x_t = [emb(y_{t-1}) ; h~_{t-1}]            input feeding, h~_0 = 0 (section 3.3)
    2. h_t = RNN(x_t, h_{t-1})                    the stacked cell steps first
    3. c_t, a_t = attend(h_t, keys)               then attends with the new state (eq. 7)
    4. h~_t = tanh(W_c [c_t ; h_t])               the attentional state (eq. 5)
    5. logits_t = W_o h~_t + b_o                  (eq. 6, before the softmax)

For ``query_from == "previous"`` (Bahdanau), step 3 comes first with h_{t-1}, and c_t joins
the cell's input: x_t = [emb(y_{t-1}) ; h~_{t-1} ; c_t].

The state counts the steps: step 3 passes the target position t (0 for the first output
token) to the attention, which local-m attention centres its window on (section 3.2; every
other attention ignores it). Search needs nothing more: ``reorder`` keeps the count.

The cells use the weights of one ``nn.LSTM`` / ``nn.GRU`` module, so the step-by-step path
and the fast path (no input feeding, Luong order: the whole target side in one RNN call and
one batched attention) compute the same function. The embedding's share of the first
layer's input gates is computed for all T steps in one matrix multiply before the loop.
Teacher forcing with input feeding and a global score of the form h . proj_s (dot,
scaled_dot, general, location) runs the same steps through ``luong.model.recurrence.recur``: one
autograd node whose backward is written out (``fused``); search and every other attention step here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from luong.model.attention import BahdanauAttention, LuongAttention
from luong.model.encoder import RNNState, make_rnn
from luong.model.int8 import Int8Cells, Int8Linear, Weight, columns, float_weight, linear, rows
from luong.model.recurrence import Recurrence, recur

__all__ = ["Decoder", "DecoderState", "Memory", "OutputRows"]

Attention = LuongAttention | BahdanauAttention
FUSED_SCORES: tuple[str, ...] = ("dot", "scaled_dot", "general", "location")  # h . proj_s


@dataclass(frozen=True)
class Memory:
    """What the decoder reads from the source, fixed for a sentence.

    keys ``[B, S, K]``, mask ``[B, S]`` (True at real positions) and proj ``[B, S, d]``,
    the attention's per-sentence key projection, computed once.

    For beam search (``for_beams``) the decoder's rows are beams: with ``beams`` k, the
    slots ``b * k + j`` (j < k) of the dense layout ``[B * k]`` belong to sentence b, and
    ``slots`` ``[R]`` lists the slots of the decoder's rows in order (None: all of them).
    """

    keys: Tensor
    mask: Tensor
    proj: Tensor
    beams: int = 1
    slots: Tensor | None = None

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the decoder computes in (the keys')."""
        return self.keys.dtype

    def repeat(self, k: int) -> Memory:
        """Each sentence's rows copied k times in a row: ``[B, ...] -> [B * k, ...]``."""
        return Memory(
            self.keys.repeat_interleave(k, dim=0),
            self.mask.repeat_interleave(k, dim=0),
            self.proj.repeat_interleave(k, dim=0),
        )

    def for_beams(self, k: int, slots: Tensor | None = None) -> Memory:
        """This memory read by beams (see above), without a copy: each sentence's k queries
        attend to its keys in one batched product, where a copy per row would move
        R x S x (K + d) numbers every step."""
        return replace(self, beams=k, slots=slots)

    def select(self, rows: Tensor) -> Memory:
        """The sentences ``rows`` ``[B']`` (a sentence may come several times), read one row
        each: select from the memory itself, not from a ``for_beams`` view of it."""
        return Memory(
            self.keys.index_select(0, rows),
            self.mask.index_select(0, rows),
            self.proj.index_select(0, rows),
        )


@dataclass(frozen=True)
class OutputRows:
    """The output layer's rows of some target ids, cut once per batch (a shortlist,
    ``luong.data.shortlist``): weight ``[V', d]`` (float, or int8 in an int8 model) and bias
    ``[V']`` (None without one). ``Decoder.step`` with them gives the logits of those ids
    only, ``[B, V']``, column i for the i-th id."""

    weight: Weight
    bias: Tensor | None


@dataclass(frozen=True)
class DecoderState:
    """Everything a decoder step carries to the next.

    hidden ``[L, B, d]``; cell ``[L, B, d]`` for an LSTM, None for a GRU; feed ``[B, d]`` the
    previous attentional state h~_{t-1} (zeros before the first step); coverage ``[B, S]``
    the attention accumulated over the steps so far, or None when not tracked; step the
    target position t of the next step, the steps taken so far (the same for every row: a
    host int, so reading it costs no device sync).
    """

    hidden: Tensor
    cell: Tensor | None
    feed: Tensor
    coverage: Tensor | None = None
    step: int = 0

    def reorder(self, indices: Tensor) -> DecoderState:
        """The state of rows ``indices`` ``[B']`` (beam search follows surviving beams)."""
        return DecoderState(
            self.hidden.index_select(1, indices),
            None if self.cell is None else self.cell.index_select(1, indices),
            self.feed.index_select(0, indices),
            None if self.coverage is None else self.coverage.index_select(0, indices),
            self.step,
        )

    def with_coverage(self, coverage: Tensor) -> DecoderState:
        """This state, tracking coverage from ``coverage`` ``[B, S]`` (zeros to start)."""
        return replace(self, coverage=coverage)


class Decoder(nn.Module):
    """Embedding, a stacked LSTM or GRU, an attention from ``luong.model.attention``, and the
    output layer, which reads the attentional state.

    Args:
        vocab_size: V.
        emb_dim: E.
        hidden: d.
        layers: L.
        cell: ``"lstm"`` or ``"gru"``.
        attention: the attention module (its ``d`` must equal ``hidden``): global
            ``LuongAttention``, ``LocalAttention`` (one of them) or ``BahdanauAttention``.
        input_feed: concatenate h~_{t-1} to the input of step t.
        dropout: on the embeddings, between layers and before the output layer.
        pad_id: the padding id of the target vocabulary.
    """

    def __init__(
        self,
        vocab_size: int,
        emb_dim: int,
        hidden: int,
        layers: int,
        cell: str,
        attention: Attention,
        input_feed: bool,
        dropout: float,
        pad_id: int,
    ) -> None:
        super().__init__()
        self.hidden_size = hidden
        self.layers = layers
        self.lstm = cell == "lstm"
        self.gates = 4 if self.lstm else 3
        self.input_feed = input_feed
        self.emb_dim = emb_dim
        self.key_dim = attention.key_dim
        self.before = attention.query_from == "previous"
        self.p_dropout = dropout
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        # The first layer's input: [embedding ; feed (input feeding) ; context (Bahdanau)].
        input_size = emb_dim + (hidden if input_feed else 0) + (self.key_dim if self.before else 0)
        # Int8Cells and Int8Linear stand in for them in an int8 model (luong.model.seq2seq).
        self.rnn: nn.LSTM | nn.GRU | Int8Cells = make_rnn(
            cell, input_size, hidden, layers, dropout, bidirectional=False
        )
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.out: nn.Linear | Int8Linear = nn.Linear(hidden, vocab_size)

    @property
    def fast_path(self) -> bool:
        """Whether training can run the whole target side at once (no step depends on the
        previous step's attention) in float weights."""
        return not self.input_feed and not self.before and not isinstance(self.rnn, Int8Cells)

    @property
    def fused(self) -> bool:
        """Whether teacher forcing runs the recurrence of ``luong.model.recurrence`` (input feeding
        with a global attention scored h . proj_s: all but concat), whose backward is written
        out."""
        return (
            self.input_feed
            and type(self.attention) is LuongAttention
            and self.attention.score in FUSED_SCORES
            and not isinstance(self.rnn, Int8Cells)
            and not isinstance(self.attention.combine, Int8Linear)
        )

    def memory(self, keys: Tensor, mask: Tensor) -> Memory:
        """Project the keys once per sentence."""
        return Memory(keys, mask, self.attention.project_keys_unchecked(keys))

    def initial_state(self, start: RNNState, batch: int) -> DecoderState:
        """The state before the first step, from the bridged encoder state."""
        hidden, cell = start
        feed = hidden.new_zeros(batch, self.hidden_size)
        return DecoderState(hidden, cell, feed)

    def forward(self, tgt_in: Tensor, state: DecoderState, memory: Memory) -> tuple[Tensor, Tensor]:
        """Teacher-forced decoding of a whole batch.

        Args:
            tgt_in: the decoder's inputs ``[B, T]`` (BOS, y_1, ..., y_{T-1}).
            state: the initial state.
            memory: the source side.

        Returns:
            logits ``[B, T, V]`` and attention weights ``[B, T, S]``.
        """
        if self.fast_path:
            embedded = self.dropout(self.embedding(tgt_in))  # [B, T, E]
            attentional, weights = self._unroll_fast(embedded, state, memory)
        elif self.fused:
            attentional, weights = self._unroll_fused(tgt_in, state, memory)
        else:
            attentional, weights = self._unroll_steps(self._input_gates(tgt_in), state, memory)
        return self.out(self.dropout(attentional)), weights

    def step(
        self,
        tokens: Tensor,
        state: DecoderState,
        memory: Memory,
        out: OutputRows | None = None,
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """One step for search: tokens ``[B]`` (y_{t-1}) -> logits ``[B, V]`` (with ``out``,
        those rows' ``[B, V']``), the new state, attention weights ``[B, S]``. Coverage, when
        the state tracks it, accumulates."""
        gates = self._input_gates(tokens)
        state, attentional, weights = self._advance(gates, state, memory, self._step_weights())
        if state.coverage is not None:
            state = replace(state, coverage=state.coverage + weights)
        if out is not None:
            return linear(self.dropout(attentional), out.weight, out.bias), state, weights
        return self.out(self.dropout(attentional)), state, weights

    def output_rows(self, ids: Tensor) -> OutputRows:
        """The output layer's rows ``ids`` ``[V']`` (``OutputRows``)."""
        layer = self.out
        weight: Weight = layer.matrix if isinstance(layer, Int8Linear) else layer.weight
        bias = layer.bias
        return OutputRows(rows(weight, ids), None if bias is None else bias.index_select(0, ids))

    def _input_gates(self, tokens: Tensor) -> Tensor:
        """The embedding's share of layer 0's input gates for ``tokens`` ``[...]`` ->
        ``[..., G d]``, one matrix multiply for all of them."""
        if (self.training and self.p_dropout) or self.embedding.num_embeddings >= tokens.numel():
            return self._embedding_gates(self.dropout(self.embedding(tokens)))
        # No dropout and fewer symbols than tokens: the gates of every symbol, then a lookup,
        # is fewer FLOPs than the gates of every token (V x E x G d < N x E x G d).
        # F.embedding, not table[tokens]: indexing's backward accumulates with atomic adds
        # across threads, so the sums (and the training run) would vary from run to run.
        return F.embedding(tokens, self._embedding_gates(self.embedding.weight))

    def _embedding_gates(self, embedded: Tensor) -> Tensor:
        """The embedding's share of layer 0's input gates, with its input bias:
        ``[..., E] -> [..., G d]``."""
        weight_ih, _, bias_ih, _ = self._cell_weights()[0]
        # In float: the embedding is not in [-1, 1], as the int8 product needs.
        return F.linear(embedded, float_weight(columns(weight_ih, 0, self.emb_dim)), bias_ih)

    def _unroll_fast(
        self, embedded: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        start = state.hidden if state.cell is None else (state.hidden, state.cell)
        cpu = embedded.device.type == "cpu"
        if isinstance(self.rnn, nn.LSTM) and cpu and torch.is_autocast_enabled("cpu"):
            # oneDNN has no bfloat16 LSTM primitive on CPUs without AVX-512 (an AMD EPYC here
            # raised "could not create a primitive descriptor for the LSTM"): on the CPU the
            # LSTM runs in its weights' float32, as the fused recurrence does, the rest under
            # autocast. (CUDA's cuDNN has its own half-precision LSTM.)
            with torch.autocast("cpu", enabled=False):
                cast = (
                    start.float() if isinstance(start, Tensor) else tuple(x.float() for x in start)
                )
                outputs, _ = self.rnn(embedded.float(), cast)  # [B, T, d], the top layer
        else:
            outputs, _ = self.rnn(embedded, start)  # [B, T, d], the top layer
        context, weights = self.attention.attend_unchecked(
            outputs, memory.keys, memory.mask, memory.proj, state.step
        )
        return self.attention.attentional_unchecked(outputs, context), weights

    def _unroll_fused(
        self, tgt_in: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        """``_unroll_steps`` as one autograd node (see ``fused``), from the inputs ``[B, T]``."""
        if self.training and self.p_dropout:
            # The embeddings' dropout masks drawn in the [B, T, E] layout of _unroll_steps.
            gates = self._input_gates(tgt_in).transpose(0, 1)
        else:
            gates = self._input_gates(tgt_in.t())  # time first, each step's rows contiguous
        rnn = self.rnn
        assert not isinstance(rnn, Int8Cells)  # fused implies float weights
        layer_weights = []
        for layer, (weight_ih, weight_hh, bias_ih, bias_hh) in enumerate(rnn.all_weights):
            # Layer 0's input weight enters as the embedding's gates and the feed's columns.
            layer_weights += (
                [weight_hh, bias_hh] if layer == 0 else [weight_ih, bias_ih, weight_hh, bias_hh]
            )
        spec = Recurrence(self.lstm, self.layers, self.p_dropout if self.training else 0.0)
        feed_weight = self._step_weights()[0]
        assert isinstance(feed_weight, Tensor)  # fused implies input feeding
        proj = memory.proj
        if self.attention.score == "location":  # proj_s is row s of W_a, for every sentence
            score_proj = self.attention.score_proj
            assert isinstance(score_proj, nn.Linear)
            proj = score_proj.weight[: memory.keys.shape[1]]
        return recur(
            spec, gates, state.hidden, state.cell, state.feed, memory.keys, proj, memory.mask,
            feed_weight, self.attention.combine.weight, layer_weights,
        )  # fmt: skip

    def _unroll_steps(
        self, gates: Tensor, state: DecoderState, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        """The step-by-step path from the embeddings' gate shares ``[B, T, G d]``."""
        attentional, weights = [], []
        # Layer 0's feed and context columns, sliced once: a slice taken at every step would
        # backpropagate as T zero-filled copies of the whole weight, added up.
        step_weights = self._step_weights()
        # unbind, not gates[:, t]: its backward is one stack, not T zero-filled [B, T, G d].
        for step_gates in gates.unbind(1):
            state, out, w = self._advance(step_gates, state, memory, step_weights)
            attentional.append(out)
            weights.append(w)
        return torch.stack(attentional, dim=1), torch.stack(weights, dim=1)

    def _cell_weights(self) -> list[tuple[Weight, Weight, Tensor, Tensor]]:
        """Each layer's ``(weight_ih, weight_hh, bias_ih, bias_hh)``: the RNN module's, or in
        an int8 model ``Int8Cells``' (its matrices ``Int8Matrix``)."""
        if isinstance(self.rnn, Int8Cells):
            return list(self.rnn.all_weights)
        return [(w_ih, w_hh, b_ih, b_hh) for w_ih, w_hh, b_ih, b_hh in self.rnn.all_weights]

    def _step_weights(self) -> tuple[Weight | None, Weight | None]:
        """Layer 0's input-weight columns that a step multiplies: those of the input feed
        (None without input feeding) and of the context (None unless Bahdanau)."""
        weight_ih = self._cell_weights()[0][0]
        width = weight_ih.shape[1]
        feed = columns(weight_ih, self.emb_dim, self.emb_dim + self.hidden_size)
        context = columns(weight_ih, width - self.key_dim, width)
        return (feed if self.input_feed else None), (context if self.before else None)

    def _advance(
        self,
        emb_gates: Tensor,
        state: DecoderState,
        memory: Memory,
        step_weights: tuple[Weight | None, Weight | None],
    ) -> tuple[DecoderState, Tensor, Tensor]:
        """One step from the embedding's gate share ``[B, G d]``: the cells, the attention
        in the order the attention asks for (at target position ``state.step``), and eq. 5.
        ``step_weights`` is ``_step_weights()``."""
        feed_weight, context_weight = step_weights
        gates = emb_gates
        if feed_weight is not None:
            gates = gates + linear(state.feed, feed_weight)
        if context_weight is not None:
            # Bahdanau: attend with the state from before the step; the context joins the input.
            context, weights = self._attend(state.hidden[-1], memory, state.step)
            gates = gates + linear(context, context_weight)
        hidden, cell = self._cells(gates, state)
        if not self.before:
            # Luong: attend with the new top state.
            context, weights = self._attend(hidden[-1], memory, state.step)
        attentional = self.attention.attentional_unchecked(hidden[-1], context)
        next_state = DecoderState(hidden, cell, attentional, state.coverage, state.step + 1)
        return next_state, attentional, weights

    def _attend(self, query: Tensor, memory: Memory, step: int) -> tuple[Tensor, Tensor]:
        """Context ``[R, K]`` and weights ``[R, S]`` for the rows' queries ``[R, d]``."""
        if memory.beams == 1 and memory.slots is None:
            return self.attention.attend_unchecked(
                query, memory.keys, memory.mask, memory.proj, step
            )
        batch, k = memory.mask.shape[0], memory.beams
        if memory.slots is not None:  # closed slots attend with a zero query, then drop out
            dense = query.new_zeros(batch * k, query.shape[-1])
            query = dense.index_copy_(0, memory.slots, query)
        context, weights = self.attention.attend_unchecked(
            query.view(batch, k, -1), memory.keys, memory.mask, memory.proj, step, beams=True
        )
        context, weights = context.flatten(0, 1), weights.flatten(0, 1)  # [B * k, ...]
        if memory.slots is not None:
            context, weights = context[memory.slots], weights[memory.slots]
        return context, weights

    def _cells(self, gates0: Tensor, state: DecoderState) -> tuple[Tensor, Tensor | None]:
        """Step every layer; layer 0's input gates are given, the others are computed."""
        hiddens: list[Tensor] = []
        cells: list[Tensor] = []
        gates_in = gates0
        for layer, (weight_ih, weight_hh, bias_ih, bias_hh) in enumerate(self._cell_weights()):
            if layer > 0:
                below = F.dropout(hiddens[-1], self.p_dropout, self.training)
                gates_in = linear(below, weight_ih, bias_ih)
            gates_h = linear(state.hidden[layer], weight_hh, bias_hh)
            # The cells step in float32 whatever the products' dtype (under bf16 autocast
            # they come in bfloat16): a state rounded to 8 bits at every step would compound.
            wide = torch.promote_types(gates_h.dtype, torch.float32)
            gates_in, gates_h = gates_in.to(wide), gates_h.to(wide)
            if state.cell is None:
                h = _gru(gates_in, gates_h, state.hidden[layer].to(wide))
            else:
                h, c = _lstm(gates_in, gates_h, state.cell[layer].to(wide))
                cells.append(c)
            hiddens.append(h)
        return torch.stack(hiddens), (torch.stack(cells) if cells else None)


def _gru(gates_in: Tensor, gates_h: Tensor, h: Tensor) -> Tensor:
    """``nn.GRU``'s cell from its gate pre-activations ``[B, 3 d]`` (order r, z, n)."""
    d = h.shape[-1]
    # split, not slicing: its backward is one concatenation, not a zero-filled tensor a slice.
    rz_in, n_in = gates_in.split([2 * d, d], dim=1)
    rz_h, n_h = gates_h.split([2 * d, d], dim=1)
    r, z = torch.sigmoid(rz_in + rz_h).chunk(2, dim=1)
    n = torch.tanh(n_in + r * n_h)
    return n + z * (h - n)  # (1 - z) n + z h


def _lstm(gates_in: Tensor, gates_h: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """``nn.LSTM``'s cell from its gate pre-activations ``[B, 4 d]`` (order i, f, g, o)."""
    i, f, g, o = (gates_in + gates_h).chunk(4, dim=1)
    i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o)
    g = torch.tanh(g)
    c = f * c + i * g
    return o * torch.tanh(c), c
