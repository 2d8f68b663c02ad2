"""``luong po``: a gettext catalog's untranslated entries filled by a model, for review."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from luong.catalog import check_language, fill_catalog, translate_messages
from luong.cli.common import UsageError, device_options, model_folders, say, search_options
from luong.errors import LuongError
from luong.files import read_bounded, write_text
from luong.translator import Translator, load

__all__ = ["main"]

MAX_CATALOG_BYTES = 64 * 2**20  # the largest catalogs (glibc's, KDE's) are a few MB


def _target(translator: Translator, given: str | None) -> str:
    """The target language: the model's own (``Translator.tgt_lang``), which --tgt-lang may
    repeat but not contradict, or --tgt-lang where the model records none."""
    recorded = translator.tgt_lang
    if recorded is None and given is None:
        raise UsageError(
            "the model records no target language (luong pair DIR --tgt-lang ..): pass --tgt-lang"
        )
    if recorded is not None and given is not None:
        try:
            check_language(given, recorded)
        except ValueError:
            raise UsageError(
                f"--tgt-lang: the model translates into {recorded}, got {given}"
            ) from None
    return recorded if recorded is not None else str(given)


def main(args: argparse.Namespace) -> int:
    if len(args.paths) < 2:
        raise UsageError("expected a model folder and a catalog (DIR... CATALOG)")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    *folders, catalog = args.paths
    options = search_options(args)
    if args.search_beam is None:  # a catalog is worth beam search's few seconds
        options = replace(options, beam=5)
    raw = read_bounded(catalog, MAX_CATALOG_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LuongError(
            f"{catalog}: expected UTF-8, byte {error.start} is not (msgconv --to-code=UTF-8)"
        ) from None
    translator = load(model_folders(folders), **device_options(args))
    target = _target(translator, args.tgt_lang)
    name = "+".join(Path(folder).resolve().name for folder in folders)
    try:
        filled = fill_catalog(
            text,
            lambda texts: translate_messages(translator, texts, options, args.placeholders),
            target=target,
            model=name,
            retranslate_fuzzy=args.retranslate_fuzzy,
            accelerator=args.accelerator,
        )
    except LuongError as error:
        raise LuongError(f"{catalog}: {error}") from None
    write_text(args.out, filled.text)
    say(f"{filled.summary.line()}; written to {args.out}")
    return 0
