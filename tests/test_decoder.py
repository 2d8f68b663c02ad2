"""Tests of ``luong.model.decoder``: the order of a step, input feeding, and the three ways to
unroll.

Oracles: one step computed here by stepping the decoder's own ``nn.GRU`` / ``nn.LSTM`` module
(not the decoder's cell code) with its weights, then the attention's public ``scores``,
``masked_softmax`` and ``attentional``; a whole teacher-forced decode written the same way from
the equations (section 2.1 of the seed, Luong et al. 2015 section 3.3):

    Luong     h_t = RNN([y_{t-1} ; h~_{t-1}], h_{t-1}), a_t = softmax(score(h_t, k)), c_t = a_t k
    Bahdanau  a_t = softmax(score(h_{t-1}, k)), c_t = a_t k, h_t = RNN([y_{t-1} ; h~_{t-1} ; c_t])
    both      h~_t = tanh(W_c [c_t ; h_t]), logits_t = W_o h~_t + b_o, h~_0 = 0

Shapes: B batch, S source length, T target length, d decoder width, K key width, V target
vocabulary, L decoder layers. float64, eval mode, dropout 0.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import SRC, TGT, small_batch, small_model
from torch import Tensor, nn

from luong import DecoderState, Seq2Seq, Vocab
from luong.model.attention import length_mask, masked_softmax

TOL = 1e-6
SRC_LENGTHS = (5, 3, 1)
T = 4
D = 6  # decoder width; the encoder is bidirectional with 3 per direction, so K = 6 too


def rnn_step(model: Seq2Seq, x: Tensor, hidden: Tensor, cell: Tensor | None):
    """One step of the decoder's own ``nn.GRU`` / ``nn.LSTM`` module: x ``[B, in]``."""
    rnn = model.decoder.rnn
    if cell is None:
        _, hidden = rnn(x.unsqueeze(1), hidden.contiguous())
        return hidden, None
    _, (hidden, cell) = rnn(x.unsqueeze(1), (hidden.contiguous(), cell.contiguous()))
    return hidden, cell


def reference_decode(model: Seq2Seq, src: Tensor, lengths: Tensor, tgt_in: Tensor):
    """Teacher-forced logits ``[B, T, V]`` and weights ``[B, T, S]`` from the equations above."""
    cfg = model.config
    dec = model.decoder
    att = dec.attention
    keys, final = model.encoder(src, lengths)
    hidden, cell = model.bridge(final)
    mask = length_mask(lengths, src.shape[1])
    feed = keys.new_zeros(src.shape[0], cfg.dec_hidden)
    bahdanau = cfg.attention == "bahdanau"
    logits, weights = [], []
    for t in range(tgt_in.shape[1]):
        parts = [dec.embedding(tgt_in[:, t])]
        if cfg.input_feed:
            parts.append(feed)
        if bahdanau:
            w = masked_softmax(att.scores(hidden[-1], keys), mask)
            context = torch.einsum("bs,bsk->bk", w, keys)
            parts.append(context)
        hidden, cell = rnn_step(model, torch.cat(parts, dim=-1), hidden, cell)
        if not bahdanau:
            w = masked_softmax(att.scores(hidden[-1], keys), mask)
            context = torch.einsum("bs,bsk->bk", w, keys)
        feed = att.attentional(hidden[-1], context)
        logits.append(dec.out(feed))
        weights.append(w)
    return torch.stack(logits, dim=1), torch.stack(weights, dim=1)


def run_steps(model: Seq2Seq, src: Tensor, lengths: Tensor, tgt_in: Tensor):
    """``decoder.step`` T times: logits ``[B, T, V]``, weights ``[B, T, S]``, the last state."""
    memory, state = model.encode(src, lengths)
    logits, weights = [], []
    for t in range(tgt_in.shape[1]):
        out, state, w = model.decoder.step(tgt_in[:, t], state, memory)
        logits.append(out)
        weights.append(w)
    return torch.stack(logits, dim=1), torch.stack(weights, dim=1), state


