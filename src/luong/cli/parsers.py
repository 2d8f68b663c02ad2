"""The command line's grammar: every command's flags, one ``add_<command>(commands)`` each.

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

from luong.cli.common import (
    add_config_flags,
    add_device_flags,
    add_model_arguments,
    add_search_flags,
    add_threads_flag,
    folder_to_write,
)
from luong.config.choices import INT8_PARTS
from luong.config.faces import (
    CORPUS_CONTEXTS,
    CORPUS_SPLIT_BY,
    FORMATS,
    MAX_DPI,
    MAX_POSITIONS,
    PLACEHOLDER_MODES,
    SHORTLIST_FREQUENT,
    SHORTLIST_PER_SOURCE,
    TM_MATCHES,
    TM_THRESHOLD,
    CorpusOptions,
    FetchOptions,
    ServeLimits,
)
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
from luong.config.search import MAX_CONSTRAINT_PIECES, MAX_PHRASE_PIECES
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.data.vocab import TOKENS
from luong.version import install_extra

__all__ = [
    "MAX_CONNECTIONS",
    "NOT_SCORED",
    "PresetHelp",
    "add_average",
    "add_corpus",
    "add_curves",
    "add_eval",
    "add_export",
    "add_plot",
    "add_plot_scores",
    "add_po",
    "add_prepare",
    "add_quantize",
    "add_shortlist",
    "add_runs",
    "add_serve",
    "add_train",
    "add_translate",
    "add_zoo",
    "train_arguments",
]

# Scoring takes the best output of a search: no n-best lists, no draws (and --seed is the
# task's data seed here).
NOT_SCORED = ("nbest", "sample", "temperature", "top_k", "seed")

MAX_CONNECTIONS = 256
"""``luong serve``'s default ``--max-connections``."""


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


