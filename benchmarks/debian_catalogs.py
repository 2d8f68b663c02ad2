"""Fetch the compiled gettext catalogs of one language from Debian's packages, for the larger
general model of issue 40: every package of the machine's Debian release that installs a
``/usr/share/locale/LANG/LC_MESSAGES/*.mo`` is downloaded with ``apt-get download`` and only
its catalogs of LANG are taken out (``dpkg-deb --fsys-tarfile`` into ``tar``, the part of
``dpkg-deb -x`` that is needed), then the package is deleted. Nothing of this is committed:
the catalogs carry their packages' licences and are benchmark data, like gettext-en-de.

    apt-get install apt-file && apt-file update     # once: the index of every package's files
    python benchmarks/debian_catalogs.py --lang de --dest /work/cache/debian-de

The catalogs land as ``DEST/PACKAGE/NAME.mo``; ``DEST/packages.tsv`` lists each package, its
version and its catalogs. Packages over ``--max-mb`` (data, games' artwork) are skipped and
counted. ``luong corpus --tgt-lang LANG DEST/...`` then harvests them; the larger German
model's corpus left out the six packages of benchmarks/unseen.py's ``UNSEEN`` (docs/results.md,
"The larger general model").
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def catalog_packages(lang: str) -> dict[str, list[str]]:
    """Package -> the paths of its catalogs of ``lang``, from apt-file's index."""
    if shutil.which("apt-file") is None:
        sys.exit("apt-file is needed: apt-get install apt-file && apt-file update")
    pattern = f"^/usr/share/locale/{lang}/LC_MESSAGES/[^/]+\\.mo$"
    found = subprocess.run(
        ["apt-file", "search", "-x", pattern], capture_output=True, text=True, check=True
    ).stdout
    packages: dict[str, list[str]] = defaultdict(list)
    for line in found.splitlines():
        package, _, path = line.partition(": ")
        packages[package].append(path)
    return dict(sorted(packages.items()))


def package_sizes(packages: list[str]) -> dict[str, tuple[str, int]]:
    """Package -> (version, size in bytes) of the candidate ``apt-get download`` fetches."""
    shown = subprocess.run(
        ["apt-cache", "show", "--no-all-versions", *packages],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sizes: dict[str, tuple[str, int]] = {}
    for stanza in shown.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        if "Package" in fields and "Size" in fields:
            sizes[fields["Package"]] = (fields.get("Version", ""), int(fields["Size"]))
    return sizes


def extract(deb: Path, lang: str, dest: Path) -> list[str]:
    """The catalogs of ``lang`` in ``deb`` copied to ``dest`` (flat); their names."""
    with tempfile.TemporaryDirectory() as tmp:
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        subprocess.run(
            ["tar", "-x", "-C", tmp, "--wildcards", f"./usr/share/locale/{lang}/LC_MESSAGES/*.mo"],
            stdin=tar.stdout,
            check=False,
            stderr=subprocess.DEVNULL,
        )
        tar.wait()
        names = []
        for mo in sorted(Path(tmp, f"usr/share/locale/{lang}/LC_MESSAGES").glob("*.mo")):
            if mo.is_file() and not mo.is_symlink():
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(mo, dest / mo.name)
                names.append(mo.name)
        return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", required=True, help="the catalogs' language (de, fr)")
    parser.add_argument("--dest", type=Path, required=True, help="the folder of catalogs")
    parser.add_argument("--max-mb", type=float, default=80.0, help="skip larger packages")
    parser.add_argument("--chunk", type=int, default=40, help="packages a download")
    args = parser.parse_args()

    started = time.perf_counter()
    packages = catalog_packages(args.lang)
    sizes = package_sizes(list(packages))
    wanted = [p for p in packages if p in sizes and sizes[p][1] <= args.max_mb * 1e6]
    skipped = sorted(set(packages) - set(wanted))
    print(
        f"{len(packages)} packages with {args.lang} catalogs; {len(wanted)} to fetch "
        f"({sum(sizes[p][1] for p in wanted) / 1e9:.2f} GB), {len(skipped)} over "
        f"{args.max_mb:g} MB or unknown to apt-cache",
        file=sys.stderr,
    )
    args.dest.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as download:
        for start in range(0, len(wanted), args.chunk):
            chunk = [p for p in wanted[start : start + args.chunk] if not (args.dest / p).exists()]
            if not chunk:
                continue
            subprocess.run(
                ["apt-get", "download", "-q", *chunk],
                cwd=download,
                check=False,
                stdout=subprocess.DEVNULL,
            )
            for deb in sorted(Path(download).glob("*.deb")):
                package = deb.name.split("_", 1)[0]
                names = extract(deb, args.lang, args.dest / package)
                rows.append((package, sizes.get(package, ("", 0))[0], names))
                deb.unlink()
            print(f"  {start + len(chunk)}/{len(wanted)} packages", file=sys.stderr)
    rows += [
        (p.name, "", sorted(m.name for m in p.glob("*.mo")))
        for p in sorted(args.dest.iterdir())
        if p.is_dir() and p.name not in {r[0] for r in rows}
    ]
    with open(args.dest / "packages.tsv", "w", encoding="utf-8") as out:
        for package, version, names in sorted(rows):
            out.write(f"{package}\t{version}\t{' '.join(names)}\n")
    catalogs = sum(len(r[2]) for r in rows)
    print(
        f"{catalogs} catalogs from {sum(1 for r in rows if r[2])} packages in "
        f"{args.dest} ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