ATTENTIONS = ("dot", "general", "concat", "bahdanau")
ALL_CASES = [
    (cell, attention, feed, layers)
    for cell in ("gru", "lstm")
    for attention in ATTENTIONS
    for feed in (True, False)
    for layers in (1, 2)
]
ALL_IDS = [f"{c}-{a}-{'feed' if f else 'nofeed'}-L{n}" for c, a, f, n in ALL_CASES]


# --- the order of one step, by hand --------------------------------------------------------------


def random_state(model: Seq2Seq, batch_size: int, seed: int = 1) -> DecoderState:
    g = torch.Generator().manual_seed(seed)
    layers, lstm = model.config.dec_layers, model.config.cell == "lstm"

    def draw(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    cell = draw(layers, batch_size, D) if lstm else None
    return DecoderState(draw(layers, batch_size, D), cell, torch.tanh(draw(batch_size, D)))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("attention", ["general", "concat", "bahdanau"])
def test_step_order_by_hand(cell: str, layers: int, attention: str) -> None:
    """Luong attends with the state after the cell's step, Bahdanau with the state before it
    and feeds the context into the cell; and not the other way round."""
    model = small_model(cell=cell, dec_layers=layers, attention=attention).double()
    dec, att = model.decoder, model.decoder.attention
    g = torch.Generator().manual_seed(2)
    keys = 2.0 * torch.randn(3, 5, D, generator=g, dtype=torch.float64)
    mask = length_mask(torch.tensor([5, 2, 4]), 5)
    memory = dec.memory(keys, mask)
    state = random_state(model, 3)
    tokens = torch.tensor([4, 7, 1])
    with torch.no_grad():
        logits, new, weights = dec.step(tokens, state, memory)

        h_old = state.hidden[-1]
        w_old = masked_softmax(att.scores(h_old, keys), mask)
        x = torch.cat([dec.embedding(tokens), state.feed], dim=-1)
        if attention == "bahdanau":
            x = torch.cat([x, torch.einsum("bs,bsk->bk", w_old, keys)], dim=-1)
        hidden, cell_state = rnn_step(model, x, state.hidden, state.cell)
        h_new = hidden[-1]
        w_new = masked_softmax(att.scores(h_new, keys), mask)
        expected, other = (w_old, w_new) if attention == "bahdanau" else (w_new, w_old)
        context = torch.einsum("bs,bsk->bk", expected, keys)
        attentional = torch.tanh(att.combine(torch.cat([context, h_new], dim=-1)))

    assert weights.shape == (3, 5)
    torch.testing.assert_close(weights, expected, atol=1e-10, rtol=0)
    assert (weights - other).abs().max() > 1e-3
    torch.testing.assert_close(new.hidden, hidden, atol=1e-10, rtol=0)
    if cell == "lstm":
        assert new.cell is not None and cell_state is not None
        torch.testing.assert_close(new.cell, cell_state, atol=1e-10, rtol=0)
    else:
        assert new.cell is None
    torch.testing.assert_close(new.feed, attentional, atol=1e-10, rtol=0)
    torch.testing.assert_close(logits, dec.out(attentional), atol=1e-10, rtol=0)
    assert torch.equal(
        weights[mask.logical_not()], torch.zeros(int((~mask).sum()), dtype=torch.float64)
    )


def test_query_from_selects_the_order() -> None:
    model_l = small_model(attention="general").double()
    model_b = small_model(attention="bahdanau").double()
    assert model_l.decoder.attention.query_from == "current"
    assert model_b.decoder.attention.query_from == "previous"


# --- input feeding -------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", ["dot", "general"])
def test_input_feeding_gradient_reaches_previous_attention(cell: str, attention: str) -> None:
    """d logits_2 / d a_1 is nonzero with input feeding; without it (Luong order) step 2 does
    not depend on step 1's attention at all."""
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    r = torch.randn(len(SRC_LENGTHS), len(TGT), generator=torch.Generator().manual_seed(3))
    for feed in (True, False):
        model = small_model(cell=cell, attention=attention, input_feed=feed).double()
        memory, state = model.encode(src, lengths)
        _, state, w1 = model.decoder.step(tgt_in[:, 0], state, memory)
        logits2, _, _ = model.decoder.step(tgt_in[:, 1], state, memory)
        (grad,) = torch.autograd.grad((logits2 * r.double()).sum(), w1, allow_unused=True)
        if feed:
            assert grad is not None
            # every real position of every row of step 1's weights matters to step 2
            real = length_mask(lengths, src.shape[1])
            assert grad[real].abs().min() > 1e-8
        else:
            assert grad is None or torch.equal(grad, torch.zeros_like(grad))


def test_input_feeding_gradient_through_forward() -> None:
    """Through the teacher-forced forward pass: the loss at step 2 reaches the attention
    parameters through step 1 too; with the feed weights zeroed it reaches them only via step 2."""
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    model = small_model(attention="general", input_feed=True).double()
    dec = model.decoder
    memory, state = model.encode(src, lengths)
    logits, _ = dec(tgt_in, state, memory)
    (full,) = torch.autograd.grad(
        logits[:, 1].sum(), dec.attention.get_parameter("score_proj.weight")
    )
    with torch.no_grad():
        dec.rnn.get_parameter("weight_ih_l0")[:, 4 : 4 + D] = (
            0.0  # cut the feed: [emb (E = 4) ; feed (d)]
        )
    memory, state = model.encode(src, lengths)
    logits, _ = dec(tgt_in, state, memory)
    (cut,) = torch.autograd.grad(
        logits[:, 1].sum(), dec.attention.get_parameter("score_proj.weight")
    )
    assert (full - cut).abs().max() > 1e-6


@pytest.mark.parametrize("attention", ["general", "bahdanau"])
def test_first_feed_is_zero(attention: str) -> None:
    """h~_0 = 0: the feed columns of the first layer's input weights cannot change step 1, and
    do change step 2."""
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    model = small_model(attention=attention, input_feed=True).double()
    memory, state = model.encode(src, lengths)
    assert torch.equal(state.feed, torch.zeros(len(SRC_LENGTHS), D, dtype=torch.float64))
    with torch.no_grad():
        before, _ = model.decoder(tgt_in, state, memory)
        model.decoder.rnn.get_parameter("weight_ih_l0")[:, 4 : 4 + D] += 0.5
        after, _ = model.decoder(tgt_in, state, memory)
    assert torch.equal(after[:, 0], before[:, 0])
    assert (after[:, 1] - before[:, 1]).abs().max() > 1e-4


def test_feed_is_previous_attentional_state() -> None:
    """The state a step returns carries its h~ (the output layer's input) as the next feed."""
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    model = small_model(attention="concat", input_feed=True).double()
    memory, state = model.encode(src, lengths)
    with torch.no_grad():
        logits, state, _ = model.decoder.step(tgt_in[:, 0], state, memory)
    dec = model.decoder
    torch.testing.assert_close(dec.out(state.feed), logits, atol=1e-12, rtol=0)
    assert state.feed.abs().max() < 1.0  # a tanh output
    assert state.feed.abs().min() > 0.0


def test_input_size_follows_feed_and_order() -> None:
    """Layer 0's input: E, plus d with input feeding, plus K for Bahdanau's context."""
    for attention, feed, width in [
        ("general", True, 4 + D),
        ("general", False, 4),
        ("bahdanau", True, 4 + D + 6),
        ("bahdanau", False, 4 + 6),
    ]:
        model = small_model(attention=attention, input_feed=feed).double()
        assert model.decoder.rnn.weight_ih_l0.shape == (3 * D, width)


# --- three ways to unroll, one function ----------------------------------------------------------


@pytest.mark.parametrize(("cell", "attention", "feed", "layers"), ALL_CASES, ids=ALL_IDS)
def test_forward_matches_reference(cell: str, attention: str, feed: bool, layers: int) -> None:
    """Teacher-forced forward equals the equations stepped by hand with nn.GRU / nn.LSTM."""
    model = small_model(cell=cell, attention=attention, input_feed=feed, dec_layers=layers).double()
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        logits, weights = model.decoder(tgt_in, state, memory)
        expected_logits, expected_weights = reference_decode(model, src, lengths, tgt_in)
        assert torch.equal(model(src, lengths, tgt_in), logits)
    assert logits.shape == (len(SRC_LENGTHS), T, len(TGT))
    assert weights.shape == (len(SRC_LENGTHS), T, max(SRC_LENGTHS))
    torch.testing.assert_close(logits, expected_logits, atol=TOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=TOL, rtol=0)


@pytest.mark.parametrize(("cell", "attention", "feed", "layers"), ALL_CASES, ids=ALL_IDS)
def test_steps_reproduce_forward(cell: str, attention: str, feed: bool, layers: int) -> None:
    """``decoder.step`` T times gives the teacher-forced logits and weights."""
    model = small_model(cell=cell, attention=attention, input_feed=feed, dec_layers=layers).double()
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        logits, weights = model.decoder(tgt_in, state, memory)
        step_logits, step_weights, last = run_steps(model, src, lengths, tgt_in)
    torch.testing.assert_close(step_logits, logits, atol=TOL, rtol=0)
    torch.testing.assert_close(step_weights, weights, atol=TOL, rtol=0)
    assert last.hidden.shape == (layers, len(SRC_LENGTHS), D)
    assert (logits[:, 1:] - logits[:, :1]).abs().max() > 1e-3  # the steps are not all alike


FAST_CASES = [
    (cell, attention, layers)
    for cell in ("gru", "lstm")
    for attention in ("dot", "general", "concat")
    for layers in (1, 2)
]


@pytest.mark.parametrize(("cell", "attention", "layers"), FAST_CASES)
def test_fast_path_equals_step_path(cell: str, attention: str, layers: int) -> None:
    model = small_model(
        cell=cell, attention=attention, input_feed=False, dec_layers=layers
    ).double()
    dec = model.decoder
    assert dec.fast_path
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        embedded = dec.embedding(tgt_in)
        fast, w_fast = dec._unroll_fast(embedded, state, memory)
        slow, w_slow = dec._unroll_steps(dec._input_gates(tgt_in), state, memory)
        logits, weights = dec(tgt_in, state, memory)
    assert fast.shape == slow.shape == (len(SRC_LENGTHS), T, D)
    torch.testing.assert_close(fast, slow, atol=TOL, rtol=0)
    torch.testing.assert_close(w_fast, w_slow, atol=TOL, rtol=0)
    torch.testing.assert_close(dec.out(fast), dec.out(slow), atol=TOL, rtol=0)
    assert torch.equal(logits, dec.out(fast))  # forward takes the fast path
    assert torch.equal(weights, w_fast)


@pytest.mark.parametrize(
    ("attention", "feed"), [("general", True), ("bahdanau", False), ("bahdanau", True)]
)
def test_no_fast_path_when_a_step_depends_on_the_last(attention: str, feed: bool) -> None:
    assert not small_model(attention=attention, input_feed=feed).double().decoder.fast_path


def test_coverage_accumulates_weights() -> None:
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    model = small_model().double()
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        state = DecoderState(state.hidden, state.cell, state.feed, torch.zeros(3, 5).double())
        total = torch.zeros(3, 5, dtype=torch.float64)
        for t in range(T):
            _, state, w = model.decoder.step(tgt_in[:, t], state, memory)
            total += w
    assert state.coverage is not None
    torch.testing.assert_close(state.coverage, total, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.coverage.sum(-1), torch.full((3,), float(T)).double())


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_steps_of_a_batch_wider_than_the_vocabulary(cell: str) -> None:
    """With more rows than target symbols, ``step`` looks the embedding's gate share up in a
    per-symbol table instead of computing it per row: the logits are the same."""
    model = small_model(cell=cell).double()
    g = torch.Generator().manual_seed(3)
    rows = 2 * len(TGT)
    lengths = torch.randint(1, 6, (rows,), generator=g)
    src = torch.randint(4, len(SRC), (rows, 5), generator=g)
    src[torch.arange(5)[None, :] >= lengths[:, None]] = Vocab.pad_id
    tgt_in = torch.randint(4, len(TGT), (rows, T), generator=g)
    tgt_in[:, 0] = Vocab.bos_id
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        logits, _ = model.decoder(tgt_in, state, memory)
        step_logits, _, _ = run_steps(model, src, lengths, tgt_in)
    assert rows > model.decoder.embedding.num_embeddings
    torch.testing.assert_close(step_logits, logits, atol=TOL, rtol=0)


def test_gate_table_gives_the_same_gradients_in_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Training without dropout takes the per-symbol table too; its gradients (the embedding
    and the first layer's input weights included) equal those of the per-token path."""
    from luong.model.decoder import Decoder

    model = small_model().double().train()
    g = torch.Generator().manual_seed(4)
    rows = len(TGT)  # rows x T tokens > V symbols: the table path
    lengths = torch.randint(1, 6, (rows,), generator=g)
    src = torch.randint(4, len(SRC), (rows, 5), generator=g)
    src[torch.arange(5)[None, :] >= lengths[:, None]] = Vocab.pad_id
    tgt_in = torch.randint(4, len(TGT), (rows, T), generator=g)

    def gradients() -> dict[str, Tensor]:
        model.zero_grad()
        model(src, lengths, tgt_in).pow(2).sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    table = gradients()

    def without_table(self: Decoder, tokens: Tensor) -> Tensor:
        return self._embedding_gates(self.dropout(self.embedding(tokens)))

    monkeypatch.setattr(Decoder, "_input_gates", without_table)
    direct = gradients()
    assert table.keys() == direct.keys()
    assert "decoder.embedding.weight" in table
    for name in table:
        torch.testing.assert_close(table[name], direct[name], atol=1e-10, rtol=0)


# --- dropout between the layers on the step path -------------------------------------------------


def test_dropout_between_layers_on_the_step_path() -> None:
    """Two layers, dropout 0.5, input feeding (the step path). With the target embeddings at
    zero and h~_0 = 0, layer 0's input is zero whatever dropout does to it; so in training
    mode the top layer's state after one step varies with the seed only through the dropout
    between the layers, and it equals layer 1 stepped by hand (``nn.GRUCell`` with the
    decoder's weights) from layer 0's state dropped with the same random draws."""
    p = 0.5
    model = small_model(dec_layers=2, dropout=p).double()
    dec = model.decoder
    with torch.no_grad():
        dec.embedding.weight.zero_()
    src, lengths, tgt_in = small_batch(SRC_LENGTHS, T)
    with torch.no_grad():
        memory, start = model.encode(src, lengths)  # eval mode: no dropout in the encoder
    assert not dec.fast_path and torch.equal(start.feed, torch.zeros_like(start.feed))
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    cells = []
    for n, width in enumerate((dec.rnn.input_size, D)):
        cell = nn.GRUCell(width, D).double()
        cell.load_state_dict({name: getattr(dec.rnn, f"{name}_l{n}") for name in names})
        cells.append(cell)

    def stepped(seed: int, training: bool) -> Tensor:
        dec.train(training)
        torch.manual_seed(seed)
        with torch.no_grad():
            _, state, _ = dec.step(tgt_in[:, 0], start, memory)
        return state.hidden  # [L, B, d]

    def by_hand(seed: int) -> Tensor:
        torch.manual_seed(seed)
        x = torch.zeros(len(SRC_LENGTHS), dec.rnn.input_size, dtype=torch.float64)
        with torch.no_grad():
            F.dropout(x[:, : dec.emb_dim], p, True)  # the embeddings' draw
            h0 = cells[0](x, start.hidden[0])
            h1 = cells[1](F.dropout(h0, p, True), start.hidden[1])
        return torch.stack([h0, h1])

    evaluated = stepped(0, False)
    for seed in (0, 1):
        trained = stepped(seed, True)
        torch.testing.assert_close(trained, by_hand(seed), atol=1e-12, rtol=0)
        torch.testing.assert_close(trained[0], evaluated[0], atol=1e-12, rtol=0)
        assert (trained[1] - evaluated[1]).abs().max() > 1e-3
    assert (stepped(0, True)[1] - stepped(1, True)[1]).abs().max() > 1e-3
    assert torch.equal(stepped(0, False), stepped(1, False))
