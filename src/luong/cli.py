"""The ``luong`` command: parse arguments, call the library, print. No logic of its own.

    luong train dates|g2p --out runs/dates [--seed N] [--config FILE.toml] [--attention general] ...
    luong train --train FILE.tsv --dev FILE.tsv [--test FILE.tsv] --out DIR
        [--src-tokens char|space] [--tgt-tokens char|space] [--skip-bad-lines] [--preset g2p]
    luong eval runs/dates --task dates|g2p [--n 10000] [--seed N] [--json] [--beam 5]
    luong eval DIR --data FILE.tsv [--skip-bad-lines] [--json] [--beam 5]
    luong translate runs/dates [--input FILE] [--beam 5 --nbest 3 --alpha 0.6 --beta 0.2]
        [--format text|jsonl] [--replace-unk] < sources.txt > outputs.txt
    luong plot runs/dates "Monday, March 5, 1979" --out attn.png [--beam 5]
    luong plot-scores --out scores.png [DIR ...] [--text TEXT] [--step N] [--pad N]
    luong zoo --task dates --out docs/zoo [--seeds 3] [--steps 200] [--window 4]

Every error is one line on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tomllib
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from luong.model import Seq2Seq
    from luong.tasks import TaskData

__all__ = ["main"]


class UsageError(Exception):
    """A command line that cannot run; reported like argparse's own usage errors."""


def _add_config_flags(parser: argparse.ArgumentParser, cls: type, title: str) -> None:
    """One ``--flag`` per field of dataclass ``cls`` (default None: "not given")."""
    from luong.distributed import DEVICES
    from luong.model import ATTENTIONS, BRIDGES, CELLS, LOCALS
    from luong.trainer import PRECISIONS, SCHEDULES

    choices = {
        "attention": ATTENTIONS,
        "local": LOCALS,
        "cell": CELLS,
        "bridge": BRIDGES,
        "schedule": SCHEDULES,
        "device": DEVICES,
        "precision": PRECISIONS,
    }
    group = parser.add_argument_group(title)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        kind = hints[f.name]
        help_text = f"(default: {f.default})"
        if kind is bool:
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        else:
            group.add_argument(
                flag,
                type=kind,
                default=None,
                choices=choices.get(f.name),
                metavar=None if f.name in choices else f.name.upper(),
                help=help_text,
            )


