"""The command line's grammar: the flags of the commands that make data and train (``luong
train``, ``prepare``, ``corpus``, ``zoo``), one ``add_<command>(commands)`` each, and ``luong
train``'s help (``PresetHelp``). The commands that decode have theirs in
``luong.cli.decode_parsers``; those that read or rewrite run and model folders in
``luong.cli.folder_parsers``.

Plain data only: this module imports no torch (nor anything that does), so ``luong --help``
and ``luong train --help`` answer at once. What runs a command is its own module
(``luong.cli.train``, ...), imported by ``luong.cli.main`` only when that command runs
(``luong.cli.COMMANDS``). A flag whose help shows a bound or a choice reads it from the plain
modules below (``luong.config.faces``, ``luong.config.presets``, ``luong.config.search``, ...).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from luong.cli.common import add_config_flags, add_threads_flag, folder_to_write
from luong.config.faces import CORPUS_CONTEXTS, CORPUS_SPLIT_BY, CorpusOptions, FetchOptions
from luong.config.model import Seq2SeqConfig
from luong.config.presets import (
    FINE_TUNING,
    OWN_DATA,
    SPLITS,
    TASKS,
    TRAIN_PRESETS,
    ZOO_PRESETS,
    Preset,
    task_configs,
)
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.data.vocab import TOKENS

__all__ = [
    "PresetHelp",
    "add_corpus",
    "add_prepare",
    "add_train",
    "add_zoo",
    "train_arguments",
]


def add_train(commands: Any) -> None:
    train = commands.add_parser(
        "train", help="train a model and write its run folder", add_help=False
    )
    train_arguments(train, task_configs(OWN_DATA))


class PresetHelp(argparse.Action):
    """``luong train``'s ``-h, --help``: the flags' defaults are those of the task or the
    preset given before it (``luong train g2p --help``, ``luong train --preset translation
    --help``), or the configs' own (the dates model's)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(
            option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        name = getattr(namespace, "preset", None) or getattr(namespace, "task", None)
        if name is not None:
            parser = argparse.ArgumentParser(
                prog=parser.prog, description=parser.description, add_help=False
            )
            train_arguments(parser, task_configs(name), name)
        parser.print_help()
        parser.exit()


def train_arguments(parser: argparse.ArgumentParser, preset: Preset, name: str = "") -> None:
    """The flags of ``luong train``, the config flags showing ``preset``'s values as their
    defaults (``name``'s, in the group titles, when it is a task or preset)."""
    parser.add_argument(
        "-h",
        "--help",
        action=PresetHelp,
        help="show this help (after TASK or --preset P: with the defaults of P) and exit",
    )
    parser.add_argument(
        "task", nargs="?", choices=TASKS, help="a built-in task (or your own data: --train, --dev)"
    )
    parser.add_argument("--out", required=True, type=Path, help="the run folder to write")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its latest checkpoint (a run folder that holds "
        "a checkpoint is resumed anyway; this flag makes a missing one an error); with no "
        "task, data or --config, the run's own OUT/config.toml gives its settings",
    )
    own = parser.add_argument_group(
        "your own data: one source<TAB>target pair a line, or line-aligned source and "
        "target files (--train-src F --train-tgt F, and so on)"
    )
    own.add_argument(
        "--train",
        dest="train_file",
        type=Path,
        metavar="FILE.tsv",
        help="the training pairs, one source<TAB>target a line",
    )
    own.add_argument(
        "--dev",
        dest="dev_file",
        type=Path,
        metavar="FILE.tsv",
        help="the dev pairs, which pick the best weights (needed with --train)",
    )
    own.add_argument(
        "--test",
        dest="test_file",
        type=Path,
        metavar="FILE.tsv",
        help="the test pairs, scored at the end (none: no test figures)",
    )
    for split in SPLITS:
        for side, other, what in (("src", "tgt", "sources"), ("tgt", "src", "targets")):
            own.add_argument(
                f"--{split}-{side}",
                type=Path,
                metavar="FILE",
                help=f"the {split} {what}, a line each, line-aligned with --{split}-{other}",
            )
    own.add_argument(
        "--data",
        dest="prepared",
        type=Path,
        metavar="PREPARED",
        help="a prepared corpus (luong prepare) in place of --train: read from disk batch by "
        "batch, with its own vocabularies; --dev and --test stay text files",
    )
    own.add_argument("--src-tokens", choices=TOKENS, help="source tokens (default: char)")
    own.add_argument("--tgt-tokens", choices=TOKENS, help="target tokens (default: char)")
    own.add_argument(
        "--skip-bad-lines", action="store_true", help="skip bad lines (counted on stderr)"
    )
    own.add_argument(
        "--mix",
        type=Path,
        metavar="FILE.tsv",
        help="general pairs mixed into the training pairs (fine-tuning: keep what the model "
        "knows), --mix-ratio of them per training pair, drawn with a fixed seed",
    )
    own.add_argument(
        "--mix-ratio",
        type=float,
        metavar="R",
        help="general pairs per training pair with --mix (default 1; at most all of them)",
    )
    own.add_argument(
        "--preset",
        choices=TRAIN_PRESETS,
        help="start from these settings: a built-in task's, translation's (subwords, BLEU), or "
        "adapt's (fine-tuning a model on a few hundred pairs of your own: with --init-from)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="a TOML file: task = NAME and [data], [model], [train], [vocab] tables (a run "
        "folder's config.toml repeats that run; flags override it)",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--quiet", action="store_true", help="warnings and errors only on stderr, no progress bar"
    )
    shown.add_argument(
        "--verbose",
        action="store_true",
        help="also every logging interval's loss, learning rate, gradient norm, tokens/s",
    )
    parser.add_argument(
        "--locales", nargs="+", metavar="LOCALE", help="dates: babel locales (default: en_US)"
    )
    parser.add_argument("--data-seed", type=int, help="seed of the task's data (default 0)")
    for split, size in (("train", 20_000), ("dev", 1_000), ("test", 10_000)):
        parser.add_argument(
            f"--n-{split}", type=int, metavar="N", help=f"dates: {split} pairs (default {size})"
        )
    of = f"; defaults: {name}'s" if name else ""
    if name in FINE_TUNING:  # the model's own: --init-from's
        own_title = "(the --init-from model's own: a flag may repeat its value, not change it{})"
        add_config_flags(
            parser, Seq2SeqConfig, f"model {own_title.format('; dropout aside')}", shown="its own"
        )
        add_config_flags(parser, TrainConfig, f"training (overrides --config{of})", preset.train)
        add_config_flags(parser, VocabConfig, f"vocabulary {own_title.format('')}", shown="its own")
    else:
        add_config_flags(parser, Seq2SeqConfig, f"model (overrides --config{of})", preset.model)
        add_config_flags(parser, TrainConfig, f"training (overrides --config{of})", preset.train)
        add_config_flags(parser, VocabConfig, f"vocabulary (overrides --config{of})", preset.vocab)
    add_threads_flag(parser)


def add_corpus(commands: Any) -> None:
    defaults = CorpusOptions()
    parser = commands.add_parser(
        "corpus",
        help="a parallel corpus from gettext catalogs (this machine's, or .po/.mo files)",
        description="Harvest the translations of gettext catalogs into train.tsv, dev.tsv, "
        "devtest.tsv and manifest.json for one language pair: .po and .mo files, folders of "
        "them, or by default the locale tree of this system (/usr/share/locale/LANG/"
        "LC_MESSAGES). Fuzzy, untranslated and obsolete entries are left out, plural ones "
        "unless --plurals; keyboard accelerators are taken out, whitespace collapsed, long "
        "pairs dropped; each source is kept once (its most frequent translation); a "
        "catalog is read as msgfmt reads it (its declared charset; a damaged one skipped); one "
        "in another language (its Language header's, else its locale folder's or file "
        "name's) is skipped. The manifest lists the catalogs and what was dropped and why.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="catalogs (.po, .mo) or folders of them (default: the locale tree's folder of "
        "--tgt-lang, /usr/share/locale/LANG/LC_MESSAGES)",
    )
    parser.add_argument("--tgt-lang", required=True, help="the catalogs' language (de, pt-BR)")
    parser.add_argument(
        "--src-lang", default="en", help="the msgids' language, recorded (default en)"
    )
    parser.add_argument(
        "--out", required=True, type=folder_to_write("corpus"), help="the corpus folder to write"
    )
    parser.add_argument(
        "--split-by",
        choices=CORPUS_SPLIT_BY,
        default=defaults.split_by,
        help="catalog: whole catalogs to dev and devtest (a test of catalogs never trained "
        f"on); hash: each source by a hash of its text (default {defaults.split_by})",
    )
    for name in ("dev", "devtest"):
        parser.add_argument(
            f"--{name}",
            type=float,
            default=getattr(defaults, name),
            metavar="SHARE",
            help=f"the share of the pairs dealt to {name} (default {getattr(defaults, name)})",
        )
    parser.add_argument(
        "--plurals",
        action="store_true",
        help="plural entries too: msgid with msgstr[0], msgid_plural with the last form",
    )
    parser.add_argument(
        "--context",
        choices=CORPUS_CONTEXTS,
        default=defaults.context,
        help="an entry with a msgctxt: drop the context and keep the pair, or skip the entry "
        f"(default {defaults.context})",
    )
    parser.add_argument(
        "--max-len",
        type=int,
        default=defaults.max_len,
        metavar="N",
        help=f"drop a pair with a side of more than N characters (default {defaults.max_len})",
    )
    parser.add_argument(
        "--exclude",
        nargs="+",
        type=Path,
        default=[],
        metavar="FILE",
        help="TSV files (their first column) or catalogs whose sources no split may hold "
        "(another corpus's dev and test)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace --out if it holds an earlier corpus"
    )
    fetch = FetchOptions()
    debian = parser.add_argument_group(
        "Debian's catalogs",
        "--debian DIR fetches the catalogs of --tgt-lang from every package of the machine's "
        "Debian or Ubuntu archive that ships some (apt's Contents index, apt-get download), "
        "then builds the corpus from them. Resumable: each package is written whole into "
        "DIR/PACKAGE, and the same command again skips what is fetched and resumes what was "
        "stopped. It needs apt, its package index and network to the archive.",
    )
    debian.add_argument(
        "--debian",
        type=Path,
        metavar="DIR",
        help="fetch into DIR (kept: the next run fetches only what is new or failed), then "
        "build the corpus from DIR's catalogs; no PATH with it",
    )
    debian.add_argument(
        "--exclude-packages",
        nargs="+",
        default=[],
        metavar="NAME",
        help="packages whose catalogs stay out of the corpus (fetched all the same: a test "
        "held out, your own project); @FILE reads names from FILE, one a line",
    )
    debian.add_argument(
        "--jobs",
        type=int,
        default=fetch.jobs,
        metavar="N",
        help=f"apt-get download processes at once (default {fetch.jobs})",
    )
    debian.add_argument(
        "--max-mb",
        type=float,
        default=fetch.max_mb,
        metavar="MB",
        help=f"skip a package larger than MB (default {fetch.max_mb:g})",
    )


def add_prepare(commands: Any) -> None:
    parser = commands.add_parser(
        "prepare",
        help="segment a training corpus once into a folder that luong train --data reads from disk",
    )
    parser.add_argument(
        "--train",
        dest="train_file",
        type=Path,
        metavar="FILE.tsv",
        help="the training pairs, one source<TAB>target a line (.gz and .xz read as such)",
    )
    parser.add_argument(
        "--train-src", type=Path, metavar="FILE", help="the sources, a line each (or .gz, .xz)"
    )
    parser.add_argument(
        "--train-tgt", type=Path, metavar="FILE", help="the targets, line-aligned with them"
    )
    parser.add_argument(
        "--out",
        required=True,
        type=folder_to_write("prepare"),
        help="the prepared corpus to write",
    )
    parser.add_argument(
        "--src-tokens",
        choices=TOKENS,
        default="char",
        help="source tokens with subword none (default: char)",
    )
    parser.add_argument(
        "--tgt-tokens",
        choices=TOKENS,
        default="char",
        help="target tokens with subword none (default: char)",
    )
    parser.add_argument(
        "--spm-model",
        type=Path,
        metavar="FILE.model",
        help="a sentencepiece model trained elsewhere, for both sides, its pieces and ids as "
        "they are (ids 0-3: <pad>, <s>, </s>, <unk>); instead of learning a vocabulary",
    )
    parser.add_argument(
        "--max-src-len",
        type=int,
        metavar="N",
        help="drop pairs whose source has more symbols (default: keep all; luong train "
        "refuses sources longer than the model's max_src_len)",
    )
    parser.add_argument(
        "--max-tgt-len", type=int, metavar="N", help="drop pairs whose target has more symbols"
    )
    parser.add_argument(
        "--skip-bad-lines", action="store_true", help="skip bad lines (counted in the manifest)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes that segment (the output is the same for any N) (default 1)",
    )
    parser.add_argument(
        "--shard-pairs",
        type=int,
        default=1_000_000,
        metavar="N",
        help="the most pairs a shard holds (default 1000000)",
    )
    add_config_flags(parser, VocabConfig, "vocabulary (learned as luong train learns it)")


def add_zoo(commands: Any) -> None:
    zoo = commands.add_parser(
        "zoo",
        help="train every attention of Luong et al. (2015) with one budget: a table, a figure",
        description="Train global attention (location, dot, scaled_dot, general, concat), "
        "local-m and local-p (dot, general) and Bahdanau's, each with and without input "
        "feeding, with the same steps, data and seeds; write OUT/TASK.md (the table, the "
        "command) and OUT/TASK.png. The runs are kept in OUT/TASK.json: the same command "
        "continues a zoo that was stopped. --task translation trains the translation preset "
        "on your own --train, --dev and --test files and ranks by test BLEU.",
    )
    zoo.add_argument(
        "--task", choices=ZOO_PRESETS, default="dates", help="the task (default dates)"
    )
    zoo.add_argument("--out", type=Path, required=True, help="the folder to write")
    zoo.add_argument("--seeds", type=int, default=3, help="seeds per variant (default 3)")
    zoo.add_argument("--steps", type=int, default=200, help="optimizer steps per run (default 200)")
    zoo.add_argument("--window", type=int, default=4, help="local attention's D (default 4)")
    zoo.add_argument("--n-dev", type=int, default=1000, help="dev pairs (default 1000)")
    zoo.add_argument("--n-test", type=int, default=2000, help="test pairs (default 2000)")
    own = zoo.add_argument_group("translation: your own source<TAB>target files")
    for split in SPLITS:
        own.add_argument(
            f"--{split}",
            default="",
            metavar="FILE.tsv",
            help=f"translation: the {split} pairs (needed with --task translation only)",
        )
    own.add_argument(
        "--vocab-size", type=int, default=0, help="subword pieces (default 0: the preset's)"
    )
    add_threads_flag(zoo)
