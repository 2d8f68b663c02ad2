"""The translation preset: a subword model of real sentences (``luong train --preset
translation``), for your own parallel data, such as the English-German software messages of
``docs/results.md``. There is no built-in translation data: it comes from your files.

The model is the size of the JoeyNMT run that ``docs/results.md`` compares with (a 2-core
machine trains it in about an hour); the training settings were set on that corpus's dev
set. The exploration of the preset's settings on dev (issue 14) is still to be done.
"""

from __future__ import annotations

from luong.config import Seq2SeqConfig, TrainConfig, VocabConfig

__all__ = ["MODEL_CONFIG", "TRAIN_CONFIG", "VOCAB_CONFIG"]

VOCAB_CONFIG = VocabConfig(subword="unigram", vocab_size=4000, joint_vocab=True)
"""One sentencepiece unigram model of 4,000 pieces over both languages."""

MODEL_CONFIG = Seq2SeqConfig(
    cell="lstm",
    emb_dim=128,
    enc_hidden=128,
    enc_layers=1,
    bidirectional=True,
    dec_hidden=256,
    dec_layers=1,
    attention="general",
    input_feed=True,
    max_src_len=400,
    dropout=0.2,
    tie_embeddings=True,
)
"""The translation model."""

TRAIN_CONFIG = TrainConfig(
    epochs=12,
    batch_tokens=4096,
    lr=2e-3,
    schedule="linear",
    warmup_steps=200,
    clip_norm=1.0,
    label_smoothing=0.1,
    eval_every=400,
    select="bleu",
    eval_batch_size=500,
    test_beam=5,
    test_alpha=0.6,
)
"""How the translation model trains; the test split is decoded with beam search."""
