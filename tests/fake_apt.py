"""A fake apt for the tests of ``luong.catalogs.debian``: ``apt-get``, ``apt-cache`` and
``dpkg-deb`` as one small Python script on PATH, over an archive of packages in a folder (no
network).

    apt = FakeApt(tmp_path, {"nano": {"de": {"nano.mo": [("Open", "Öffnen")]}}})
    apt.path  # PATH with the fake first

A package's ``.deb`` is a plain tar of its files (the fake ``dpkg-deb --fsys-tarfile``
writes it out as it is). What a package does when fetched is set in ``archive.json``:
``"fail"`` (``apt-get download`` says ``E: Failed to fetch`` and exits 100 after fetching
the others, as apt does), ``"kill"`` (the fake kills the process that runs it, once:
``"download"`` in ``apt-get download``, ``"extract"`` in ``dpkg-deb``). Every package
``apt-get download`` writes is appended to ``downloads.log``; every apt command line to
``calls.log``.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path

import polib

SCRIPT = r'''
import json, os, shutil, signal, sys
from pathlib import Path

archive = Path(os.environ["FAKE_APT"])
packages = json.loads((archive / "archive.json").read_text())
tool, args = Path(sys.argv[0]).name, sys.argv[1:]
with open(archive / "calls.log", "a") as log:
    log.write(" ".join([tool, *args]) + "\n")


def killed_once(package, where):
    """Kill the process that runs this one, the first time it gets here."""
    marker = archive / f"killed-{package}"
    if packages[package].get("kill") == where and not marker.exists():
        marker.write_text("")
        os.kill(os.getppid(), signal.SIGKILL)
        sys.exit(1)


if tool == "apt-get" and args[0] == "indextargets":
    if (archive / "Contents").is_file():
        print(archive / "Contents")
elif tool == "apt-get" and args[0] == "update":
    shutil.copyfile(archive / "Contents.fetched", archive / "Contents")
elif tool == "apt-get" and args[0] == "download":
    names = [a for a in args[1:] if not a.startswith("-")]
    unknown = [n for n in names if n not in packages]
    if unknown:
        sys.exit("".join(f"E: Unable to locate package {n}\n" for n in unknown).strip())
    failed = []
    for name in names:
        killed_once(name, "download")
        if packages[name].get("fail"):
            failed.append(name)
            continue
        version = packages[name]["version"].replace(":", "%3a")
        shutil.copyfile(archive / "debs" / f"{name}.tar", f"{name}_{version}_all.deb")
        with open(archive / "downloads.log", "a") as log:
            log.write(name + "\n")
    if failed:
        for name in failed:
            print(f"E: Failed to fetch http://deb.example/{name}.deb  404", file=sys.stderr)
        sys.exit(100)
elif tool == "apt-cache" and args[0] == "show":
    names = [a for a in args[1:] if not a.startswith("-")]
    for name in names:
        if name in packages:
            p = packages[name]
            print(f"Package: {name}\nVersion: {p['version']}\nSize: {p['size']}\n")
        else:
            print(f"N: Unable to locate package {name}", file=sys.stderr)
    sys.exit(100 if any(n not in packages for n in names) else 0)
elif tool == "dpkg-deb" and args[0] == "--fsys-tarfile":
    name = Path(args[1]).name.split("_")[0]
    killed_once(name, "extract")
    sys.stdout.buffer.write(Path(args[1]).read_bytes())
else:
    sys.exit(f"fake apt: {tool} {' '.join(args)}: not faked")
'''


def mo_bytes(pairs: list[tuple[str, str]], language: str) -> bytes:
    """A compiled catalog of ``pairs`` in ``language``."""
    po = polib.POFile()
    po.metadata = {"Language": language, "Content-Type": "text/plain; charset=UTF-8"}
    for source, target in pairs:
        po.append(polib.POEntry(msgid=source, msgstr=target))
    return po.to_binary()


def deb_tar(catalogs: dict[str, dict[str, list[tuple[str, str]]]]) -> bytes:
    """A package's files as a tar, as ``dpkg-deb --fsys-tarfile`` writes them: its catalogs
    (language -> name -> pairs), a README, and a link among the catalogs."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        files = {"./usr/share/doc/README": b"not a catalog"}
        for language, named in catalogs.items():
            for name, pairs in named.items():
                files[f"./usr/share/locale/{language}/LC_MESSAGES/{name}"] = mo_bytes(
                    pairs, language
                )
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("./usr/share/locale/de/LC_MESSAGES/linked.mo")
        link.type, link.linkname = tarfile.SYMTYPE, "elsewhere.mo"
        tar.addfile(link)
    return out.getvalue()


class FakeApt:
    """The fake apt over ``packages`` (name -> language -> catalog name -> pairs) in
    ``root``: ``path`` is a PATH with it first; ``settings`` (name -> ``fail``, ``kill``,
    ``size``) go into ``archive.json``. With ``contents`` False, apt has no Contents
    index until ``apt-get update``."""

    def __init__(
        self,
        root: Path,
        packages: dict[str, dict[str, dict[str, list[tuple[str, str]]]]],
        settings: dict[str, dict[str, object]] | None = None,
        contents: bool = True,
    ) -> None:
        self.archive = root / "archive"
        (self.archive / "debs").mkdir(parents=True)
        bin_folder = root / "bin"
        bin_folder.mkdir()
        script = bin_folder / "fake-apt"
        script.write_text(f"#!{sys.executable}\n{SCRIPT}")
        script.chmod(0o755)
        for tool in ("apt-get", "apt-cache", "dpkg-deb"):
            (bin_folder / tool).symlink_to(script)
        self.path = f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env = {"FAKE_APT": str(self.archive), "PATH": self.path}
        lines = [
            "usr/bin/nano                                            editors/nano",
            "usr/share/locale/de/LC_MESSAGES/ghost.mo    misc/ghost",  # unknown to apt-cache
        ]
        index: dict[str, dict[str, object]] = {}
        for name, catalogs in packages.items():
            data = deb_tar(catalogs)
            (self.archive / "debs" / f"{name}.tar").write_bytes(data)
            given = (settings or {}).get(name, {})
            index[name] = {"version": "1:1.0-1", "size": len(data), **given}
            lines += [
                f"usr/share/locale/{language}/LC_MESSAGES/{catalog}    misc/{name}"
                for language, named in catalogs.items()
                for catalog in named
            ]
        (self.archive / "archive.json").write_text(json.dumps(index))
        text = "".join(f"{line}\n" for line in sorted(lines))
        (self.archive / "Contents.fetched").write_text(text)
        if contents:
            (self.archive / "Contents").write_text(text)

    def set(self, name: str, **settings: object) -> None:
        """Change what package ``name`` does when fetched (``fail=False``: it fetches)."""
        index = json.loads((self.archive / "archive.json").read_text())
        index[name].update(settings)
        (self.archive / "archive.json").write_text(json.dumps(index))

    def downloads(self) -> list[str]:
        """The packages ``apt-get download`` wrote, in order; the log emptied."""
        log = self.archive / "downloads.log"
        names = log.read_text().split() if log.exists() else []
        log.unlink(missing_ok=True)
        return names

    def calls(self, tool: str) -> list[str]:
        """The command lines of ``tool`` (``apt-get update``) run so far."""
        log = self.archive / "calls.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [line for line in lines if line.startswith(tool)]
