"""Fetch the compiled gettext catalogs of one language from Debian's packages, for the larger
general model of issues 40 and 51: ``luong.catalogs.debian.fetch_catalogs``, the fetch of ``luong
corpus --debian DEST`` without the corpus. Every package of the machine's Debian release
that installs a ``/usr/share/locale/LANG/LC_MESSAGES/*.mo`` (apt's Contents index) is
downloaded by ``--jobs`` parallel ``apt-get download`` workers, only its catalogs of LANG are
kept, and the package is deleted. Resumable: a second run skips what is fetched. Nothing of
this is committed: the catalogs carry their packages' licences and are benchmark data, like
gettext-en-de.

    python benchmarks/debian_catalogs.py --lang de --dest cache/debian-de

The catalogs land as ``DEST/PACKAGE/NAME.mo`` beside each package's record
(``luong-fetched.json``); ``DEST/packages.tsv`` lists each package, its version and its
catalogs. Packages over ``--max-mb`` (data, games' artwork) are skipped and counted. A folder
written by this script before it called ``luong.catalogs.debian`` (no record) is fetched again once.
``luong corpus --tgt-lang LANG --debian DEST --exclude-packages ...`` then builds the corpus
from them (the command of docs/results.md's "The larger general model"; the six packages of
benchmarks/unseen.py's ``UNSEEN`` are left out of it).
"""

from __future__ import annotations

import argparse
import logging
import sys

from luong.catalogs.debian import fetch_catalogs
from luong.config.faces import FetchOptions


def main() -> None:
    defaults = FetchOptions()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", required=True, help="the catalogs' language (de, fr)")
    parser.add_argument("--dest", required=True, help="the folder of catalogs")
    parser.add_argument("--max-mb", type=float, default=defaults.max_mb, help="skip larger")
    parser.add_argument("--jobs", type=int, default=defaults.jobs, help="downloads at once")
    parser.add_argument("--chunk", type=int, default=defaults.chunk, help="packages a download")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    options = FetchOptions(jobs=args.jobs, chunk=args.chunk, max_mb=args.max_mb)
    report = fetch_catalogs(args.lang, args.dest, options)
    catalogs = sum(len(fetched.catalogs) for fetched in report.fetched.values())
    print(
        f"{catalogs} catalogs from {sum(1 for f in report.fetched.values() if f.catalogs)} "
        f"packages in {args.dest} ({len(report.now)} fetched now, {len(report.skipped)} "
        f"skipped, {len(report.failed)} failed; {report.seconds:.0f} s)",
        file=sys.stderr,
    )
    sys.exit(1 if report.failed else 0)


if __name__ == "__main__":
    main()
