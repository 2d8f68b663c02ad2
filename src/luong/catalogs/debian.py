"""The gettext catalogs of one language from every Debian (or Ubuntu) package that ships
some (``luong corpus --debian DIR``, which then builds its corpus from them).

    report = fetch_catalogs("de", "cache/debian-de", FetchOptions(jobs=4))
    folders = catalog_folders("cache/debian-de", exclude={"nano"})
    corpus = build_corpus(catalog_files(folders, "de"), CorpusOptions(), "de")

The steps (``FetchOptions`` holds the settings):

1. **Which packages.** apt's Contents index (every file of every package of the machine's
   sources: what apt-file searches) names each package that installs
   ``/usr/share/locale/LL/LC_MESSAGES/*.mo``, ``LL`` the language's folder
   (``luong.common.languages.locale_name``: ``pt-BR`` -> ``pt_BR``). apt names its Contents files
   (``apt-get indextargets``); where it has none, a run as root fetches them once with
   ``apt-get update`` and the Contents targets that apt-file configures (46 MB for Debian
   12), and a run as another user says how in one line.
2. **Their sizes.** ``apt-cache show`` gives each candidate's version and size. A package
   over ``max_mb``, or unknown to apt-cache (another architecture's), is skipped and counted.
3. **Downloads.** ``jobs`` workers run ``apt-get download`` at once, ``chunk`` packages a
   call (each call loads apt's cache), in a scratch folder of DEST. Where a call fails, the
   packages it left undownloaded are tried again one at a time, so that the one that fails
   is named with apt's message and the rest go on. Each package's catalogs of the language
   are read out of its ``.deb`` (``dpkg-deb --fsys-tarfile``, read as a tar stream; regular
   files only, a link is left) and the ``.deb`` deleted.
4. **One package, one result, all or nothing.** ``DEST/PACKAGE/`` holds its catalogs and
   ``FETCHED`` (the language, version, size and catalogs), written as one folder
   (``luong.common.files.write_folder``). A folder with ``FETCHED`` is fetched: a second run skips
   it, and a run that was stopped (Ctrl-C, ``kill -9``) resumes with the packages it had
   not written. A package that fails is not written: the next run tries it again.
5. ``DEST/packages.tsv`` lists each fetched package, its version and its catalogs (written
   at the end of every run, a stopped one included).

Progress (``FetchProgress``): a bar on a terminal, elsewhere a line through the "luong"
logger every half minute, with the rate and an ETA from the bytes left. One run at a time
writes to DEST (``luong.common.files.locked``).
"""

from __future__ import annotations

import bz2
import datetime
import gzip
import io
import logging
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from luong.common.errors import LuongError
from luong.common.files import locked, read_json, write_folder, write_json, write_text
from luong.common.languages import check_language, locale_name
from luong.common.progress import PROGRESS_EVERY
from luong.config.faces import FetchOptions

__all__ = [
    "APT_TOOLS",
    "FETCHED",
    "PACKAGES",
    "FetchProgress",
    "FetchReport",
    "Fetched",
    "catalog_folders",
    "catalog_packages",
    "check_apt",
    "contents_files",
    "fetch_catalogs",
    "fetched_packages",
    "package_sizes",
    "read_catalogs",
]

APT_TOOLS = ("apt-get", "apt-cache", "dpkg-deb")
"""What the fetch runs, each found on PATH."""
APT_HELPER = Path("/usr/lib/apt/apt-helper")
"""apt's own reader of the files it keeps compressed (lz4, zstd: ``apt-helper cat-file``)."""
FETCHED = "luong-fetched.json"
"""A fetched package's record, in its folder: the folder is complete."""
PACKAGES = "packages.tsv"
"""DEST's list of the fetched packages: name, version, catalogs (space-separated)."""
SCRATCH = ".downloads"  # DEST's scratch folder for the .deb files, emptied by every run
NAMES_A_CALL = 1000  # package names one apt-cache show is given (each call loads the cache)

