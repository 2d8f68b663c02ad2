"""Tests of ``luong.model.encoder``: the encoder over real lengths only, and the bridge.

Oracles: the same sentence alone and unpadded (padding invariance); the encoder's own
``nn.LSTM`` / ``nn.GRU`` weights copied into one single-layer module per layer and run by hand
on the unpadded sentence (how the final states of the two directions are combined); the bridge's
equations written out.

Shapes: B batch, S source length, H encoder hidden size, K key width (H or 2 H), L layers,
d decoder width. Numerics in float64, dropout 0.
"""

from __future__ import annotations

import pytest
import torch
from helpers import SRC, small_model, source_batch
from torch import Tensor, nn

from luong import Seq2Seq, Vocab
from luong.model.encoder import Bridge, Encoder

TOL = 1e-6
# A batch whose rows have lengths 5, 2, 1 and 4: one full row, one short, one of a single token.
LENGTHS = (5, 2, 1, 4)


def make_encoder(cell: str, layers: int, bidirectional: bool, hidden: int = 3) -> Encoder:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        encoder = Encoder(
            len(SRC),
            4,
            hidden,
            layers,
            cell,  # type: ignore[arg-type]
            bidirectional,
            0.0,
            Vocab.pad_id,
        )
    return encoder.double().eval()


ENCODER_CASES = [
    (cell, layers, bidirectional)
    for cell in ("gru", "lstm")
    for layers in (1, 2)
    for bidirectional in (False, True)
]
ENCODER_IDS = [f"{c}-L{n}-{'bi' if b else 'uni'}" for c, n, b in ENCODER_CASES]


def states(final: tuple[Tensor, Tensor | None]) -> list[Tensor]:
    return [s for s in final if s is not None]


# --- padding invariance --------------------------------------------------------------------------


@pytest.mark.parametrize(("cell", "layers", "bidirectional"), ENCODER_CASES, ids=ENCODER_IDS)
def test_extra_pad_columns_change_nothing(cell: str, layers: int, bidirectional: bool) -> None:
    encoder = make_encoder(cell, layers, bidirectional)
    src, lengths = source_batch(LENGTHS, width=5)
    wider = torch.cat([src, torch.full((len(LENGTHS), 3), Vocab.pad_id)], dim=1)  # [B, 8]
    with torch.no_grad():
        keys, final = encoder(src, lengths)
        keys_w, final_w = encoder(wider, lengths)
    assert keys.shape == (4, 5, encoder.out_dim)
    assert keys_w.shape == (4, 8, encoder.out_dim)
    torch.testing.assert_close(keys_w[:, :5], keys, atol=TOL, rtol=0)
    assert torch.equal(keys_w[:, 5:], torch.zeros_like(keys_w[:, 5:]))
    for state, state_w in zip(states(final), states(final_w), strict=True):
        torch.testing.assert_close(state_w, state, atol=TOL, rtol=0)


@pytest.mark.parametrize(("cell", "layers", "bidirectional"), ENCODER_CASES, ids=ENCODER_IDS)
def test_sentence_alone_equals_sentence_in_batch(
    cell: str, layers: int, bidirectional: bool
) -> None:
    """Each row of a padded batch (its padding filled with real ids, not pad) has the keys and
    final state of the same sentence encoded alone; keys past its length are exactly 0."""
    encoder = make_encoder(cell, layers, bidirectional)
    src, lengths = source_batch(LENGTHS, width=6, junk=True)
    with torch.no_grad():
        keys, final = encoder(src, lengths)
        assert len(states(final)) == (2 if cell == "lstm" else 1)
        for b, n in enumerate(LENGTHS):
            keys_1, final_1 = encoder(src[b : b + 1, :n], torch.tensor([n]))
            torch.testing.assert_close(keys[b, :n], keys_1[0], atol=TOL, rtol=0)
            assert torch.equal(keys[b, n:], torch.zeros_like(keys[b, n:]))
            assert keys[b, :n].abs().min() > 0  # real positions are not zeroed
            for state, state_1 in zip(states(final), states(final_1), strict=True):
                assert state.shape == (layers, len(LENGTHS), encoder.out_dim)
                torch.testing.assert_close(state[:, b], state_1[:, 0], atol=TOL, rtol=0)


def test_padding_changes_the_state_when_lengths_are_ignored() -> None:
    """The invariance is not vacuous: running the same RNN over the padding gives another state."""
    encoder = make_encoder("gru", 1, True)
    src, lengths = source_batch((2,), width=6)
    with torch.no_grad():
        _, (h, _) = encoder(src, lengths)
        _, (h_full, _) = encoder(src, torch.tensor([6]))
    assert (h - h_full).abs().max() > 1e-3


