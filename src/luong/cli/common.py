"""What the commands share: usage errors, flags made from config fields, the search flags
made from ``SearchOptions``' fields, input lines, messages on stderr.

Plain: it imports no torch (nor tqdm), since the command line's grammar
(``luong.cli.parsers``) is built from it before any command runs."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from luong.common.files import read_text_lines, text_lines
from luong.config.choices import DEVICES, PRECISIONS, device_form
from luong.config.decoding import decoding_defaults, with_defaults
from luong.config.request import RequestOptions
from luong.config.search import OptionError, SearchOptions, option_specs
from luong.config.train import SEARCH_FIELDS

__all__ = [
    "UsageError",
    "add_config_flags",
    "add_device_flags",
    "device_name",
    "device_options",
    "add_model_arguments",
    "add_search_flags",
    "add_threads_flag",
    "check_memory_flags",
    "flag_message",
    "flush_stdout",
    "folder_to_write",
    "log_to_stderr",
    "model_defaults",
    "model_folders",
    "overrides",
    "read_lines",
    "request_options",
    "say",
    "search_given",
    "search_options",
    "stdin",
    "thread_count",
    "write_line",
]


class UsageError(Exception):
    """A command line that cannot run; reported like argparse's own usage errors."""


def folder_to_write(command: str) -> typing.Callable[[str], Path]:
    """The argparse ``type`` of ``--out`` for ``command``, which writes a folder all or
    nothing (``luong.common.files.write_folder``: built beside it, then renamed into its place): a
    path that names a folder of its own, not ``''``, ``.``, ``..`` or ``/`` (it was a
    traceback, ``PosixPath('.') has an empty name``)."""

    def folder(value: str) -> Path:
        path = Path(value)
        if path.name in ("", ".."):
            raise argparse.ArgumentTypeError(
                f"expected a folder of its own to write (such as out/{command}), got {value!r}: "
                "the folder is written beside its place and renamed into it"
            )
        return path

    return folder


class _StderrHandler(logging.Handler):
    """Records as ``luong: message`` lines on stderr, written around the progress bar
    (``tqdm.write``) so that the bar is not torn."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm.auto import tqdm  # here: the grammar imports this module, no tqdm

            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # a logging handler never raises (logging's own rule)
            self.handleError(record)


def log_to_stderr(quiet: bool = False, verbose: bool = False) -> None:
    """Show the "luong" logger on stderr: INFO and above, warnings only (``quiet``), or
    DEBUG too (``verbose``: the training records of every logging interval). A run's
    ``train.log`` gets INFO (DEBUG with ``verbose``) either way."""
    logger = logging.getLogger("luong")
    for handler in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(handler)  # main() run again in one process (tests)
    handler = _StderrHandler(logging.WARNING if quiet else logging.NOTSET)
    handler.setFormatter(logging.Formatter("luong: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False  # not twice, through a root handler as well


def say(message: str) -> None:
    """A message of the library's on stderr, as ``luong: message``, flushed."""
    print(f"luong: {message}", file=sys.stderr, flush=True)


def add_config_flags(
    parser: argparse.ArgumentParser,
    cls: type,
    title: str,
    defaults: object | None = None,
    shown: str | None = None,
) -> None:
    """One ``--flag`` per field of the config dataclass ``cls`` (``luong.config``), with the
    field's help text and choices (``luong.config.fields.setting``) and, as the default it shows,
    the field's value in ``defaults`` (a ``cls``; default ``cls()``: a task's or preset's
    settings, ``luong train --preset P --help``), or the text ``shown`` for every flag (a
    fine-tuning preset's model settings: "its own"). The flag's own default is None ("not
    given"): ``overrides`` reads what was typed."""
    group = parser.add_argument_group(title)
    values = defaults if defaults is not None else cls()
    for f, kind, spec in option_specs(cls):
        default = shown if shown is not None else getattr(values, f.name)
        if kind is bool:
            on = default if shown is not None else "on" if default else "off"
            group.add_argument(
                flag(f.name),
                action=argparse.BooleanOptionalAction,
                default=None,
                help=f"{spec.help} (default: {on})",
            )
        else:
            group.add_argument(
                flag(f.name),
                type=device_name if f.name == "device" else kind,
                default=None,
                choices=spec.choices,
                metavar=None if spec.choices else spec.metavar or f.name.upper(),
                help=f"{spec.help} (default: {default})",
            )


