"""``luong corpus``: a parallel corpus from gettext catalogs (``luong.catalogs.corpus``), those of
Debian's packages fetched first with ``--debian DIR`` (``luong.catalogs.debian``)."""

from __future__ import annotations

import argparse
from collections import Counter

from luong.catalogs.corpus import (
    build_corpus,
    catalog_files,
    check_corpus_folder,
    dropped_counts,
    excluded_sources,
    write_corpus,
)
from luong.catalogs.debian import FetchReport, catalog_folders, fetch_catalogs
from luong.cli.common import UsageError, log_to_stderr, say
from luong.cli.language_flags import check_language_flags
from luong.common.errors import LuongError
from luong.common.files import read_text_lines
from luong.common.progress import WorkProgress
from luong.config.faces import CorpusOptions, FetchOptions

__all__ = ["FETCH_FAILED", "main"]

FETCH_FAILED = 3
"""The exit status when the corpus was written without some packages that failed to fetch
(named on stderr; the same command tries them again)."""


def _flag_error(error: LuongError) -> UsageError:
    """``"max_len: ..."`` -> ``"--max-len: ..."``: the flag's name."""
    name, _, detail = str(error).partition(":")
    return UsageError(f"--{name.replace('_', '-')}:{detail}")


def package_names(given: list[str]) -> set[str]:
    """The names of ``--exclude-packages``: each as given, or ``@FILE``'s lines (blank
    lines and ``#`` comments aside)."""
    names = set()
    for name in given:
        if name.startswith("@"):
            for line in read_text_lines(name[1:]):
                line = line.partition("#")[0].strip()
                if line:
                    names.add(line)
        else:
            names.add(name)
    return names


def main(args: argparse.Namespace) -> int:
    check_language_flags(("--tgt-lang", args.tgt_lang), ("--src-lang", args.src_lang))
    if args.src_lang == args.tgt_lang:  # a catalog's msgids and msgstrs are two languages
        raise UsageError(
            f"--src-lang and --tgt-lang: expected two languages, got {args.tgt_lang!r} for both"
        )
    try:
        options = CorpusOptions(
            plurals=args.plurals,
            context=args.context,
            max_len=args.max_len,
            dev=args.dev,
            devtest=args.devtest,
            split_by=args.split_by,
        )
        fetch_options = FetchOptions(jobs=args.jobs, max_mb=args.max_mb)
    except LuongError as error:
        raise _flag_error(error) from None
    exclude = excluded_sources(args.exclude)  # a file that does not read: before any fetch
    log_to_stderr()  # the fetch's and the reading's progress
    report: FetchReport | None = None
    if args.debian is None:
        if args.exclude_packages:
            raise UsageError("--exclude-packages: leaves packages of --debian out; no --debian")
        files = catalog_files(args.paths, args.tgt_lang)
    else:
        if args.paths:
            raise UsageError("--debian DIR: the catalogs are DIR's; give no PATH with it")
        left_out = package_names(args.exclude_packages)
        check_corpus_folder(args.out, args.force)  # before an hour of fetching, not after
        report = fetch_catalogs(args.tgt_lang, args.debian, fetch_options)
        unknown = sorted(left_out - set(report.fetched) - set(report.failed))
        if unknown:
            say(f"--exclude-packages: not fetched into {args.debian}: {', '.join(unknown)}")
        files = catalog_files(catalog_folders(args.debian, left_out), args.tgt_lang)
        say(
            f"{len(report.fetched)} packages in {args.debian} ({len(report.now)} fetched now in "
            f"{report.seconds:.0f} s), {len(left_out & set(report.fetched))} left out"
        )
    with WorkProgress(len(files), "read", "catalogs") as progress:
        corpus = build_corpus(files, options, args.tgt_lang, exclude, progress)
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
    if report is not None and report.failed:
        say(
            f"{len(report.failed)} packages failed to fetch and are not in the corpus: "
            f"{', '.join(sorted(report.failed))}; the same command tries them again"
        )
        return FETCH_FAILED
    return 0
