"""The ``luong`` command: each subcommand parses its flags, calls the library, prints.

    luong train dates|g2p --out runs/dates [--seed N] [--config FILE.toml] [--attention general] ...
    luong train --train FILE.tsv --dev FILE.tsv [--test FILE.tsv] --out DIR
        [--src-tokens char|space] [--tgt-tokens char|space] [--skip-bad-lines] [--preset g2p]
    luong corpus [CATALOG|DIR ...] --tgt-lang de --out DIR [--split-by catalog|hash]
        [--exclude dev.tsv devtest.tsv]   (pairs from gettext catalogs; default: /usr/share/locale)
    luong prepare --train FILE.tsv[.gz|.xz] --out DIR [--subword unigram --vocab-size 8000]
        [--spm-model FILE.model] [--max-src-len N] [--workers N] [--shard-pairs N]
    luong train --data DIR --dev FILE.tsv --out RUN   (a prepared corpus, read from disk)
    luong eval runs/dates --task dates|g2p [--n 10000] [--seed N] [--json] [--beam 5]
    luong eval DIR --data FILE.tsv [--skip-bad-lines] [--json] [--beam 5]
    luong translate runs/dates [--input FILE] [--beam 5 --nbest 3 --alpha 0.6 --beta 0.2]
        [--format text|jsonl] [--replace-unk] < sources.txt > outputs.txt
    luong translate runs/a runs/b runs/c [--combine logprob|prob] ...   (an ensemble)
    luong average runs/dates --last 5 --out runs/dates-avg
    luong quantize runs/dates --out runs/dates-int8 [--parts output,cells,attention]
    luong shortlist runs/de [--train FILE.tsv] [--skip-bad-lines] [--per-source 100]
    luong plot runs/dates "Monday, March 5, 1979" --out attn.png [--beam 5]
    luong plot-scores --out scores.png [DIR ...] [--text TEXT] [--step N] [--pad N]
    luong runs runs/ [--format text|json]
    luong curves runs/a runs/b --out curves.png
    luong zoo --task dates --out docs/zoo [--seeds 3] [--steps 200] [--window 4]
    luong pair runs/translation [--src-lang en --tgt-lang de]   (a model's language pair)
    luong serve runs/dot runs/general [--host 127.0.0.1] [--port 8000] [--max-batch 64]
    luong export runs/dates --out exported/dates   (ONNX graphs and a runtime without torch)
    luong po runs/en-de messages.pot --out de.po [--retranslate-fuzzy] [--accelerator auto]

The dispatch: ``COMMANDS`` gives each command its grammar (a function of
``luong.cli.parsers``, ``luong.cli.decode_parsers`` or ``luong.cli.folder_parsers``, plain
data) and its handler, named as ``"module:function"``. The parser of every command is built
from the grammar alone, so ``luong --help`` and ``luong train --help`` import no torch; the
handler's module (``luong.cli.train``, ...) is imported
by name only when its command runs (``pkgutil.resolve_name``), after ``main`` has installed
its SIGTERM handler. A command that needs an extra (``EXTRAS``) says so in one line when the
extra is not installed. An error in what the user gave (a ``LuongError``: a flag, a file, a
model folder, a request) or from the system (an ``OSError``: a missing file, a full disk) is
one line on stderr and exit 1, never a traceback; anything else is a bug in luong (or a
library it calls): its traceback, then ``BUG`` (a line asking for a report), exit
``BUG_STATUS``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pkgutil
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from luong.cli import decode_parsers, folder_parsers, parsers
from luong.cli.common import UsageError, flag_message
from luong.common.errors import LuongError
from luong.config.search import OptionError
from luong.version import __version__, install_extra

__all__ = [
    "BUG",
    "BUG_STATUS",
    "COMMANDS",
    "EXTRAS",
    "USE_THREADS",
    "Command",
    "build_parser",
    "main",
    "missing_extra",
]

BUG = (
    "luong: this is a bug in luong, not in your input: please report it with the command and "
    "the traceback above"
)
BUG_STATUS = 70  # EX_SOFTWARE (sysexits.h): an internal error, not a usage or data error

USE_THREADS = "luong.common.devices:use_threads"
"""What sets a computing command's ``--threads`` (or its default) before the command runs:
resolved by name, as the handlers are, since it imports torch."""


class Command(NamedTuple):
    """A command: the function of the grammar's floor (``luong.cli.parsers``, ...) that adds its
    flags, the handler that runs it (``"module:function"``: a module of the commands' floor,
    imported when the command runs), and the extra it needs (a key of ``EXTRAS``; "" for
    none)."""

    grammar: Callable[[Any], None]
    handler: str
    extra: str = ""


COMMANDS: dict[str, Command] = {
    "train": Command(parsers.add_train, "luong.cli.train:main"),
    "prepare": Command(parsers.add_prepare, "luong.cli.prepare:main"),
    "corpus": Command(parsers.add_corpus, "luong.cli.corpus:main", "po"),
    "eval": Command(decode_parsers.add_eval, "luong.cli.evaluate:main"),
    "translate": Command(decode_parsers.add_translate, "luong.cli.translate:main"),
    "plot": Command(decode_parsers.add_plot, "luong.cli.plot:main_plot", "plot"),
    "plot-scores": Command(decode_parsers.add_plot_scores, "luong.cli.plot:main_scores", "plot"),
    "runs": Command(folder_parsers.add_runs, "luong.cli.runs:main_runs"),
    "curves": Command(folder_parsers.add_curves, "luong.cli.runs:main_curves", "plot"),
    "zoo": Command(parsers.add_zoo, "luong.cli.zoo:main", "plot"),
    "average": Command(folder_parsers.add_average, "luong.cli.average:main"),
    "quantize": Command(folder_parsers.add_quantize, "luong.cli.quantize:main"),
    "shortlist": Command(folder_parsers.add_shortlist, "luong.cli.shortlist:main"),
    "pair": Command(folder_parsers.add_pair, "luong.cli.pair:main"),
    "serve": Command(decode_parsers.add_serve, "luong.cli.serve:main", "serve"),
    "export": Command(decode_parsers.add_export, "luong.cli.export:main", "export"),
    "po": Command(decode_parsers.add_po, "luong.cli.po:main", "po"),
}
"""Every command of ``luong``, in the order ``luong --help`` lists them."""

EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "uvicorn"),
    "plot": ("matplotlib",),
    "export": ("onnx", "onnxruntime"),
    "po": ("polib",),
}
"""The package's extras (``pip install 'luong[NAME]'``, pyproject.toml) that commands need,
and the modules each brings."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, from the commands' grammar alone (no torch)."""
    parser = argparse.ArgumentParser(
        prog="luong", description="Attention-based RNN sequence-to-sequence models."
    )
    parser.add_argument("--version", action="version", version=f"luong {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.grammar(commands)
    for subparser in commands.choices.values():  # a usage error shows its command's usage line
        subparser.set_defaults(command_parser=subparser)
    return parser


def missing_extra(command: str) -> str | None:
    """The message for ``command`` when a module of the extra it needs is not installed;
    None when nothing is missing."""
    extra = COMMANDS[command].extra
    if extra and any(importlib.util.find_spec(module) is None for module in EXTRAS[extra]):
        return f"luong {command} needs the {extra} extra ({install_extra(extra)})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``luong`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM (kill, a scheduler) stops a command like Ctrl-C does, with a message; from here
    # on, before the command's module (and torch) is imported, which takes seconds.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        missing = missing_extra(args.command)
        if missing is not None:
            print(missing, file=sys.stderr)
            return 1
        handler = pkgutil.resolve_name(COMMANDS[args.command].handler)
        if hasattr(args, "threads"):  # a command that computes: torch is imported by now
            used = pkgutil.resolve_name(USE_THREADS)(args.threads)
            if args.threads is not None and used < args.threads:
                print(
                    f"luong: --threads {args.threads}: capped at {used}, the CPUs this "
                    "process may use (os.sched_getaffinity)",
                    file=sys.stderr,
                )
        status = int(handler(args))
        sys.stdout.flush()  # a reader that went away shows here, not at exit
        return status
    except BrokenPipeError:
        # ``luong translate ... | head -1``: stop quietly, as Unix tools do, and keep the
        # interpreter's own flush at exit from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except UsageError as error:  # as argparse's own: the command's usage line, exit 2
        getattr(args, "command_parser", parser).print_usage(sys.stderr)
        print(f"luong: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except OptionError as error:  # a decoding option the search refused: name its flag
        print(f"luong: error: {flag_message(error)}", file=sys.stderr)
        return 1
    except (LuongError, OSError) as error:  # the input (or a file, the disk): one line
        print(f"luong: error: {error}", file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001 - anything else is a bug: its traceback, to report
        traceback.print_exc()
        print(BUG, file=sys.stderr)
        return BUG_STATUS
    except KeyboardInterrupt as interrupt:
        # SIGINT, or SIGTERM (the trainer's TrainingInterrupted says which, or _terminate)
        signum = getattr(interrupt, "signum", signal.SIGINT)
        stopped = "interrupted" if signum == signal.SIGINT else "terminated (SIGTERM)"
        saved = getattr(interrupt, "checkpoint", None)
        where = f"; checkpoint written to {saved}, run the same command to resume" if saved else ""
        print(f"luong: {stopped}{where}", file=sys.stderr)
        return 128 + signum
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 1


class _Terminated(KeyboardInterrupt):
    """SIGTERM outside the training loop (whose own handler writes a checkpoint first)."""

    signum = signal.SIGTERM


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated()
