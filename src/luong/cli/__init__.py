"""The ``luong`` command: each subcommand parses its flags, calls the library, prints.

    luong train dates|g2p --out runs/dates [--seed N] [--config FILE.toml] [--attention general] ...
    luong train --train FILE.tsv --dev FILE.tsv [--test FILE.tsv] --out DIR
        [--src-tokens char|space] [--tgt-tokens char|space] [--skip-bad-lines] [--preset g2p]
    luong eval runs/dates --task dates|g2p [--n 10000] [--seed N] [--json] [--beam 5]
    luong eval DIR --data FILE.tsv [--skip-bad-lines] [--json] [--beam 5]
    luong translate runs/dates [--input FILE] [--beam 5 --nbest 3 --alpha 0.6 --beta 0.2]
        [--format text|jsonl] [--replace-unk] < sources.txt > outputs.txt
    luong translate runs/a runs/b runs/c [--combine logprob|prob] ...   (an ensemble)
    luong average runs/dates --last 5 --out runs/dates-avg
    luong quantize runs/dates --out runs/dates-int8 [--parts output,cells,attention]
    luong plot runs/dates "Monday, March 5, 1979" --out attn.png [--beam 5]
    luong plot-scores --out scores.png [DIR ...] [--text TEXT] [--step N] [--pad N]
    luong runs runs/ [--format text|json]
    luong curves runs/a runs/b --out curves.png
    luong zoo --task dates --out docs/zoo [--seeds 3] [--steps 200] [--window 4]
    luong serve runs/dot runs/general [--host 127.0.0.1] [--port 8000] [--max-batch 64]

One module per command (``luong.cli.train``, ...); what they share is ``luong.cli.common``.
Every error is one line on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from luong.cli import average, evaluate, plot, quantize, runs, serve, train, translate, zoo
from luong.cli.common import UsageError, flag_message
from luong.search_options import OptionError
from luong.version import __version__

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each sets ``handler``, the function that runs it."""
    parser = argparse.ArgumentParser(
        prog="luong", description="Attention-based RNN sequence-to-sequence models."
    )
    parser.add_argument("--version", action="version", version=f"luong {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train.add_parser(commands)
    evaluate.add_parser(commands)
    translate.add_parser(commands)
    plot.add_parsers(commands)
    runs.add_parsers(commands)
    zoo.add_parser(commands)
    average.add_parser(commands)
    quantize.add_parser(commands)
    serve.add_parser(commands)
    for command in commands.choices.values():  # a usage error shows its command's usage line
        command.set_defaults(command_parser=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``luong`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM (kill, a scheduler) stops a command like Ctrl-C does, with a message.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        status = int(args.handler(args))
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
    except (ValueError, TypeError, OSError) as error:
        print(f"luong: error: {error}", file=sys.stderr)
        return 1
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
