"""``luong corpus``: a parallel corpus from gettext catalogs (``luong.corpus``)."""

from __future__ import annotations

import argparse
from collections import Counter

from luong.cli.common import UsageError, say
from luong.config.faces import CorpusOptions
from luong.corpus import (
    build_corpus,
    catalog_files,
    dropped_counts,
    excluded_sources,
    write_corpus,
)
from luong.errors import LuongError
from luong.languages import check_language

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    for flag, code in (("--tgt-lang", args.tgt_lang), ("--src-lang", args.src_lang)):
        try:
            check_language(code, flag)
        except LuongError as error:
            raise UsageError(str(error)) from None
    try:
        options = CorpusOptions(
            plurals=args.plurals,
            context=args.context,
            max_len=args.max_len,
            dev=args.dev,
            devtest=args.devtest,
            split_by=args.split_by,
        )
    except LuongError as error:  # "max_len: ..." -> "--max-len: ...": the flag's name
        name, _, detail = str(error).partition(":")
        raise UsageError(f"--{name.replace('_', '-')}:{detail}") from None
    files = catalog_files(args.paths, args.tgt_lang)
    exclude = excluded_sources(args.exclude)
    corpus = build_corpus(files, options, args.tgt_lang, exclude)
    manifest = write_corpus(corpus, args.out, args.src_lang, args.tgt_lang, options, args.force)
    for skipped in corpus.skipped:
        say(f"skipped {skipped['path']}: {skipped['reason']}")
    pairs = manifest["pairs"]
    dropped = dropped_counts(Counter(manifest["dropped"]))
    print(
        f"{sum(pairs.values())} pairs from {manifest['catalogs_read']} catalogs "
        f"({len(corpus.skipped)} skipped): train {pairs['train']}, dev {pairs['dev']}, "
        f"devtest {pairs['devtest']}; dropped: {dropped}; written to {args.out}"
    )
    return 0