# --- the final states of a bidirectional encoder -------------------------------------------------


def single_layer(rnn: nn.LSTM | nn.GRU, layer: int, input_size: int) -> nn.LSTM | nn.GRU:
    """A one-layer copy of ``rnn``'s layer ``layer`` (both directions)."""
    copy = type(rnn)(
        input_size, rnn.hidden_size, batch_first=True, bidirectional=rnn.bidirectional
    ).double()
    suffixes = ["", "_reverse"] if rnn.bidirectional else [""]
    with torch.no_grad():
        for suffix in suffixes:
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                source = getattr(rnn, f"{kind}_l{layer}{suffix}")
                getattr(copy, f"{kind}_l0{suffix}").copy_(source)
    return copy


@pytest.mark.parametrize(("cell", "layers", "bidirectional"), ENCODER_CASES, ids=ENCODER_IDS)
def test_final_state_per_layer_by_hand(cell: str, layers: int, bidirectional: bool) -> None:
    """Per layer: h is [forward h at the last real token ; backward h at the first token], c the
    same for the LSTM, from one single-layer module per layer run on the unpadded sentence."""
    hidden = 3
    encoder = make_encoder(cell, layers, bidirectional, hidden)
    src, lengths = source_batch((5, 4, 1, 3), width=5)
    b, n = 1, 4  # a padded row
    with torch.no_grad():
        _, (h, c) = encoder(src, lengths)
        x = encoder.embedding(src[b : b + 1, :n])  # [1, n, E]
        for layer in range(layers):
            rnn = single_layer(encoder.rnn, layer, x.shape[-1])
            if cell == "lstm":
                out, (_, c_n) = rnn(x)
            else:
                out, _ = rnn(x)
            # out [1, n, dirs H]: the forward half read at the last step, the backward at the first.
            expected_h = out[0, -1, :hidden]
            if bidirectional:
                expected_h = torch.cat([expected_h, out[0, 0, hidden:]])
            torch.testing.assert_close(h[layer, b], expected_h, atol=TOL, rtol=0)
            if cell == "lstm":
                assert c is not None
                torch.testing.assert_close(c[layer, b], c_n[:, 0].reshape(-1), atol=TOL, rtol=0)
                assert not torch.allclose(c[layer, b], h[layer, b])
            else:
                assert c is None
            x = out  # the next layer reads this layer's outputs


def test_bidirectional_state_is_not_the_backward_last_step() -> None:
    """The backward direction's final state is its output at position 0, not at the last token
    (reading the padded output at the end would give another value)."""
    encoder = make_encoder("gru", 1, True)
    src, lengths = source_batch((4,), width=4)
    with torch.no_grad():
        keys, (h, _) = encoder(src, lengths)
    torch.testing.assert_close(h[0, 0, 3:], keys[0, 0, 3:], atol=TOL, rtol=0)
    torch.testing.assert_close(h[0, 0, :3], keys[0, -1, :3], atol=TOL, rtol=0)
    assert (h[0, 0, 3:] - keys[0, -1, 3:]).abs().max() > 1e-3


# --- the bridge ----------------------------------------------------------------------------------


LAYER_PAIRS = [(1, 1), (2, 2), (2, 1), (1, 2), (2, 3)]


def encoded(model: Seq2Seq):
    src, lengths = source_batch(LENGTHS, width=5)
    with torch.no_grad():
        final = model.encoder(src, lengths)[1]
        _, state = model.encode(src, lengths)
    return final, state