def add_eval(commands: Any) -> None:
    parser = commands.add_parser("eval", help="score a model on a task's test set or a file")
    add_model_arguments(parser)
    parser.add_argument(
        "--task",
        choices=TASKS,
        help="a built-in task's test set (default: the task in DIR/config.toml, when DIR is "
        "a run folder of a built-in task)",
    )
    parser.add_argument("--data", type=Path, metavar="FILE.tsv", help="source<TAB>target pairs")
    parser.add_argument("--data-src", type=Path, metavar="FILE", help="sources, a line each")
    parser.add_argument(
        "--data-tgt", type=Path, metavar="FILE", help="their references, line-aligned"
    )
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip bad lines of --data")
    parser.add_argument("--n", type=int, help="dates: test pairs (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the task's data (default 0)")
    parser.add_argument(
        "--locales", nargs="+", metavar="LOCALE", help="dates: babel locales (default: en_US)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=1000, help="sources per search call (default 1000)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_device_flags(parser, precision=True)
    add_search_flags(parser, exclude=NOT_SCORED)


def add_translate(commands: Any) -> None:
    parser = commands.add_parser("translate", help="one source per line in, one output out")
    add_model_arguments(parser)
    parser.add_argument("--input", type=Path, help="read sources from FILE (default: stdin)")
    parser.add_argument(
        "--batch-size", type=int, default=512, help="sources per search call (default 512)"
    )
    parser.add_argument(
        "--max-src-len",
        type=int,
        metavar="N",
        help="the longest source line, in symbols (default: the model's max_src_len); a "
        "longer line is an error, unless --truncate",
    )
    parser.add_argument(
        "--truncate",
        action="store_true",
        help="cut lines longer than the maximum source length, with a warning on stderr",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: the outputs, one "
        'line per input; jsonl: one object per input, {"source", "hypotheses": [{"text", '
        '"score", "tokens", "attention"}]}, tokens as output symbols (EOS included), '
        "attention [T][S] over the source symbols and its EOS; numbers rounded to 6 decimals, "
        "null where not finite (default text)",
    )
    parser.add_argument(
        "--align",
        action="store_true",
        help="write each output's word alignment from the attention: in text, the output, a "
        "tab, then Pharaoh pairs i-j (0-based source word, output word: 0-0 1-2); in jsonl, "
        'each hypothesis\'s "alignment": [[i, j], ...]',
    )
    add_placeholders_flag(parser, "off")
    add_device_flags(parser, precision=True)
    add_search_flags(parser)
    parser.add_argument(
        "--stream",
        action="store_true",
        help="translate each line as soon as it is read and write its output at once "
        "(flushed): for interactive use and pipes (without it, the input is read first); "
        "with --seed N, line i draws with seed N + i",
    )
    parser.add_argument(
        "--constraints",
        metavar="FILE",
        help='one JSON list of phrases a line, as many lines as the input (["Datei", '
        '"%%s"]; [] or an empty line: none): each output contains each phrase as often as '
        "listed (lexically constrained beam search, Post and Vilar 2018; not with --sample), "
        f"at most {MAX_PHRASE_PIECES} target symbols a phrase and {MAX_CONSTRAINT_PIECES} a "
        "line; with --placeholders, no phrase may hold a placeholder (the source's are kept)",
    )
    add_memory_flags(
        parser,
        'is not decoded: its output is the memory\'s translation (jsonl: "origin": "memory"; '
        'each record says its "origin" and "matches")',
    )
    add_glossary_flag(parser)


GLOSSARY_HELP = (
    "a glossary: .tsv or .csv rows of source term, target term (further cells: other forms "
    "of the target, not enforced), or .tbx (needs the tm extra); where a source holds a "
    "term (whole words; a term in lower case matches in any case, one with a capital only "
    "as written; never inside a placeholder), each output holds its first target term as "
    "listed (lexically constrained beam search; not with --sample); a target term the "
    "model's vocabulary cannot write is an error"
)


def add_glossary_flag(parser: Any, more: str = "") -> None:
    """``--glossary FILE`` (``luong.memory.glossary``), read by the command once the model is
    loaded (a TBX file's languages are the model's)."""
    parser.add_argument(
        "--glossary", dest="glossary_file", type=Path, metavar="FILE", help=GLOSSARY_HELP + more
    )


def add_memory_flags(parser: Any, exact: str) -> None:
    """``--tm FILE...`` and ``--tm-threshold``: a translation memory
    (``luong.memory.translation_memory``);
    ``exact`` says what a source the memory holds exactly gets."""
    parser.add_argument(
        "--tm",
        nargs="+",
        metavar="FILE",
        help="translation memory files: gettext catalogs (.po, .mo: their translated, "
        "non-fuzzy entries), TMX 1.4 (.tmx: the tuv of the model's source and target "
        "languages), or TSV (source<TAB>target a line); earlier files first. A source the "
        "memory holds exactly (whitespace collapsed, case kept) whose translation keeps its "
        f"placeholders {exact}; the others get the memory's fuzzy matches (rapidfuzz's "
        f"ratio, at most {TM_MATCHES}, best first)",
    )
    parser.add_argument(
        "--tm-threshold",
        type=float,
        default=TM_THRESHOLD,
        metavar="S",
        help="the lowest score of a fuzzy match shown, in (0, 100] (rapidfuzz's fuzz.ratio "
        f"on whitespace-collapsed text; default {TM_THRESHOLD:g})",
    )


def add_placeholders_flag(parser: Any, default: str) -> None:
    """``--placeholders``, its choices and their help from ``PLACEHOLDER_MODES``."""
    parser.add_argument(
        "--placeholders",
        choices=tuple(PLACEHOLDER_MODES),
        default=default,
        help="the source's placeholders (printf, %%(name)s, {name}, tags, --options, URLs, "
        "\\n): "
        + "; ".join(f"{name}: {text}" for name, text in PLACEHOLDER_MODES.items())
        + f" (default {default})",
    )


def add_po(commands: Any) -> None:
    parser = commands.add_parser(
        "po",
        help="fill a gettext catalog's untranslated entries (.po or .pot)",
        description="Fill the untranslated entries of a gettext catalog (.po, or a .pot) with a "
        "model's translations, each marked fuzzy with a comment naming the model (and one giving "
        "the model's confidence in it), for a person to review; translated, fuzzy and "
        "obsolete entries and everything else in the file are "
        "kept byte for byte. Plural entries get every msgstr[n] the header's Plural-Forms asks "
        "for (a .pot gets the target language's). Decodes as the model's training decoded its "
        "test split (beam 5 with the translation preset) unless the decoding flags say "
        "otherwise. The catalog is read as msgfmt reads it (in the charset its header "
        "declares; one msgfmt rejects is refused with its line) and written in the same "
        "charset (--to-utf8: UTF-8), all or nothing. An entry with a line longer than the "
        "model reads is left untranslated and named. Exit status: 0; 3 when a filled format "
        "entry (c-format, python-format, python-brace-format) fails the placeholder check "
        "msgfmt --check-format makes (the file is written, each such entry named); 1 on an "
        "error (nothing written); 2 for a bad command line.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="DIR... CATALOG",
        help="the model folder(s) (several: an ensemble), then the catalog to fill",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the catalog to write; a file that exists (a reviewed catalog, CATALOG itself) "
        "only with --force",
    )
    parser.add_argument("--force", action="store_true", help="write over an --out that exists")
    parser.add_argument(
        "--adapt",
        type=Path,
        metavar="RUN",
        help="first fine-tune the model on the catalog's translated entries (luong train "
        "--preset adapt; a tenth held out as dev, by a hash of the source; at least 20 "
        "entries), writing the run folder RUN, then fill the catalog with the adapted model; "
        "next time, fill with RUN itself (luong po RUN CATALOG); the same command again "
        "resumes a run that was stopped",
    )
    parser.add_argument(
        "--mix",
        type=Path,
        metavar="FILE.tsv",
        help="with --adapt: general pairs (source<TAB>target, the general model's kind of "
        "data) mixed into the catalog's, --mix-ratio of them per pair, drawn with a fixed "
        "seed: the adapted model keeps more of what the general one knows",
    )
    parser.add_argument(
        "--mix-ratio",
        type=float,
        metavar="R",
        help="general pairs per catalog pair with --mix (default 1; at most all of them)",
    )
    parser.add_argument(
        "--to-utf8",
        action="store_true",
        help="write the catalog in UTF-8, its header's charset set to UTF-8 (default: in the "
        "charset its header declares, such as ISO-8859-1)",
    )
    parser.add_argument(
        "--retranslate-fuzzy",
        action="store_true",
        help="translate fuzzy entries again (their msgstr replaced); default: left alone",
    )
    parser.add_argument(
        "--accelerator",
        choices=("auto", "_", "&", "none"),
        default="auto",
        help="the keyboard accelerator marker (_File: GTK; &File: Qt, KDE), taken out before "
        "the translation and put back once; auto: the one that more messages carry once "
        "(at least two), else none (default auto)",
    )
    parser.add_argument(
        "--tgt-lang",
        metavar="LANG",
        help="the target language (de, pt-BR: a code babel knows), when the model records "
        "none; the catalog's Language must agree",
    )
    parser.add_argument(
        "--min-confidence",
        metavar="X",
        help="leave an entry whose confidence is below X, a number in [0, 1], untranslated "
        "for a person (named in the summary); each entry filled has its confidence in a "
        "comment (# luong: confidence 0.73: the geometric mean of its tokens' probabilities; "
        "docs/results.md says what a value meant on gettext-en-de; default: fill every entry)",
    )
    # constrain: the better of the two mechanisms on gettext-en-de's dev (docs/results.md)
    add_placeholders_flag(parser, "constrain")
    add_memory_flags(
        parser,
        "is filled from it, with the comment # luong: from memory (FILE), not fuzzy (fuzzy "
        "where the source differs in whitespace); entries the model fills get the fuzzy "
        'matches in comments (# luong: memory 92 (FILE): "source" -> "target"); a summary '
        "line counts the entries from memory, with fuzzy matches, and by the model",
    )
    add_glossary_flag(parser)
    parser.add_argument(
        "--batch-size", type=int, default=512, help="messages per search call (default 512)"
    )
    add_device_flags(parser, precision=True)
    add_search_flags(parser, exclude=NOT_SCORED)


def add_plot(commands: Any) -> None:
    plot = commands.add_parser(
        "plot",
        help="heatmap of the attention of one translation",
        description="Decode one input and draw its attention matrix: source symbols across, "
        "output symbols down, a colour bar (PNG, no display needed).",
    )
    plot.add_argument("model", type=Path, help="a model folder")
    plot.add_argument("text", help='the input, e.g. "Monday, March 5, 1979"')
    plot.add_argument("--out", type=Path, required=True, help="the PNG to write")
    add_search_flags(plot, exclude=("nbest",))  # one output is drawn: the best
    plot.add_argument(
        "--dpi", type=int, default=100, help=f"pixels per inch, at most {MAX_DPI} (default 100)"
    )
    add_device_flags(plot, precision=True)


def add_plot_scores(commands: Any) -> None:
    scores = commands.add_parser(
        "plot-scores",
        help="dot, general and concat attention weights side by side",
        description="Bar charts of attention weights over the source positions, one per "
        "score, padded positions shaded. Without DIR: freshly initialised dot, general and "
        "concat attentions on one random input (keys and query from --seed). With DIR...: "
        "one trained model per chart (e.g. one trained with each --attention), their "
        "attention at output step --step of their greedy output for --text.",
    )
    scores.add_argument(
        "models",
        nargs="*",
        type=Path,
        metavar="DIR",
        help="model folders, a chart each (none: fresh attentions)",
    )
    scores.add_argument("--out", type=Path, required=True, help="the PNG to write")
    scores.add_argument(
        "--text",
        default="Monday, March 5, 1979",
        help='trained models: the input (default "Monday, March 5, 1979")',
    )
    scores.add_argument(
        "--step",
        type=int,
        default=0,
        help="trained models: the output step, from 0 (default 0: the first)",
    )
    scores.add_argument(
        "--pad",
        type=int,
        default=2,
        help="padded positions after the input (0: none) (default 2)",
    )
    scores.add_argument(
        "--length",
        type=int,
        default=8,
        help=f"fresh: positions, padding included, at most {MAX_POSITIONS} (default 8)",
    )
    scores.add_argument("--seed", type=int, default=0, help="fresh: the seed (default 0)")
    scores.add_argument(
        "--dpi", type=int, default=100, help=f"pixels per inch, at most {MAX_DPI} (default 100)"
    )
    add_device_flags(scores, precision=True)


def add_runs(commands: Any) -> None:
    runs = commands.add_parser(
        "runs",
        help="a table of the run folders under DIR",
        description="One row per run folder under DIR: task or data (paths as the run was "
        "given them), the settings that differ between the runs, the best dev figure, the "
        "test figures, training time, steps. A folder that cannot be read is skipped, with "
        "a line on stderr saying why.",
    )
    runs.add_argument("root", type=Path, metavar="DIR", help="a folder of run folders")
    runs.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a table; json: the rows as a JSON list (default text)",
    )
    runs.add_argument(
        "--wide",
        action="store_true",
        help="text: every column and whole cells (default: the table fits 120 columns; the "
        "settings left out are named on stderr)",
    )