def _build_parser() -> argparse.ArgumentParser:
    from luong import __version__
    from luong.model import Seq2SeqConfig
    from luong.tasks import TASKS
    from luong.trainer import TrainConfig
    from luong.vocab import TOKENS

    parser = argparse.ArgumentParser(
        prog="luong", description="Attention-based RNN sequence-to-sequence models."
    )
    parser.add_argument("--version", action="version", version=f"luong {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = commands.add_parser("train", help="train a model and write its run folder")
    train.add_argument(
        "task", nargs="?", choices=TASKS, help="a built-in task (or your own data: --train, --dev)"
    )
    train.add_argument("--out", required=True, type=Path, help="the run folder to write")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its latest checkpoint (a run folder that holds "
        "a checkpoint is resumed anyway; this flag makes a missing one an error)",
    )
    own = train.add_argument_group("your own data, one source<TAB>target pair a line")
    own.add_argument("--train", dest="train_file", type=Path, metavar="FILE.tsv")
    own.add_argument("--dev", dest="dev_file", type=Path, metavar="FILE.tsv")
    own.add_argument("--test", dest="test_file", type=Path, metavar="FILE.tsv")
    own.add_argument("--src-tokens", choices=TOKENS, help="source tokens (default: char)")
    own.add_argument("--tgt-tokens", choices=TOKENS, help="target tokens (default: char)")
    own.add_argument(
        "--skip-bad-lines", action="store_true", help="skip bad lines (counted on stderr)"
    )
    own.add_argument(
        "--preset", choices=TASKS, help="start from a built-in task's model and training defaults"
    )
    train.add_argument("--config", type=Path, help="a TOML file with [model] and [train] tables")
    train.add_argument(
        "--locales", nargs="+", metavar="LOCALE", help="dates: babel locales (default: en_US)"
    )
    train.add_argument("--data-seed", type=int, default=0, help="seed of the task's data")
    for split, size in (("train", 20_000), ("dev", 1_000), ("test", 10_000)):
        train.add_argument(
            f"--n-{split}", type=int, metavar="N", help=f"dates: {split} pairs (default {size})"
        )
    _add_config_flags(train, Seq2SeqConfig, "model (overrides --config)")
    _add_config_flags(train, TrainConfig, "training (overrides --config)")

    evaluate = commands.add_parser("eval", help="score a model on a task's test set or a file")
    evaluate.add_argument("model", type=Path, help="a model folder")
    evaluate.add_argument("--task", choices=TASKS, help="a built-in task's test set")
    evaluate.add_argument("--data", type=Path, metavar="FILE.tsv", help="source<TAB>target pairs")
    evaluate.add_argument("--skip-bad-lines", action="store_true", help="skip bad lines of --data")
    evaluate.add_argument("--n", type=int, help="dates: test pairs (default 10000)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the task's data")
    evaluate.add_argument("--locales", nargs="+", metavar="LOCALE")
    evaluate.add_argument("--batch-size", type=int, default=1000)
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    _add_search_flags(evaluate)

    translate = commands.add_parser("translate", help="one source per line in, one output out")
    translate.add_argument("model", type=Path, help="a model folder")
    translate.add_argument("--input", type=Path, help="read sources from FILE (default: stdin)")
    translate.add_argument("--batch-size", type=int, default=512)
    translate.add_argument("--max-len", type=int, default=None, help="longest output")
    translate.add_argument(
        "--max-src-len",
        type=int,
        metavar="N",
        help="the longest source line, in symbols (default: the model's max_src_len); a "
        "longer line is an error, unless --truncate",
    )
    translate.add_argument(
        "--truncate",
        action="store_true",
        help="cut lines longer than the maximum source length, with a warning on stderr",
    )
    _add_search_flags(translate)
    translate.add_argument(
        "--nbest",
        type=int,
        default=1,
        metavar="N",
        help="outputs per input, at most --beam: "
        "tab-separated in text, a list in jsonl (default 1)",
    )
    translate.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="text: the outputs, one "
        'line per input; jsonl: one object per input, {"source", "hypotheses": [{"text", '
        '"score", "tokens", "attention"}]}, tokens as output symbols (EOS included), '
        "attention [T][S] over the source symbols and its EOS; numbers rounded to 6 decimals "
        "(default text)",
    )
    translate.add_argument(
        "--replace-unk",
        action="store_true",
        help="replace each <unk> in an output by the "
        "source token it attended to most (Luong et al. 2015, the rare word problem)",
    )

    plot = commands.add_parser(
        "plot",
        help="heatmap of the attention of one translation",
        description="Decode one input and draw its attention matrix: source symbols across, "
        "output symbols down, a colour bar (PNG, no display needed).",
    )
    plot.add_argument("model", type=Path, help="a model folder")
    plot.add_argument("text", help='the input, e.g. "Monday, March 5, 1979"')
    plot.add_argument("--out", type=Path, required=True, help="the PNG to write")
    _add_search_flags(plot)
    plot.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")

    scores = commands.add_parser(
        "plot-scores",
        help="dot, general and concat attention weights side by side",
        description="Bar charts of attention weights over the source positions, one per "
        "score, padded positions shaded. Without DIR: freshly initialised dot, general and "
        "concat attentions on one random input (keys and query from --seed). With DIR...: "
        "one trained model per chart (e.g. one trained with each --attention), their "
        "attention at output step --step of their greedy output for --text.",
    )
    scores.add_argument("models", nargs="*", type=Path, metavar="DIR", help="model folders")
    scores.add_argument("--out", type=Path, required=True, help="the PNG to write")
    scores.add_argument(
        "--text",
        default="Monday, March 5, 1979",
        help='trained models: the input (default "Monday, March 5, 1979")',
    )
    scores.add_argument(
        "--step", type=int, default=0, help="trained models: the output step (default 0)"
    )
    scores.add_argument(
        "--pad", type=int, default=2, help="padded positions after the input (default 2)"
    )
    scores.add_argument(
        "--length", type=int, default=8, help="fresh: positions, padding included (default 8)"
    )
    scores.add_argument("--seed", type=int, default=0, help="fresh: the seed (default 0)")
    scores.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")

    zoo = commands.add_parser(
        "zoo",
        help="train every attention of Luong et al. (2015) with one budget: a table, a figure",
        description="Train global attention (location, dot, scaled_dot, general, concat), "
        "local-m and local-p (dot, general) and Bahdanau's, each with and without input "
        "feeding, with the same steps, data and seeds; write OUT/TASK.md (the table, the "
        "command) and OUT/TASK.png. The runs are kept in OUT/TASK.json: the same command "
        "continues a zoo that was stopped.",
    )
    zoo.add_argument(
        "--task", choices=("dates", "g2p"), default="dates", help="the task (default dates)"
    )
    zoo.add_argument("--out", type=Path, required=True, help="the folder to write")
    zoo.add_argument("--seeds", type=int, default=3, help="seeds per variant (default 3)")
    zoo.add_argument("--steps", type=int, default=200, help="optimizer steps per run (default 200)")
    zoo.add_argument("--window", type=int, default=4, help="local attention's D (default 4)")
    zoo.add_argument("--n-test", type=int, default=2000, help="test pairs (default 2000)")
    return parser