# The Contents index as apt-file configures it (/etc/apt/apt.conf.d/50apt-file.conf):
# per component, and the flat one of older archives as its fallback.
CONTENTS_TARGETS = {
    "Contents-deb": {
        "MetaKey": "$(COMPONENT)/Contents-$(ARCHITECTURE)",
        "ShortDescription": "Contents-$(ARCHITECTURE)",
        "Description": "$(RELEASE)/$(COMPONENT) $(ARCHITECTURE) Contents (deb)",
        "flatMetaKey": "Contents-$(ARCHITECTURE)",
        "flatDescription": "$(RELEASE) Contents (deb)",
        "KeepCompressed": "true",
        "DefaultEnabled": "true",
    },
    "Contents-deb-legacy": {
        "MetaKey": "Contents-$(ARCHITECTURE)",
        "ShortDescription": "Contents-$(ARCHITECTURE)",
        "Description": "$(RELEASE) $(ARCHITECTURE) Contents (deb)",
        "KeepCompressed": "true",
        "DefaultEnabled": "true",
        "Fallback-Of": "Contents-deb",
        "Identifier": "Contents-deb",
    },
}

logger = logging.getLogger("luong")


@dataclass(frozen=True)
class Fetched:
    """A fetched package: the version downloaded, its size in bytes, its catalogs' names."""

    version: str
    size: int
    catalogs: tuple[str, ...]


@dataclass
class FetchReport:
    """What a run found and did: ``listed`` packages ship catalogs of the language;
    ``fetched``, every package DEST holds (this run's and earlier runs'), of which ``now``
    this run's; ``skipped`` and ``failed``, each package with the reason."""

    listed: int
    fetched: dict[str, Fetched] = field(default_factory=dict)
    now: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def check_apt() -> None:
    """Raises a one-line ``LuongError`` on a machine without apt's tools on PATH."""
    missing = [tool for tool in APT_TOOLS if shutil.which(tool) is None]
    if missing:
        raise LuongError(
            f"fetching Debian's catalogs needs apt ({', '.join(APT_TOOLS)}), and this machine "
            f"has no {' and no '.join(missing)}: run it on Debian or Ubuntu"
        )


