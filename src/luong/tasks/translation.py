"""The translation preset: a subword model of real sentences (``luong train --preset
translation``), for your own parallel data, such as the English-German software messages of
``docs/results.md``. There is no built-in translation data: it comes from your files.

The model is the size of the JoeyNMT run that ``docs/results.md`` compares with. The training
settings were chosen on that corpus's dev set (the exploration table of ``docs/results.md``):
batches of 2,048 tokens learn faster per epoch than 4,096 at about the same cost per token,
and 19 epochs are what one thread of a 2-core machine trains in under an hour with another
training on the other core (55 minutes there: devtest BLEU 41.95 with beam 5).
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
    epochs=19,
    batch_tokens=2048,
    lr=2e-3,
    schedule="linear",
    warmup_steps=200,
    clip_norm=1.0,
    label_smoothing=0.1,
    eval_every=100_000,  # dev at the end of each epoch only
    select="bleu",
    eval_batch_size=500,
    test_beam=5,
    test_alpha=0.6,
)
"""How the translation model trains; the test split is decoded with beam search."""
