"""``luong po``: a gettext catalog's untranslated entries filled by a model, for review."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path

from luong.catalogs.adapt import adapt_to_catalog
from luong.catalogs.entries import MachineText
from luong.catalogs.fill import fill_catalog, too_long, translate_messages
from luong.catalogs.header import check_language
from luong.catalogs.po_file import decode_catalog
from luong.cli.common import (
    UsageError,
    check_memory_flags,
    device_options,
    log_to_stderr,
    model_defaults,
    model_folders,
    say,
    search_options,
)
from luong.common.errors import LuongError
from luong.common.files import atomic_write, read_bounded
from luong.common.languages import check_language as check_language_code
from luong.common.progress import WorkProgress
from luong.config.request import RequestOptions
from luong.config.translation_request import TranslationRequest
from luong.translation.translator import Translator, load

__all__ = ["FORMAT_CHECK_FAILED", "main"]

MAX_CATALOG_BYTES = 64 * 2**20  # the largest catalogs (glibc's, KDE's) are a few MB

FORMAT_CHECK_FAILED = 3
"""The exit status when the catalog was written but a filled format entry fails msgfmt
--check-format's comparison (each named on stderr); 1 is an error (nothing written)."""


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


def _pair_warning(translator: Translator, folders: Sequence[str | Path], target: str) -> str | None:
    """The warning ``luong po`` prints before it fills where the model's language pair does
    not vouch for the catalog: it records none (a model of another task fills a catalog all
    the same, at a confidence that looks fine) or only one side; None where it records both
    (a target other than the catalog's is refused: ``check_language``)."""
    src, tgt = translator.src_lang, translator.tgt_lang
    if src is not None and tgt is not None:
        return None
    model = " ".join(map(str, folders))
    if src is None and tgt is None:
        missing = "no language pair"
    else:
        missing = "no source language" if src is None else "no target language"
    return (
        f"warning: {model} records {missing}, so nothing says it translates into {target}: "
        f"check its output (luong pair {model} --src-lang {src or 'CODE'} --tgt-lang {target} "
        "records it)"
    )


def _check_out(out: Path, catalog: Path, force: bool) -> None:
    """Refuse an --out that would replace a file unasked (a reviewed catalog, the input) or
    that cannot be written, before the model is loaded and the catalog translated."""
    if out.is_dir():
        raise LuongError(f"{out}: a folder; --out names the catalog file to write")
    if not out.parent.is_dir():
        raise LuongError(f"{out}: no such folder {out.parent}")
    if (out.exists() or out.is_symlink()) and not force:
        same = out.exists() and catalog.exists() and out.samefile(catalog)
        what = "the catalog being filled" if same else "a file"
        raise LuongError(f"{out}: {what} that exists; pass --force to write over it")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise LuongError(f"{out}: cannot write in {out.parent} (permission denied)")


def _min_confidence(given: str | None) -> float | None:
    """--min-confidence as a number in [0, 1] (None when not given)."""
    if given is None:
        return None
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # NaN too
        raise UsageError(f"--min-confidence: expected a number in [0, 1], got {given!r}")
    return value


def main(args: argparse.Namespace) -> int:
    if len(args.paths) < 2:
        raise UsageError("expected a model folder and a catalog (DIR... CATALOG)")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size: expected >= 1, got {args.batch_size}")
    min_confidence = _min_confidence(args.min_confidence)
    check_memory_flags(args)
    if args.tgt_lang is not None:
        try:
            check_language_code(args.tgt_lang, "--tgt-lang")
        except ValueError as error:
            raise UsageError(str(error)) from None
    *folders, catalog = args.paths
    if args.adapt is not None and len(folders) != 1:
        raise UsageError(f"--adapt: fine-tunes one model, got {len(folders)} folders")
    if args.mix is not None and args.adapt is None:
        raise UsageError("--mix: general pairs for --adapt RUN's fine-tuning; give --adapt")
    if args.mix_ratio is not None and args.mix is None:
        raise UsageError("--mix-ratio: only with --mix FILE.tsv (the general pairs to mix in)")
    options = search_options(args, defaults=model_defaults(folders))
    _check_out(args.out, catalog, args.force)
    raw = read_bounded(catalog, MAX_CATALOG_BYTES)
    try:
        text = decode_catalog(raw)
    except LuongError as error:
        raise LuongError(f"{catalog}: {error}") from None
    if args.adapt is not None:
        adapted = adapt_to_catalog(
            catalog,
            folders[0],
            args.adapt,
            tgt_lang=args.tgt_lang,
            train={"device": args.device},
            mix=args.mix,
            mix_ratio=1.0 if args.mix_ratio is None else args.mix_ratio,
            log=say,
        )
        m = adapted.result.metrics
        if "dev_bleu" in m:
            dev = f"dev BLEU {m['dev_bleu']:.2f}"
        else:
            dev = f"dev exact match {m['dev_exact_match']:.4f}"
        mixed = f" and {adapted.mixed_pairs} pairs of {args.mix}" if args.mix is not None else ""
        say(
            f"adapted {folders[0]} to {adapted.train_pairs} translated entries of {catalog}"
            f"{mixed} ({adapted.dev_pairs} held out: {dev} after {m['steps']} steps); run "
            f"written to {adapted.folder}"
        )
        folders = [adapted.folder]
        options = search_options(args, defaults=model_defaults(folders))
    log_to_stderr()  # the loader's warnings (a stopped run's checkpoint, bf16), the progress
    translator = load(model_folders(folders), **device_options(args))
    target = _target(translator, args.tgt_lang)
    warnings = [line for line in [_pair_warning(translator, folders, target)] if line]
    # Read in the catalog's language; the catalog consults the memory itself (a plural
    # entry's forms are one unit), so the translator that fills the rest carries none.
    resources = translator.with_resources(
        args.tm or (), args.glossary_file, tm_threshold=args.tm_threshold, tgt_lang=target
    )
    memory, glossary = resources.memory, resources.glossary
    terms = () if glossary is None else glossary.pairs()
    name = "+".join(Path(folder).resolve().name for folder in folders)
    request = TranslationRequest(
        options,
        RequestOptions(placeholders=args.placeholders, glossary=terms),
        batch_size=args.batch_size,
    )

    def translate(texts: list[str]) -> list[MachineText]:
        # said once, when the catalog's header has passed its checks and the model first fills
        while warnings:
            say(warnings.pop())
        with WorkProgress(len(texts), "translated", "messages") as progress:
            return translate_messages(translator, texts, request, progress=progress)

    try:
        filled = fill_catalog(
            text,
            translate,
            target=target,
            model=name,
            retranslate_fuzzy=args.retranslate_fuzzy,
            accelerator=args.accelerator,
            to_utf8=args.to_utf8,
            too_long=too_long(translator, args.placeholders),
            min_confidence=min_confidence,
            memory=memory,
            glossary=glossary,
        )
    except LuongError as error:
        raise LuongError(f"{catalog}: {error}") from None
    data = filled.data

    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    atomic_write(args.out, write)
    say(f"{filled.summary.line()}; written to {args.out}")
    if memory is not None:
        say(filled.summary.memory_line())
    for line in filled.summary.named():
        say(f"{catalog}: {line}")
    return FORMAT_CHECK_FAILED if filled.summary.format_errors else 0