def _add_search_flags(parser: argparse.ArgumentParser) -> None:
    """--beam, --alpha, --beta (luong.search.beam_search)."""
    parser.add_argument(
        "--beam", type=int, default=1, metavar="K", help="beam size (default 1: greedy search)"
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.0,
        help="length penalty weight, lp = ((5 + |Y|) / 6) ** alpha (default 0)",
    )
    parser.add_argument(
        "--beta",
        type=float,
        default=0.0,
        help="coverage penalty weight, beta * sum_s log(min(sum_t a_ts, 1)) (default 0)",
    )


def _check_search_flags(args: argparse.Namespace) -> None:
    if args.beam < 1:
        raise UsageError(f"--beam: expected >= 1, got {args.beam}")
    for name in ("alpha", "beta"):
        value = getattr(args, name)
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"--{name}: expected a finite number >= 0, got {value}")


def _overrides(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    return {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, f.name) is not None
    }


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--config: {path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    unknown = sorted(set(data) - {"model", "train"})
    if unknown:
        raise ValueError(f"{path}: unknown tables {unknown}; expected [model] and [train]")
    return data


_OWN_DATA_FLAGS = (
    ("dev_file", "--dev"),
    ("test_file", "--test"),
    ("src_tokens", "--src-tokens"),
    ("tgt_tokens", "--tgt-tokens"),
    ("skip_bad_lines", "--skip-bad-lines"),
    ("preset", "--preset"),
)
_DATES_FLAGS = (
    ("locales", "--locales"),
    ("n_train", "--n-train"),
    ("n_dev", "--n-dev"),
    ("n_test", "--n-test"),
)


def _given(args: argparse.Namespace, flags: tuple[tuple[str, str], ...]) -> list[str]:
    return [flag for dest, flag in flags if getattr(args, dest) not in (None, False)]


def _report_skipped(info: dict[str, Any]) -> None:
    for name, count in info.get("skipped_lines", {}).items():
        print(f"luong: skipped {count} bad line{'s' * (count != 1)} in {name}", file=sys.stderr)


def _train_data(args: argparse.Namespace) -> tuple[str, dict[str, Any], TaskData]:
    """The task name, its options (recorded in the run folder) and its data."""
    from luong.tasks import OWN_DATA, load_task, task_configs

    if (args.task is None) == (args.train_file is None):
        got = "both" if args.task is not None else "neither"
        raise UsageError(
            "expected a task (dates, g2p) or your own data (--train FILE.tsv --dev FILE.tsv), "
            f"got {got}"
        )
    if args.task is not None:
        if _given(args, _OWN_DATA_FLAGS):
            raise UsageError(f"{', '.join(_given(args, _OWN_DATA_FLAGS))}: only with --train")
        options: dict[str, Any] = {"seed": args.data_seed}
        if args.task == "dates":
            if args.locales:
                options["locales"] = tuple(args.locales)
            for split in ("train", "dev", "test"):
                if getattr(args, f"n_{split}") is not None:
                    options[f"n_{split}"] = getattr(args, f"n_{split}")
        elif _given(args, _DATES_FLAGS):
            raise UsageError(f"{', '.join(_given(args, _DATES_FLAGS))}: only for the dates task")
        return args.task, options, load_task(args.task, **options)
    if args.dev_file is None:
        raise UsageError("--train needs --dev FILE.tsv: the pairs that pick the best weights")
    if _given(args, _DATES_FLAGS):
        raise UsageError(f"{', '.join(_given(args, _DATES_FLAGS))}: only for the dates task")
    options = {
        "train": str(args.train_file),
        "dev": str(args.dev_file),
        "src_tokens": args.src_tokens or "char",
        "tgt_tokens": args.tgt_tokens or "char",
        "skip_bad_lines": args.skip_bad_lines,
    }
    if args.test_file is not None:
        options["test"] = str(args.test_file)
    data = load_task(OWN_DATA, **options)
    _report_skipped(data.info)
    if args.preset:
        model_config, train_config = task_configs(args.preset)
        data = dataclasses.replace(data, model_config=model_config, train_config=train_config)
    return OWN_DATA, options, data


def _train(args: argparse.Namespace) -> int:
    from luong.model import Seq2SeqConfig
    from luong.trainer import TrainConfig, config_from_dict, train

    task, options, defaults = _train_data(args)
    from_file = _read_toml(args.config) if args.config else {}
    model_fields = {
        **dataclasses.asdict(defaults.model_config),
        **from_file.get("model", {}),
        **_overrides(args, Seq2SeqConfig),
    }
    train_fields = {
        **dataclasses.asdict(defaults.train_config),
        **from_file.get("train", {}),
        **_overrides(args, TrainConfig),
    }
    model_config = config_from_dict(Seq2SeqConfig, model_fields, "[model]")
    train_config = config_from_dict(TrainConfig, train_fields, "[train]")
    result = train(
        task,
        args.out,
        model_config=model_config,
        train_config=train_config,
        task_options=options,
        data=defaults,
        resume=args.resume,
    )
    if not result.main:
        return 0  # under torchrun, rank 0 alone reports
    m = result.metrics
    if "test_wer" in m:
        print(
            f"test WER {m['test_wer']:.2%}  PER {m['test_per']:.2%}  "
            f"(exact match {m['test_exact_match']:.4f} against any reference; "
            f"{m['test_sources']} sources, {m['test_pairs']} pairs)"
        )
        if m["test_unknown_tokens"]:
            print(
                f"test: {m['test_unknown_tokens']} unknown source symbols mapped to unk "
                f"in {m['test_sources_with_unknown']} sources"
            )
    elif m["test_exact_match"] is not None:
        print(
            f"test exact match {m['test_exact_match']:.4f}  char accuracy "
            f"{m['test_char_accuracy']:.4f}  ({m['test_pairs']} pairs)"
        )
    reached = m["seconds_to_dev_0.99"]
    print(
        f"dev exact match {m['dev_exact_match']:.4f}; trained {m['steps']} steps in "
        f"{m['train_seconds']:.1f} s"
        + (f"; dev >= 0.99 after {reached:.1f} s" if reached is not None else "")
    )
    print(f"model and metrics.json written to {args.out}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from luong.model import Seq2Seq
    from luong.tasks import load_task
    from luong.tasks.tsv import evaluate_references, read_pairs
    from luong.trainer import evaluate

    if (args.task is None) == (args.data is None):
        got = "both" if args.task is not None else "neither"
        raise UsageError(f"expected --task TASK or --data FILE.tsv, got {got}")
    if args.task != "dates" and (args.n is not None or args.locales):
        raise UsageError("--n, --locales: only with --task dates")
    if args.skip_bad_lines and args.data is None:
        raise UsageError("--skip-bad-lines: only with --data")
    if args.n is not None and args.n < 1:
        raise UsageError(f"--n: expected >= 1, got {args.n}")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    _check_search_flags(args)
    search = {"beam_size": args.beam, "alpha": args.alpha, "beta": args.beta}
    if args.task == "dates":
        n = args.n if args.n is not None else 10_000
        options: dict[str, Any] = {"seed": args.seed, "n_train": 0, "n_dev": 0, "n_test": n}
        if args.locales:
            options["locales"] = tuple(args.locales)
        data = load_task(args.task, **options)
        model = Seq2Seq.from_pretrained(args.model)
        scores = evaluate(model, data.test, batch_size=args.batch_size, **search)
        if args.json:
            print(json.dumps({"task": args.task, "pairs": len(data.test), **scores}))
        else:
            print(
                f"exact match {scores['exact_match']:.4f}  "
                f"char accuracy {scores['char_accuracy']:.4f}  ({len(data.test)} pairs)"
            )
        return 0
    # Several references per source: each unique source is scored once.
    if args.data is not None:
        read = read_pairs(args.data, skip_bad_lines=args.skip_bad_lines)
        if read.skipped:
            _report_skipped({"skipped_lines": {read.name: len(read.skipped)}})
        pairs, what = read.pairs, {"data": str(args.data), "skipped_lines": len(read.skipped)}
    else:
        pairs, what = load_task(args.task, seed=args.seed).test, {"task": args.task}
    model = Seq2Seq.from_pretrained(args.model)
    ref_scores = evaluate_references(model, pairs, batch_size=args.batch_size, **search)
    if args.json:
        print(json.dumps({**what, **ref_scores}))
    else:
        unknown = ref_scores["unknown_tokens"]
        print(
            f"WER {ref_scores['wer']:.2%}  PER {ref_scores['per']:.2%}  exact match "
            f"{ref_scores['exact_match']:.4f} against any reference  "
            f"({ref_scores['sources']} sources, {ref_scores['pairs']} pairs"
            + (
                f"; {unknown} unknown source symbols mapped to unk in "
                f"{ref_scores['sources_with_unknown']} sources)"
                if unknown
                else ")"
            )
        )
    return 0


def _read_lines(path: Path | None) -> list[str]:
    """Lines of ``path`` (stdin when None), line endings removed; invalid UTF-8 names the
    file and line."""
    name = str(path) if path is not None else "<stdin>"
    try:
        raw = path.read_bytes() if path is not None else sys.stdin.buffer.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a directory, expected a text file") from None
    lines = []
    for number, line in enumerate(raw.splitlines(), start=1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{name}:{number}: not valid UTF-8 ({error.reason})") from None
    return lines


def _fit_sources(model: Seq2Seq, sources: list[str], args: argparse.Namespace) -> list[str]:
    """Check line lengths against the maximum source length (reject, or cut with
    --truncate) and report unknown symbols on stderr; one source per line, in order."""
    name = str(args.input) if args.input is not None else "<stdin>"
    limit = model.config.max_src_len if args.max_src_len is None else args.max_src_len
    if limit < 1:
        raise UsageError(f"--max-src-len: expected >= 1, got {limit}")
    if model.config.attention == "location" and limit > model.config.max_src_len:
        raise UsageError(
            f"--max-src-len: a location-score model reads at most {model.config.max_src_len} "
            f"symbols, got {limit}"
        )
    too_long = [i for i, text in enumerate(sources) if model.source_length(text) > limit]
    if too_long and not args.truncate:
        first = too_long[0]
        raise ValueError(
            f"{name}:{first + 1}: {model.source_length(sources[first])} symbols, above the "
            f"maximum source length {limit} ({len(too_long)} such lines); pass --truncate to "
            "cut them, or --max-src-len"
        )
    if too_long:
        cut = set(too_long)
        sources = [
            model.truncate_source(text, limit) if i in cut else text
            for i, text in enumerate(sources)
        ]
        print(
            f"luong: warning: {len(too_long)} lines cut to {limit} symbols (first: line "
            f"{too_long[0] + 1})",
            file=sys.stderr,
        )
    unknown = [len(model.src_vocab.unknown(text)) for text in sources]
    if sum(unknown):
        lines = sum(1 for n in unknown if n)
        print(
            f"luong: {sum(unknown)} unknown source symbols in {lines} lines were read as "
            f"{model.src_vocab.UNK}",
            file=sys.stderr,
        )
    return sources


def _translate(args: argparse.Namespace) -> int:
    from luong.model import Seq2Seq
    from luong.search import decode, hypothesis_symbols, hypothesis_text

    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    if args.max_len is not None and args.max_len < 1:
        raise UsageError(f"--max-len: expected >= 1, got {args.max_len}")
    _check_search_flags(args)
    if not 1 <= args.nbest <= args.beam:
        raise UsageError(f"--nbest: expected between 1 and --beam ({args.beam}), got {args.nbest}")
    model = Seq2Seq.from_pretrained(args.model)
    sources = _fit_sources(model, _read_lines(args.input), args)
    lists = decode(
        model,
        sources,
        beam_size=args.beam,
        n_best=args.nbest,
        alpha=args.alpha,
        beta=args.beta,
        batch_size=args.batch_size,
        max_len=args.max_len,
    )
    lines = []
    for source, hyps in zip(sources, lists, strict=True):
        copy_from = source if args.replace_unk else None
        if args.format == "text":
            lines.append("\t".join(hypothesis_text(model, h, copy_from) for h in hyps))
            continue
        entry = {
            "source": source,
            "hypotheses": [
                {
                    "text": hypothesis_text(model, h, copy_from),
                    "score": round(h.score, 6),
                    "tokens": hypothesis_symbols(model, h, copy_from),
                    "attention": [[round(w, 6) for w in row] for row in h.attention.tolist()],
                }
                for h in hyps
            ],
        }
        lines.append(json.dumps(entry, ensure_ascii=False))
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from luong.model import Seq2Seq
    from luong.plot import plot_translation
    from luong.search import hypothesis_text

    _check_search_flags(args)
    if args.dpi < 1:
        raise UsageError(f"--dpi: expected >= 1, got {args.dpi}")
    if not args.text.strip():
        raise UsageError("text: expected a non-empty input")
    model = Seq2Seq.from_pretrained(args.model)
    best = plot_translation(
        model,
        args.text,
        args.out,
        beam_size=args.beam,
        alpha=args.alpha,
        beta=args.beta,
        dpi=args.dpi,
    )
    print(f"{args.text} -> {hypothesis_text(model, best)}; attention written to {args.out}")
    return 0


def _plot_scores(args: argparse.Namespace) -> int:
    from luong.model import Seq2Seq
    from luong.plot import fresh_score_panels, model_score_panel, plot_scores

    for name in ("step", "pad"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name}: expected >= 0, got {getattr(args, name)}")
    if args.dpi < 1:
        raise UsageError(f"--dpi: expected >= 1, got {args.dpi}")
    if args.models:
        if not args.text.strip():
            raise UsageError("--text: expected a non-empty input")
        panels = []
        for folder in args.models:
            model = Seq2Seq.from_pretrained(folder)
            name = f"{model.config.attention} ({folder.name})"
            panels.append(model_score_panel(model, args.text, args.step, args.pad, name))
        title = f"attention at output step {args.step} for {args.text!r}"
    else:
        if not 0 <= args.pad < args.length:
            raise UsageError(
                f"--pad: expected 0 <= --pad < --length ({args.length}), got {args.pad}"
            )
        panels = fresh_score_panels(args.length, args.pad, seed=args.seed)
        title = f"freshly initialised attentions, one random input (seed {args.seed})"
    plot_scores(panels, args.out, title=title, dpi=args.dpi)
    print(f"{len(panels)} chart{'' if len(panels) == 1 else 's'} written to {args.out}")
    return 0


def _zoo(args: argparse.Namespace) -> int:
    from luong.zoo import ZooSettings, run_zoo, write_report

    settings = ZooSettings(
        task=args.task,
        steps=args.steps,
        seeds=args.seeds,
        window=args.window,
        n_test=args.n_test,
    )
    command = (
        f"luong zoo --task {args.task} --seeds {args.seeds} --steps {args.steps} "
        f"--window {args.window} --n-test {args.n_test} --out {args.out}"
    )
    runs = run_zoo(
        settings,
        results=args.out / f"{args.task}.json",
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    md, png = write_report(runs, settings, args.out, command=command)
    print(f"{len(runs)} runs; table written to {md}, figure to {png}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``luong`` command; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    handlers = {
        "train": _train,
        "eval": _eval,
        "translate": _translate,
        "plot": _plot,
        "plot-scores": _plot_scores,
        "zoo": _zoo,
    }
    try:
        return handlers[args.command](args)
    except UsageError as error:
        parser.error(str(error))  # exits with status 2
    except (ValueError, TypeError, OSError) as error:
        print(f"luong: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupt:
        saved = getattr(interrupt, "checkpoint", None)
        where = f"; checkpoint written to {saved}, run the same command to resume" if saved else ""
        print(f"luong: interrupted{where}", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