def _apt(args: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """An apt command, its output captured, its messages in English (parsed below)."""
    return subprocess.run(
        list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )


def _apt_errors(result: subprocess.CompletedProcess[str]) -> str:
    """apt's error lines (``E: ...``) as one line, else its last line of stderr."""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E:")]
    return "; ".join(errors or lines[-1:]) or f"exit status {result.returncode}"


def _contents_options() -> list[str]:
    return [
        f"-oAcquire::IndexTargets::deb::{target}::{key}={value}"
        for target, settings in CONTENTS_TARGETS.items()
        for key, value in settings.items()
    ]


def _listed_contents() -> list[Path]:
    result = _apt(
        [
            "apt-get",
            "indextargets",
            *_contents_options(),
            "--format",
            "$(FILENAME)",
            "Identifier: Contents-deb",
        ]
    )
    if result.returncode != 0:
        raise LuongError(f"apt-get indextargets: {_apt_errors(result)}")
    found = {Path(line.strip()) for line in result.stdout.splitlines() if line.strip()}
    return sorted(path for path in found if path.is_file())


def contents_files(update: bool = True) -> list[Path]:
    """The Contents files apt holds; with none, and ``update`` as root, ``apt-get update``
    with the Contents targets first.

    Raises:
        ValueError: none, and no way to fetch them (the message says how); apt failed.
    """
    found = _listed_contents()
    if found:
        return found
    if not update or os.geteuid() != 0:
        raise LuongError(
            "apt has no Contents index here (the files of every package, which names the "
            "packages with catalogs): run this as root, which fetches it once, or as root "
            "apt-get install apt-file && apt-file update"
        )
    logger.info("apt has no Contents index here: apt-get update with it (once, about 50 MB)")
    result = _apt(["apt-get", "update", "-q", *_contents_options()])
    if result.returncode != 0:
        raise LuongError(f"apt-get update: {_apt_errors(result)}")
    found = _listed_contents()
    if not found:
        raise LuongError(
            "apt-get update fetched no Contents index from this machine's sources "
            "(/etc/apt/sources.list, /etc/apt/sources.list.d)"
        )
    return found


def _open_index(path: Path) -> io.BufferedIOBase:
    """An index file that Python decompresses itself (or that is kept uncompressed)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix in (".xz", ".lzma"):
        return lzma.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return path.open("rb")


@contextmanager
def _lines_of(path: Path) -> Iterator[Iterable[bytes]]:
    """The lines of an index file apt keeps, compressed or not (lz4 and zstd, which Python
    does not read, through apt's own ``apt-helper cat-file``)."""
    if path.suffix not in (".lz4", ".zst"):
        with _open_index(path) as stream:
            yield stream
        return
    if not APT_HELPER.is_file():
        raise LuongError(f"{path}: reading it needs apt's {APT_HELPER}, which is missing")
    process = subprocess.Popen([APT_HELPER, "cat-file", path], stdout=subprocess.PIPE)
    assert process.stdout is not None  # a pipe was asked for
    try:
        yield process.stdout
    finally:
        process.stdout.close()
        status = process.wait()
    if status != 0:
        raise LuongError(f"{APT_HELPER} cat-file {path}: exit status {status}")


def catalog_packages(files: Sequence[Path], locale: str) -> dict[str, list[str]]:
    """Package -> the catalogs it installs in ``/usr/share/locale/LOCALE/LC_MESSAGES``
    (sorted), from the Contents ``files`` (``PATH  section/package,section/other`` a
    line, the path without its leading slash)."""
    prefix = f"usr/share/locale/{locale}/LC_MESSAGES/".encode()
    packages: dict[str, set[str]] = {}
    for path in files:
        with _lines_of(path) as lines:
            for line in lines:
                if not line.startswith(prefix):
                    continue
                name, _, owners = line[len(prefix) :].strip().rpartition(b" ")
                catalog = name.strip().decode("utf-8", "replace")
                if "/" in catalog or not catalog.endswith(".mo"):
                    continue
                for owner in owners.split(b","):
                    package = owner.rpartition(b"/")[2].decode("ascii", "replace")
                    if package:
                        packages.setdefault(package, set()).add(catalog)
    return {package: sorted(names) for package, names in sorted(packages.items())}


def package_sizes(packages: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Package -> (version, size in bytes) of the candidate ``apt-get download`` fetches;
    a package apt-cache does not know is left out."""
    sizes: dict[str, tuple[str, int]] = {}
    for start in range(0, len(packages), NAMES_A_CALL):
        names = packages[start : start + NAMES_A_CALL]
        shown = _apt(["apt-cache", "show", "--no-all-versions", *names]).stdout
        for stanza in shown.split("\n\n"):
            fields = dict(
                line.split(": ", 1)
                for line in stanza.splitlines()
                if ": " in line and not line.startswith(" ")
            )
            name, size = fields.get("Package"), fields.get("Size", "")
            if name and size.isdigit() and name not in sizes:
                sizes[name] = (fields.get("Version", ""), int(size))
    return sizes


def read_catalogs(deb: Path, locale: str, into: Path) -> list[str]:
    """The catalogs of ``locale`` in the package ``deb``, copied into ``into`` (their names
    as they were); their names, sorted.

    Raises:
        ValueError: dpkg-deb cannot read ``deb``.
        tarfile.TarError: its files are no tar archive.
    """
    wanted = f"usr/share/locale/{locale}/LC_MESSAGES"
    names = []
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=errors
        )
        assert process.stdout is not None  # a pipe was asked for
        try:
            with tarfile.open(fileobj=process.stdout, mode="r|") as tar:
                for member in tar:
                    folder, _, name = member.name.removeprefix("./").rpartition("/")
                    if folder == wanted and name.endswith(".mo") and member.isreg():
                        source = tar.extractfile(member)
                        if source is not None:
                            (into / name).write_bytes(source.read())
                            names.append(name)
            while process.stdout.read(1 << 16):
                pass  # the archive's padding: dpkg-deb ends without a broken pipe
        finally:
            process.stdout.close()
            status = process.wait()
        if status != 0:
            errors.seek(0)
            message = errors.read().decode("utf-8", "replace").strip().splitlines()
            raise LuongError(f"dpkg-deb --fsys-tarfile: {message[-1] if message else status}")
    return sorted(names)


def fetched_packages(dest: str | os.PathLike[str], locale: str | None = None) -> dict[str, Fetched]:
    """The packages fetched into ``dest``: each folder with its ``FETCHED`` record (one that
    does not read is not fetched).

    Raises:
        ValueError: a record of another language than ``locale`` (when given).
    """
    found: dict[str, Fetched] = {}
    folder = Path(dest)
    if not folder.is_dir():
        return found
    for package in sorted(folder.iterdir()):
        record_path = package / FETCHED
        if package.name.startswith(".") or not record_path.is_file():
            continue
        try:
            record = read_json(record_path)
            language = record["language"]
            fetched = Fetched(
                str(record["version"]), int(record["size"]), tuple(map(str, record["catalogs"]))
            )
        except (LuongError, OSError, KeyError, TypeError, ValueError):
            continue
        if locale is not None and language != locale:
            raise LuongError(
                f"{record_path}: the catalogs of {language}, not {locale}: fetch each "
                "language into a folder of its own"
            )
        found[package.name] = fetched
    return found


def catalog_folders(dest: str | os.PathLike[str], exclude: Iterable[str] = ()) -> list[Path]:
    """The folders of the packages fetched into ``dest`` that hold a catalog, but those of
    the packages ``exclude`` names, sorted.

    Raises:
        ValueError: ``dest`` holds no fetched package.
    """
    fetched = fetched_packages(dest)
    if not fetched:
        raise LuongError(f"{dest}: no package fetched into it")
    left_out = set(exclude)
    return [
        Path(dest, package)
        for package, record in fetched.items()
        if record.catalogs and package not in left_out
    ]


class FetchProgress:
    """The progress of the downloads. On a terminal, tqdm's bar on stderr (bytes, the
    packages beside it); anywhere else a line through the "luong" logger every ``every``
    seconds (default 30) and at the last package:

        fetched 120/1686 packages (7%), 310/2520 MB, 12.3 MB/s, ETA 0:03:01

    the rate over the run so far, the ETA from the bytes left. ``shown`` False: nothing.
    ``clock`` and ``terminal`` are for tests (default ``time.monotonic`` and stderr's
    ``isatty``)."""

    def __init__(
        self,
        packages: int,
        total_bytes: int,
        shown: bool,
        every: float = PROGRESS_EVERY,
        clock: Callable[[], float] = time.monotonic,
        terminal: bool | None = None,
    ) -> None:
        if terminal is None:
            terminal = sys.stderr.isatty()
        self.packages, self.total = packages, total_bytes
        self.done = self.bytes = 0
        self.every, self.clock = every, clock
        self.lines = shown and not terminal and packages > 0
        self.bar: Any = tqdm(
            total=total_bytes,
            unit="B",
            unit_scale=True,
            disable=not (shown and terminal),
            leave=False,
        )
        self.start = self.last = clock()

    def advance(self, size: int) -> None:
        """One package done (fetched or failed), of ``size`` bytes."""
        self.done += 1
        self.bytes += size
        self.bar.update(size)
        self.bar.set_postfix_str(f"{self.done}/{self.packages} packages")
        if self.lines and (self.done == self.packages or self.clock() - self.last >= self.every):
            self.line()

    def line(self) -> None:
        """Log where the fetch stands now."""
        now = self.clock()
        rate = self.bytes / (now - self.start) if now > self.start else 0.0
        left = (self.total - self.bytes) / rate if rate > 0 else 0.0
        eta = datetime.timedelta(seconds=round(left))
        percent = 100 * self.done // max(1, self.packages)
        logger.info(
            f"fetched {self.done}/{self.packages} packages ({percent}%), "
            f"{self.bytes / 1e6:.0f}/{self.total / 1e6:.0f} MB, {rate / 1e6:.1f} MB/s, ETA {eta}"
        )
        self.last = now

    def close(self) -> None:
        self.bar.close()


def _fetch_chunk(
    names: Sequence[str], sizes: dict[str, tuple[str, int]], locale: str, dest: Path
) -> dict[str, Fetched | str]:
    """Download ``names`` with one ``apt-get download`` in a scratch folder and keep each
    one's catalogs; the packages that did not download are tried again one at a time.
    Each package's outcome: what was fetched, or why it failed."""
    outcomes: dict[str, Fetched | str] = {}
    with tempfile.TemporaryDirectory(dir=dest / SCRATCH) as scratch:
        result = _apt(["apt-get", "download", "-q", *names], cwd=Path(scratch))
        debs = {deb.name.split("_", 1)[0]: deb for deb in Path(scratch).glob("*.deb")}
        for name in names:
            deb = debs.get(name)
            if deb is None and len(names) > 1:
                outcomes.update(_fetch_chunk([name], sizes, locale, dest))
            elif deb is None:
                outcomes[name] = _apt_errors(result) if result.returncode else "no .deb written"
            else:
                try:
                    outcomes[name] = _keep(deb, sizes[name], locale, dest / name)
                except (LuongError, OSError, tarfile.TarError) as error:
                    outcomes[name] = f"its .deb does not read: {error}"
                finally:
                    deb.unlink(missing_ok=True)
    return outcomes


def _keep(deb: Path, size: tuple[str, int], locale: str, folder: Path) -> Fetched:
    """The catalogs of ``deb`` and its ``FETCHED`` record written as ``folder``."""
    kept: list[Fetched] = []

    def fill(tmp: Path) -> None:
        fetched = Fetched(size[0], size[1], tuple(read_catalogs(deb, locale, tmp)))
        record = {"language": locale, "version": fetched.version, "size": fetched.size}
        write_json(tmp / FETCHED, {**record, "catalogs": list(fetched.catalogs)})
        kept.append(fetched)

    write_folder(folder, fill)
    return kept[0]


def fetch_catalogs(
    language: str,
    dest: str | os.PathLike[str],
    options: FetchOptions | None = None,
    shown: bool = True,
) -> FetchReport:
    """Fetch the catalogs of ``language`` from every Debian package that ships some into
    ``dest`` (the module's docstring has the steps); progress on stderr when ``shown``.

    Raises:
        ValueError: no apt on this machine, no Contents index (and no way to fetch it),
            a ``dest`` that holds another language's catalogs (each in one line).
        OSError: another run holds ``dest``'s lock.
    """
    options = options if options is not None else FetchOptions()
    check_language(language, "language")
    check_apt()
    started = time.monotonic()
    locale = locale_name(language)
    folder = Path(dest)
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder):
        shutil.rmtree(folder / SCRATCH, ignore_errors=True)  # a stopped run's
        (folder / SCRATCH).mkdir()
        listed = catalog_packages(contents_files(options.update), locale)
        if not listed:
            raise LuongError(
                f"apt's Contents index names no package with catalogs in "
                f"/usr/share/locale/{locale}/LC_MESSAGES"
            )
        report = FetchReport(len(listed), fetched_packages(folder, locale))
        sizes = package_sizes([p for p in listed if p not in report.fetched])
        wanted = []
        for package in listed:
            if package in report.fetched:
                continue
            if package not in sizes:
                report.skipped[package] = "unknown to apt-cache"
            elif sizes[package][1] > options.max_mb * 1e6:
                report.skipped[package] = f"{sizes[package][1] / 1e6:.0f} MB, over max_mb"
            else:
                wanted.append(package)
        total = sum(sizes[package][1] for package in wanted)
        logger.info(
            f"{len(listed)} packages ship catalogs of {locale}: "
            f"{sum(p in report.fetched for p in listed)} fetched before, {len(wanted)} to fetch "
            f"({total / 1e6:,.0f} MB), {len(report.skipped)} skipped "
            f"(over {options.max_mb:g} MB or unknown to apt-cache)"
        )
        progress = FetchProgress(len(wanted), total, shown)
        pool = ThreadPoolExecutor(options.jobs)
        try:
            futures: list[Future[dict[str, Fetched | str]]] = [
                pool.submit(_fetch_chunk, wanted[at : at + options.chunk], sizes, locale, folder)
                for at in range(0, len(wanted), options.chunk)
            ]
            for future in as_completed(futures):
                for package, outcome in future.result().items():
                    if isinstance(outcome, Fetched):
                        report.fetched[package] = outcome
                        report.now.append(package)
                    else:
                        report.failed[package] = outcome
                        logger.warning(f"{package} failed: {outcome}")
                    progress.advance(sizes[package][1])
        except KeyboardInterrupt:
            logger.warning(
                f"stopped: the packages fetched are kept in {folder}, and the same command "
                "resumes (the downloads under way end first)"
            )
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            progress.close()
            rows = sorted(fetched_packages(folder).items())
            write_text(
                folder / PACKAGES,
                "".join(f"{p}\t{f.version}\t{' '.join(f.catalogs)}\n" for p, f in rows),
            )
            shutil.rmtree(folder / SCRATCH, ignore_errors=True)
    report.seconds = time.monotonic() - started
    return report
