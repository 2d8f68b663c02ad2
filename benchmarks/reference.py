"""A straightforward Luong seq2seq, written the tutorial way, for side-by-side timing.

This is how the second seed (a tutorial implementation) and most course code write it: the
encoder runs on the padded batch, and every decoder step embeds one token, concatenates it
with the previous attentional state, steps a one-step ``nn.GRU``/``nn.LSTM``, scores every key
afresh (``W_a k`` recomputed at each step for the general score), masks, normalises, reads,
concatenates ``[c ; h]`` and projects to the vocabulary, allocating new tensors each time.
Same parameters and the same function as ``luong.Seq2Seq`` with the matching config (bar the
bridge, which here is linear + tanh of the concatenated final states, as ours).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class ReferenceSeq2Seq(nn.Module):
    """Shapes: B batch, S source length, T target length, E embedding, H encoder hidden per
    direction, K = 2 H keys, d decoder hidden, V vocabulary."""

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        emb: int,
        enc_hidden: int,
        dec_hidden: int,
        cell: str,
        score: str,
        input_feed: bool,
        enc_layers: int = 1,
    ) -> None:
        super().__init__()
        rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[cell]
        key_dim = 2 * enc_hidden
        self.cell = cell
        self.score = score
        self.input_feed = input_feed
        self.src_embedding = nn.Embedding(src_vocab, emb, padding_idx=0)
        self.encoder = rnn(emb, enc_hidden, enc_layers, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(key_dim, dec_hidden)
        self.tgt_embedding = nn.Embedding(tgt_vocab, emb, padding_idx=0)
        self.decoder = rnn(emb + (dec_hidden if input_feed else 0), dec_hidden, batch_first=True)
        if score == "general":
            self.W_a = nn.Linear(key_dim, dec_hidden, bias=False)
        self.W_c = nn.Linear(key_dim + dec_hidden, dec_hidden, bias=False)
        self.out = nn.Linear(dec_hidden, tgt_vocab)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        mask = torch.arange(src.shape[1])[None, :] < src_lengths[:, None]  # [B, S]
        keys, final = self.encoder(self.src_embedding(src))  # [B, S, K]
        h_n = final[0] if isinstance(final, tuple) else final  # the top layer's two directions
        hidden = torch.tanh(self.bridge(torch.cat([h_n[-2], h_n[-1]], dim=-1))).unsqueeze(0)
        state = (hidden, torch.zeros_like(hidden)) if self.cell == "lstm" else hidden
        feed = torch.zeros(src.shape[0], self.W_c.out_features)
        logits = []
        for t in range(tgt_in.shape[1]):
            embedded = self.tgt_embedding(tgt_in[:, t : t + 1])  # [B, 1, E]
            if self.input_feed:
                embedded = torch.cat([embedded, feed.unsqueeze(1)], dim=-1)
            output, state = self.decoder(embedded, state)
            h = output.squeeze(1)  # [B, d]
            projected = self.W_a(keys) if self.score == "general" else keys  # every step
            scores = torch.bmm(projected, h.unsqueeze(2)).squeeze(2)  # [B, S]
            scores = scores.masked_fill(~mask, float("-inf"))
            weights = F.softmax(scores, dim=1)
            context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # [B, K]
            feed = torch.tanh(self.W_c(torch.cat([context, h], dim=1)))
            logits.append(self.out(feed))
        return torch.stack(logits, dim=1)  # [B, T, V]

    @torch.inference_mode()
    def greedy(self, src: Tensor, src_lengths: Tensor, max_len: int, bos: int, eos: int) -> Tensor:
        """Greedy decoding the same way, one step at a time: ids [B, <= max_len]."""
        mask = torch.arange(src.shape[1])[None, :] < src_lengths[:, None]
        keys, final = self.encoder(self.src_embedding(src))
        h_n = final[0] if isinstance(final, tuple) else final
        hidden = torch.tanh(self.bridge(torch.cat([h_n[-2], h_n[-1]], dim=-1))).unsqueeze(0)
        state = (hidden, torch.zeros_like(hidden)) if self.cell == "lstm" else hidden
        feed = torch.zeros(src.shape[0], self.W_c.out_features)
        token = torch.full((src.shape[0], 1), bos)
        outputs = []
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_len):
            embedded = self.tgt_embedding(token)
            if self.input_feed:
                embedded = torch.cat([embedded, feed.unsqueeze(1)], dim=-1)
            output, state = self.decoder(embedded, state)
            h = output.squeeze(1)
            projected = self.W_a(keys) if self.score == "general" else keys
            scores = torch.bmm(projected, h.unsqueeze(2)).squeeze(2)
            weights = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=1)
            context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
            feed = torch.tanh(self.W_c(torch.cat([context, h], dim=1)))
            token = self.out(feed).argmax(-1, keepdim=True)
            outputs.append(token)
            done |= token.squeeze(1) == eos
            if done.all():
                break
        return torch.cat(outputs, dim=1)