def device_name(value: str) -> str:
    """argparse's type of ``--device``: the name, when it has one of the forms of
    ``DEVICES`` (whether this machine has that device is checked before a model loads:
    ``luong.common.devices.resolve_device``)."""
    try:
        device_form(value, "--device")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--device: ")) from None
    return value


def thread_count(value: str) -> int:
    """``--threads``' value: a positive integer (0 or less is a usage error, exit 2)."""
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return count


def add_threads_flag(parser: argparse.ArgumentParser) -> None:
    """``--threads N``, for a command that computes (``luong.cli.main`` applies it through
    ``luong.common.devices.use_threads`` before the command runs)."""
    parser.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        metavar="N",
        help="CPU threads to compute on (default: $OMP_NUM_THREADS, else 1: on a shared "
        "machine a second thread can make a step many times slower; on a quiet one, "
        "--threads 2 trains the translation preset about 1.7x faster; docs/performance.md)",
    )


def add_device_flags(parser: argparse.ArgumentParser, precision: bool = False) -> None:
    """``--device`` (default auto), with ``precision`` ``--precision`` (default fp32), and
    ``--threads``, for a command that loads models."""
    parser.add_argument(
        "--device",
        type=device_name,
        default="auto",
        metavar="DEVICE",
        help=f"where the models run: {', '.join(DEVICES)} (N a CUDA device's index); auto: "
        "CUDA when present, else the CPU (default auto)",
    )
    if precision:
        parser.add_argument(
            "--precision",
            choices=PRECISIONS,
            default="fp32",
            help="fp32; bf16 or fp16: the search under autocast in bfloat16 or float16 "
            "(fp16 on CUDA only) (default fp32)",
        )
    add_threads_flag(parser)


