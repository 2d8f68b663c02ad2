"""The grammar of the commands that decode with a model: ``luong eval``, ``translate``,
``po``, ``plot``, ``plot-scores``, ``serve`` and ``export``, one ``add_<command>(commands)``
each, and the flags several of them share (``--glossary``, ``--tm``, ``--placeholders``).

Plain data only, as ``luong.cli.parsers``: this module imports no torch (nor anything that
does); ``luong.cli.COMMANDS`` names each function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from luong.cli.common import (
    add_device_flags,
    add_model_arguments,
    add_search_flags,
    add_threads_flag,
    folder_to_write,
)
from luong.config.faces import (
    FORMATS,
    MAX_DPI,
    MAX_POSITIONS,
    PLACEHOLDER_MODES,
    TM_MATCHES,
    TM_THRESHOLD,
    ServeLimits,
)
from luong.config.presets import TASKS
from luong.config.search import MAX_CONSTRAINT_PIECES, MAX_PHRASE_PIECES
from luong.version import install_extra

__all__ = [
    "MAX_CONNECTIONS",
    "NOT_SCORED",
    "add_eval",
    "add_export",
    "add_plot",
    "add_plot_scores",
    "add_po",
    "add_serve",
    "add_translate",
]


# Scoring takes the best output of a search: no n-best lists, no draws (and --seed is the
# task's data seed here).
NOT_SCORED = ("nbest", "sample", "temperature", "top_k", "seed")

MAX_CONNECTIONS = 256
"""``luong serve``'s default ``--max-connections``."""


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


def input_file(text: str) -> Path | None:
    """``--input``'s value: the file it names, or None (stdin) for ``-`` as in most tools."""
    return None if text == "-" else Path(text)


def add_translate(commands: Any) -> None:
    parser = commands.add_parser("translate", help="one source per line in, one output out")
    add_model_arguments(parser)
    parser.add_argument(
        "--input", type=input_file, help="read sources from FILE (default, or -: stdin)"
    )
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
