"""The ``luong`` command: parse arguments, call the library, print. No logic of its own.

    luong train dates --out runs/dates [--seed N] [--config FILE.toml] [--attention general] ...
    luong eval runs/dates --task dates [--n 10000] [--seed N] [--json]
    luong translate runs/dates [--input FILE] < sources.txt > outputs.txt

Every error is one line on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tomllib
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]


class UsageError(Exception):
    """A command line that cannot run; reported like argparse's own usage errors."""


def _add_config_flags(parser: argparse.ArgumentParser, cls: type, title: str) -> None:
    """One ``--flag`` per field of dataclass ``cls`` (default None: "not given")."""
    from luong.distributed import DEVICES
    from luong.model import ATTENTIONS, BRIDGES, CELLS
    from luong.trainer import PRECISIONS, SCHEDULES

    choices = {
        "attention": ATTENTIONS,
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

    parser = argparse.ArgumentParser(
        prog="luong", description="Attention-based RNN sequence-to-sequence models."
    )
    parser.add_argument("--version", action="version", version=f"luong {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = commands.add_parser("train", help="train a model and write its run folder")
    train.add_argument("task", choices=TASKS, help="the task to train on")
    train.add_argument("--out", required=True, type=Path, help="the run folder to write")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its latest checkpoint (a run folder that holds "
        "a checkpoint is resumed anyway; this flag makes a missing one an error)",
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

    evaluate = commands.add_parser("eval", help="exact match and character accuracy")
    evaluate.add_argument("model", type=Path, help="a model folder")
    evaluate.add_argument("--task", choices=TASKS, required=True)
    evaluate.add_argument("--n", type=int, default=10_000, help="test pairs (default 10000)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the task's data")
    evaluate.add_argument("--locales", nargs="+", metavar="LOCALE")
    evaluate.add_argument("--batch-size", type=int, default=1000)
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")

    translate = commands.add_parser("translate", help="one source per line in, one output out")
    translate.add_argument("model", type=Path, help="a model folder")
    translate.add_argument("--input", type=Path, help="read sources from FILE (default: stdin)")
    translate.add_argument("--batch-size", type=int, default=512)
    translate.add_argument("--max-len", type=int, default=None, help="longest output")
    return parser


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


def _train(args: argparse.Namespace) -> int:
    from luong.model import Seq2SeqConfig
    from luong.tasks import load_task
    from luong.trainer import TrainConfig, config_from_dict, train

    options: dict[str, Any] = {"seed": args.data_seed}
    if args.locales:
        options["locales"] = tuple(args.locales)
    for split in ("train", "dev", "test"):
        if getattr(args, f"n_{split}") is not None:
            options[f"n_{split}"] = getattr(args, f"n_{split}")
    defaults = load_task(args.task, **options)
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
        args.task,
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
    if m["test_exact_match"] is not None:
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
    from luong.trainer import evaluate

    if args.n < 1:
        raise UsageError(f"--n: expected >= 1, got {args.n}")
    model = Seq2Seq.from_pretrained(args.model)
    options: dict[str, Any] = {"seed": args.seed, "n_train": 0, "n_dev": 0, "n_test": args.n}
    if args.locales:
        options["locales"] = tuple(args.locales)
    data = load_task(args.task, **options)
    scores = evaluate(model, data.test, batch_size=args.batch_size)
    if args.json:
        print(json.dumps({"task": args.task, "pairs": len(data.test), **scores}))
    else:
        print(
            f"exact match {scores['exact_match']:.4f}  "
            f"char accuracy {scores['char_accuracy']:.4f}  ({len(data.test)} pairs)"
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


def _translate(args: argparse.Namespace) -> int:
    from luong.model import Seq2Seq

    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    if args.max_len is not None and args.max_len < 1:
        raise UsageError(f"--max-len: expected >= 1, got {args.max_len}")
    model = Seq2Seq.from_pretrained(args.model)
    sources = _read_lines(args.input)
    outputs = model.translate(sources, batch_size=args.batch_size, max_len=args.max_len)
    sys.stdout.write("".join(out + "\n" for out in outputs))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``luong`` command; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    handlers = {"train": _train, "eval": _eval, "translate": _translate}
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