def add_curves(commands: Any) -> None:
    curves = commands.add_parser(
        "curves",
        help="training loss and dev figure against steps and seconds",
        description="The curves of log.jsonl: training loss and the dev figure against "
        "steps and against seconds, several runs overlaid and labelled (PNG).",
    )
    curves.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders")
    curves.add_argument("--out", type=Path, required=True, help="the PNG to write")
    curves.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")


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


def add_average(commands: Any) -> None:
    parser = commands.add_parser(
        "average",
        help="average the weights of a run's last checkpoints into a model folder",
        description="Average checkpoints of one run into a model folder that luong eval, "
        "luong translate and luong.load read. Give a run folder with --last N (its N newest "
        "checkpoints; train with --keep-checkpoints N to keep them), or the checkpoint "
        "folders themselves. Checkpoints of two runs are refused (separately trained weights "
        "do not line up; an ensemble combines runs: luong translate RUN1 RUN2). --out must be "
        "a new or empty folder, or with --force an earlier average; it is written all or "
        "nothing.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="a run folder (with --last), or checkpoint folders of one run (or model folders "
        "outside any run)",
    )
    parser.add_argument(
        "--last", type=int, metavar="N", help="the run's N newest checkpoints (default: all)"
    )
    parser.add_argument(
        "--out",
        type=folder_to_write("average"),
        required=True,
        help="the model folder to write (new or empty)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it holds an earlier average (in one step: a reader sees the "
        "old average or the new one); any other folder is still refused",
    )
    add_device_flags(parser)


def add_quantize(commands: Any) -> None:
    parser = commands.add_parser(
        "quantize",
        help="write a model's int8 form: half the size on disk, decoding at about float32's "
        "speed on this CPU (docs/performance.md)",
        description="Write the int8 form of a model folder (int8 weights with a float scale "
        "per row, in safetensors): the decoder's output layer, cells and attentional layer "
        "multiply in int8 on the CPU. luong translate, eval, serve, ensembles and luong.load "
        "read it as any model folder; it is not trained further. --out must be a new or empty "
        "folder, or with --force an earlier int8 model; it is written all or nothing.",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder (float32)")
    parser.add_argument(
        "--out",
        type=folder_to_write("quantize"),
        required=True,
        help="the model folder to write (new or empty)",
    )
    parser.add_argument(
        "--parts",
        default=",".join(INT8_PARTS),
        metavar="PART[,PART]",
        help=f"what to hold in int8, comma-separated: some of {', '.join(INT8_PARTS)} "
        "(default: all three)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it holds an earlier int8 model (in one step); any other folder "
        "is still refused",
    )
    add_threads_flag(parser)


def add_shortlist(commands: Any) -> None:
    parser = commands.add_parser(
        "shortlist",
        help="learn a model's lexical shortlist from its training data: decoding then runs the "
        "output layer over each batch's likely target pieces only (--shortlist)",
        description="Learn a lexical table from training pairs with the model's own attention "
        "(each target piece linked to the source piece it attends to most, teacher-forced, "
        "one forward pass per batch), and write its shortlist into the model folder "
        "(shortlist.safetensors): each source piece's --per-source most likely target pieces "
        "and the --frequent most frequent ones. Every command that decodes the folder then "
        "uses it (--shortlist 0: the full vocabulary). The pairs: --train, or the run's own "
        "training data (its config.toml).",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder (or a run)")
    parser.add_argument(
        "--train",
        type=Path,
        metavar="FILE.tsv",
        help="the training pairs, source TAB target a line (default: the run's own, as its "
        "config.toml names them)",
    )
    parser.add_argument(
        "--per-source",
        type=int,
        default=SHORTLIST_PER_SOURCE,
        metavar="K",
        help=f"target pieces kept per source piece (default {SHORTLIST_PER_SOURCE})",
    )
    parser.add_argument(
        "--frequent",
        type=int,
        default=SHORTLIST_FREQUENT,
        metavar="N",
        help=f"the most frequent target pieces, in every batch (default {SHORTLIST_FREQUENT})",
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, help="pairs per forward pass (default 64)"
    )
    add_threads_flag(parser)


def add_pair(commands: Any) -> None:
    parser = commands.add_parser(
        "pair",
        help="show or record the language pair of a model folder",
        description="Show the language pair a model folder records (config.json's src_lang "
        "and tgt_lang), or record one with --src-lang and --tgt-lang: for a model trained "
        "without luong train --src-lang/--tgt-lang, so that luong serve's LibreTranslate API "
        "routes requests to it. Only config.json changes (all or nothing).",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder or run folder")
    parser.add_argument("--src-lang", metavar="CODE", help="the source language (en)")
    parser.add_argument("--tgt-lang", metavar="CODE", help="the target language (de)")


def add_serve(commands: Any) -> None:
    parser = commands.add_parser(
        "serve",
        help="a translation server and the attention explorer in the browser",
        description="Serve model folders over HTTP: POST /api/translate, GET /api/models, "
        "GET /health, the OpenAPI schema at /docs, and the attention explorer at /; and the "
        "LibreTranslate API (POST /translate, GET /languages, GET /frontend/settings), each "
        "request routed to the first folder whose language pair it asks for (luong pair). "
        "Requests that arrive together are decoded in one batch.",
    )
    parser.add_argument("models", type=Path, nargs="+", metavar="DIR", help="model folders")
    parser.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    parser.add_argument(
        "--max-batch",
        type=int,
        default=64,
        metavar="N",
        help="the most sources decoded in one batch (default 64)",
    )
    parser.add_argument(
        "--max-wait-ms",
        type=float,
        default=2.0,
        metavar="M",
        help="how long a request that finds the decoder idle waits for others to share "
        "its batch (0: no wait); under load, batches fill while the decoder works (default 2)",
    )
    parser.add_argument(
        "--max-sources",
        type=int,
        default=ServeLimits.max_sources,
        metavar="N",
        help=f"sources per request (default {ServeLimits.max_sources})",
    )
    parser.add_argument(
        "--max-beam",
        type=int,
        default=ServeLimits.max_beam,
        metavar="K",
        help=f"the widest beam a request may ask for (default {ServeLimits.max_beam})",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        metavar="N",
        help="connections served at once; more get 503 (uvicorn's limit_concurrency; a "
        f"client that sends its headers slowly holds one) (default {MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--api-keys",
        type=Path,
        metavar="FILE",
        help="the keys of the translating routes, one a line (a line starting with # is a "
        "comment): POST /translate then needs one as its api_key (403 without), POST "
        "/api/translate as the header Authorization: Bearer KEY (401 without); the explorer "
        "page itself loads without a key and asks for one before it translates; default: no "
        "key needed",
    )
    add_memory_flags(
        parser,
        "is not decoded, for every model (the files read at start for each model's language "
        'pair); POST /api/translate\'s results say their "origin" and "matches", and a '
        'request turns the memory off with "memory": false',
    )
    add_glossary_flag(
        parser,
        more="; here the default glossary of every request, which a request's glossary "
        "extends (its terms first: a source term both list takes the request's target); the "
        "models served must translate into one target language",
    )
    add_device_flags(parser, precision=True)


def add_export(commands: Any) -> None:
    parser = commands.add_parser(
        "export",
        help="write a model as ONNX graphs with a runtime that needs no torch",
        description="Export a model folder (or run folder) as ONNX: the encoder and one "
        "decoder step as two graphs (encoder.onnx, step.onnx), the vocabulary files beside "
        "them, and luong_onnx.py, a runtime (greedy and beam search in numpy over "
        "onnxruntime) that translates with them where only numpy, onnxruntime and "
        "sentencepiece are installed: python DIR/luong_onnx.py DIR --beam 5 < sources.txt. "
        "A model folder's lexical shortlist (luong shortlist) comes with it, and the runtime "
        "decodes over it by default (--shortlist 0: the full vocabulary). "
        "The export is checked against the model before it is written. Needs the packages "
        f"onnx and onnxruntime, the export extra ({install_extra('export')}).",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder or run folder")
    parser.add_argument(
        "--out",
        type=folder_to_write("export"),
        required=True,
        help="the export folder to write: a new or empty folder (written all or nothing)",
    )
    add_threads_flag(parser)