@pytest.mark.parametrize("mode", ["bridge", "last", "zero"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize(("enc_layers", "dec_layers"), LAYER_PAIRS)
def test_bridge_shapes(mode: str, cell: str, enc_layers: int, dec_layers: int) -> None:
    model = small_model(
        cell=cell, bridge=mode, enc_layers=enc_layers, dec_layers=dec_layers
    ).double()
    _, state = encoded(model)
    assert state.hidden.shape == (dec_layers, len(LENGTHS), 6)
    assert state.hidden.dtype == torch.float64
    if cell == "lstm":
        assert state.cell is not None and state.cell.shape == (dec_layers, len(LENGTHS), 6)
    else:
        assert state.cell is None
    assert torch.equal(state.feed, torch.zeros(len(LENGTHS), 6, dtype=torch.float64))


def expected_layers(state: Tensor, dec_layers: int) -> Tensor:
    """The encoder's layers as they are, or its top layer repeated when the counts differ."""
    if state.shape[0] == dec_layers:
        return state
    return state[-1:].expand(dec_layers, -1, -1)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize(("enc_layers", "dec_layers"), LAYER_PAIRS)
def test_bridge_last_copies(cell: str, enc_layers: int, dec_layers: int) -> None:
    model = small_model(
        cell=cell, bridge="last", enc_layers=enc_layers, dec_layers=dec_layers
    ).double()
    (h, c), state = encoded(model)
    assert torch.equal(state.hidden, expected_layers(h, dec_layers))
    if cell == "lstm":
        assert c is not None and state.cell is not None
        assert torch.equal(state.cell, expected_layers(c, dec_layers))
        assert not torch.equal(state.cell, state.hidden)
    if enc_layers == 2 and enc_layers != dec_layers:
        assert not torch.allclose(h[0], h[1])  # so repeating layer 0 would be caught


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize(("enc_layers", "dec_layers"), LAYER_PAIRS)
def test_bridge_zero(cell: str, enc_layers: int, dec_layers: int) -> None:
    model = small_model(
        cell=cell, bridge="zero", enc_layers=enc_layers, dec_layers=dec_layers
    ).double()
    _, state = encoded(model)
    assert torch.equal(state.hidden, torch.zeros_like(state.hidden))
    if cell == "lstm":
        assert state.cell is not None
        assert torch.equal(state.cell, torch.zeros_like(state.cell))
    assert not any(name.startswith("bridge.") for name in model.state_dict())


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize(("enc_layers", "dec_layers"), LAYER_PAIRS)
def test_bridge_linear_tanh(cell: str, enc_layers: int, dec_layers: int) -> None:
    """h0 = tanh(W_h h + b_h) per layer, c0 = tanh(W_c c + b_c) for the LSTM (its own map)."""
    model = small_model(
        cell=cell, bridge="bridge", enc_layers=enc_layers, dec_layers=dec_layers, dec_hidden=5
    ).double()
    (h, c), state = encoded(model)
    sd = model.state_dict()
    w, bias = sd["bridge.hidden.weight"], sd["bridge.hidden.bias"]
    assert w.shape == (5, 6)
    expected = torch.tanh(expected_layers(h, dec_layers) @ w.T + bias)
    torch.testing.assert_close(state.hidden, expected, atol=1e-12, rtol=0)
    if cell == "lstm":
        assert c is not None and state.cell is not None
        w_c, b_c = sd["bridge.cell.weight"], sd["bridge.cell.bias"]
        assert not torch.equal(w_c, w)
        expected_c = torch.tanh(expected_layers(c, dec_layers) @ w_c.T + b_c)
        torch.testing.assert_close(state.cell, expected_c, atol=1e-12, rtol=0)
    else:
        assert "bridge.cell.weight" not in sd


def test_bridge_module_repeats_top_layer() -> None:
    """Bridge on its own: a 3-layer encoder state into a 2-layer decoder takes layer 2 twice."""
    bridge = Bridge("last", 2, 2, enc_layers=3, dec_layers=2, lstm=False)
    h = torch.arange(12.0).view(3, 2, 2)
    hidden, cell = bridge((h, None))
    assert cell is None
    assert torch.equal(hidden, torch.stack([h[2], h[2]]))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("lengths", [[5, 5, 5], [5, 3, 5, 1], [7, 6, 5, 4, 3, 2, 1]])
def test_per_length_calls_equal_packed_sequences(
    cell: str, layers: int, lengths: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two ways to skip padding (per-length calls, packed sequences) agree, with grads."""
    torch.manual_seed(0)
    encoder = Encoder(20, 6, 5, layers, cell, True, 0.0, 0).double()
    src = torch.randint(1, 20, (len(lengths), 8))
    lengths_t = torch.tensor(lengths)
    results = []
    for groups in (0, 8):  # 0: always packed; 8: per-length calls for these batches
        monkeypatch.setattr(Encoder, "max_groups", groups)
        encoder.zero_grad()
        keys, (h, c) = encoder(src, lengths_t)
        loss = keys.pow(2).sum() + h.sum() + (c.sum() if c is not None else 0)
        loss.backward()
        grads = [p.grad.clone() for p in encoder.parameters()]
        results.append((keys.detach(), h.detach(), c, grads))
    (k0, h0, c0, g0), (k1, h1, c1, g1) = results
    torch.testing.assert_close(k1, k0, atol=1e-12, rtol=0)
    torch.testing.assert_close(h1, h0, atol=1e-12, rtol=0)
    if cell == "lstm":
        torch.testing.assert_close(c1, c0, atol=1e-12, rtol=0)
    for a, b in zip(g0, g1, strict=True):
        torch.testing.assert_close(b, a, atol=1e-10, rtol=0)
    # Keys are exactly zero past each length.
    for row, n in enumerate(lengths):
        assert torch.count_nonzero(k1[row, n:]) == 0