def overrides(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of dataclass ``cls`` given as flags (``add_config_flags``)."""
    return {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, f.name) is not None
    }


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model folders (several: an ensemble, ``luong.model.ensemble``)."""
    parser.add_argument(
        "model",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="a model folder; several decode as an ensemble (the same target vocabulary)",
    )


SEARCH_DEST = "search_"  # the search flags' attributes: args.search_beam, ...


def flag(name: str) -> str:
    """The command-line flag of a field: ``top_k`` -> ``--top-k``."""
    return "--" + name.replace("_", "-")


def add_search_flags(
    parser: argparse.ArgumentParser,
    exclude: tuple[str, ...] = (),
    cls: type[SearchOptions] = SearchOptions,
) -> None:
    """A flag per field of ``cls`` (``SearchOptions`` or a subclass) but those in
    ``exclude``, made from the field: its name (``--top-k``), its type, its choices, its
    help text and its default. A flag not given is None ("not given": the field's default),
    so ``search_options`` builds the options from what the user typed. A field added to
    ``SearchOptions`` is a flag of every command that decodes."""
    group = parser.add_argument_group(
        "decoding (luong.config.search.SearchOptions)",
        "A flag not given takes the model's decoding default: how its training decoded its "
        "test split (config.toml's test_beam, test_alpha, max_decode_len: beam 5 with the "
        "translation preset), else the default shown; --sample takes none of the model's "
        "beam, alpha and beta.",
    )
    for f, kind, spec in option_specs(cls):
        if f.name in exclude:
            continue
        unset = f.default is None or f.default is False or f.default == ""
        shown = "" if unset else f" (default {f.default})"
        if f.name in SEARCH_FIELDS:
            shown = (
                " (or the model's, where it sets one)"
                if unset
                else f" (default: the model's, else {f.default})"
            )
        dest = SEARCH_DEST + f.name  # apart from a command's own flags (eval's data --seed)
        if kind is bool:
            group.add_argument(
                flag(f.name), dest=dest, action="store_true", default=None, help=spec.help
            )
            continue
        base = next((t for t in typing.get_args(kind) if t is not type(None)), kind)
        group.add_argument(
            flag(f.name),
            dest=dest,
            type=base,
            default=None,
            choices=spec.choices,
            metavar=(spec.metavar or f.name.upper()) if spec.choices is None else None,
            help=spec.help + shown,
        )


def flag_message(error: OptionError) -> str:
    """An option's error as the command line says it: ``--top-k: only with sample``."""
    return f"{flag(error.name)}: {error.detail}"


def search_given(
    args: argparse.Namespace, cls: type[SearchOptions] = SearchOptions
) -> dict[str, Any]:
    """The search flags typed (``add_search_flags``): field name -> value. What a command
    decodes with is these and the model's decoding defaults for the rest
    (``Translator.options``)."""
    return {
        f.name: getattr(args, SEARCH_DEST + f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, SEARCH_DEST + f.name, None) is not None
    }


def search_options(
    args: argparse.Namespace,
    cls: type[SearchOptions] = SearchOptions,
    defaults: SearchOptions | None = None,
) -> SearchOptions:
    """The ``cls`` the search flags of ``args`` give (``add_search_flags``), the model's
    decoding defaults ``defaults`` (``model_defaults``; None: greedy search) for the rest
    (``luong.config.decoding.with_defaults``, as ``Translator.options`` does), checked: a
    bad value is a usage error naming its flag, before any model is loaded."""
    try:
        return with_defaults(search_given(args, cls), defaults or SearchOptions(), cls)
    except OptionError as error:
        raise UsageError(flag_message(error)) from None


def model_defaults(folders: Sequence[Path]) -> SearchOptions:
    """The decoding defaults of a command's models (the first folder's, as the loader takes
    an ensemble's): read before the model loads, so that a bad combination of flags is a
    usage error at once."""
    return decoding_defaults(folders[0])


def model_folders(folders: list[Path]) -> Path | list[Path]:
    """What the loader (``luong.load``) takes for a command's model folders: one folder
    alone (a model), several as a list (an ensemble)."""
    return folders[0] if len(folders) == 1 else folders


def device_options(args: argparse.Namespace) -> dict[str, Any]:
    """What the loader (``luong.load``) takes of ``--device`` and ``--precision``, with the
    flags' names for its messages (``--device cuda: no CUDA device here ...``)."""
    return {
        "device": args.device,
        "precision": getattr(args, "precision", "fp32"),
        "names": ("--device", "--precision"),
    }


def request_options(args: argparse.Namespace, **given: Any) -> RequestOptions:
    """The ``RequestOptions`` a command's flags give: each field from the flag of its name
    where the command has one (``--placeholders``, ``--align``), else ``given``, else its
    default; a bad combination is a usage error naming its flag."""
    fields = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(RequestOptions)
        if getattr(args, f.name, None) is not None
    }
    try:
        return RequestOptions(**{**given, **fields})
    except OptionError as error:
        raise UsageError(flag_message(error)) from None


def check_memory_flags(args: argparse.Namespace) -> None:
    """Refuse a ``--tm-threshold`` outside (0, 100] (NaN too) before anything is loaded."""
    if not 0.0 < args.tm_threshold <= 100.0:
        raise UsageError(f"--tm-threshold: expected a number in (0, 100], got {args.tm_threshold}")


def read_lines(path: Path | None) -> list[str]:
    """The sources in ``path`` (stdin when None), line endings removed (``luong.common.files``'
    rule); invalid UTF-8 and a NUL byte (binary data) name the file and line."""
    if path is None:
        return list(text_lines(stdin(), "<stdin>", allow_nul=False))
    return read_text_lines(path, allow_nul=False)


def stdin() -> BinaryIO:
    """The standard input's bytes; a closed one (``luong translate DIR <&-``) is an error
    that says where else the sources can come from."""
    if sys.stdin is None:
        raise UsageError("<stdin>: closed; give the sources on stdin or with --input FILE")
    return sys.stdin.buffer


def write_line(line: str) -> None:
    """``line`` and a newline on stdout; a failed write (a full disk, a file too large)
    names the output, which the error of ``write`` does not."""
    try:
        sys.stdout.write(line + "\n")
    except BrokenPipeError:
        raise  # the reader went away: the command stops quietly (luong.cli.main)
    except OSError as error:
        raise OSError(error.errno, f"<stdout>: {error.strerror or error}") from None


def flush_stdout() -> None:
    """Flush stdout, a failed write named as ``write_line`` names it."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OSError(error.errno, f"<stdout>: {error.strerror or error}") from None
