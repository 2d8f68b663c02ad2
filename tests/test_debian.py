"""``luong corpus --debian DIR`` (``luong.catalogs.debian``) against a fake apt (``fake_apt.py``: no
network): a second run skips what is fetched, a killed run resumes, a package that fails
is named and the rest go on, exclusions by package and by source, and the one line of a
machine without apt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_apt import FakeApt
from helpers import assert_one_line_error, luong

from luong.catalogs import debian
from luong.catalogs.debian import FETCHED, PACKAGES, FetchProgress, fetch_catalogs
from luong.config.faces import FetchOptions

ARCHIVE = {
    "nano": {"de": {"nano.mo": [("Open", "Öffnen"), ("Save", "Speichern")]}},
    "seahorse": {
        "de": {"seahorse.mo": [("Keyring", "Schlüsselbund"), ("Open", "Öffnen")]},
        "fr": {"seahorse.mo": [("Keyring", "Trousseau")]},
    },
    "printer": {"de": {"printer.mo": [("Queue", "Warteschlange")]}},
    "scan": {"de": {"scan.mo": [("Scan", "Scannen")], "scan-extra.mo": [("Page", "Seite")]}},
    "artwork": {"de": {"artwork.mo": [("Image", "Bild")]}},
    "french": {"fr": {"french.mo": [("Yes", "Oui")]}},
}


@pytest.fixture
def apt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeApt:
    """The fake apt over ``ARCHIVE`` on PATH: "printer" fails to download, "artwork" is
    over 80 MB."""
    fake = FakeApt(tmp_path, ARCHIVE, {"printer": {"fail": True}, "artwork": {"size": 90e6}})
    for name, value in fake.env.items():
        monkeypatch.setenv(name, value)
    return fake


def corpus_sources(out: Path) -> set[str]:
    return {
        line.split("\t")[0]
        for split in ("train", "dev", "devtest")
        for line in (out / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
    }


def test_a_second_run_skips_what_is_fetched_and_a_failure_is_named(
    apt: FakeApt, tmp_path: Path
) -> None:
    dest, out = tmp_path / "debian-de", tmp_path / "corpus"
    args = ["corpus", "--tgt-lang", "de", "--debian", str(dest), "--out", str(out)]
    first = luong(*args, "--split-by", "hash", "--jobs", "2")
    err = first.stderr.decode()
    # printer failed (apt's message named), the rest went on: exit 3, the corpus written
    assert first.returncode == 3, err
    assert "luong: printer failed: E: Failed to fetch http://deb.example/printer.deb" in err
    assert "1 packages failed to fetch and are not in the corpus: printer" in err
    assert "6 packages ship catalogs of de: 0 fetched before, 4 to fetch" in err
    assert "2 skipped (over 80 MB or unknown to apt-cache)" in err  # artwork, ghost
    assert sorted(apt.downloads()) == ["nano", "scan", "seahorse"]
    assert corpus_sources(out) == {"Open", "Save", "Keyring", "Scan", "Page"}
    # each package one folder with its catalogs of de and its record; the link left out
    assert {p.name for p in dest.iterdir()} == {".lock", PACKAGES, "nano", "scan", "seahorse"}
    assert {p.name for p in (dest / "scan").iterdir()} == {FETCHED, "scan-extra.mo", "scan.mo"}
    record = json.loads((dest / "seahorse" / FETCHED).read_text())
    assert record == {"language": "de", "version": "1:1.0-1", "size": record["size"],
                      "catalogs": ["seahorse.mo"]}  # fmt: skip
    assert (dest / PACKAGES).read_text().splitlines() == [
        "nano\t1:1.0-1\tnano.mo",
        "scan\t1:1.0-1\tscan-extra.mo scan.mo",
        "seahorse\t1:1.0-1\tseahorse.mo",
    ]
    # again: nothing fetched twice, the failed package tried again (and failing again)
    second = luong(*args, "--force")
    assert second.returncode == 3
    assert "3 fetched before, 1 to fetch" in second.stderr.decode()
    assert apt.downloads() == []
    # once it downloads, it is fetched, and only it
    apt.set("printer", fail=False)
    third = luong(*args, "--force")
    assert third.returncode == 0, third.stderr.decode()
    assert apt.downloads() == ["printer"]
    assert "Queue" in corpus_sources(out)
    assert "4 packages in" in third.stderr.decode()


def test_a_killed_fetch_resumes_where_it_stopped(apt: FakeApt, tmp_path: Path) -> None:
    dest = tmp_path / "debian-de"
    apt.set("printer", fail=False, kill="extract")  # killed with its folder half written
    code = (
        "from luong.catalogs.debian import fetch_catalogs;"
        "from luong.config.faces import FetchOptions;"
        f"fetch_catalogs('de', {str(dest)!r}, FetchOptions(jobs=1, chunk=1), shown=False)"
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert killed.returncode == -9, killed.stderr.decode()
    assert apt.downloads() == ["nano", "printer"]  # in order, one at a time
    assert (dest / "nano" / FETCHED).is_file() and not (dest / "printer").exists()
    left = sorted(p.name for p in dest.iterdir() if p.name.startswith(".partial-printer"))
    assert len(left) == 2  # write_folder's partial folder and its lock: the kill's leftovers
    report = fetch_catalogs("de", dest, FetchOptions(jobs=2, chunk=2), shown=False)
    assert sorted(apt.downloads()) == ["printer", "scan", "seahorse"]  # nano: not again
    assert sorted(report.now) == ["printer", "scan", "seahorse"]
    assert sorted(report.fetched) == ["nano", "printer", "scan", "seahorse"]
    assert report.failed == {} and sorted(report.skipped) == ["artwork", "ghost"]
    assert not [p for p in dest.iterdir() if p.name.startswith((".partial-", ".downloads"))]
    assert (dest / "printer" / "printer.mo").is_file()


def test_packages_and_sources_left_out(apt: FakeApt, tmp_path: Path) -> None:
    dest, out = tmp_path / "debian-de", tmp_path / "corpus"
    (tmp_path / "held-out.txt").write_text("# the unseen ones\nseahorse\n\nnot-a-package\n")
    (tmp_path / "dev.tsv").write_text("Save\tSichern\n")
    result = luong(
        "corpus", "--tgt-lang", "de", "--debian", str(dest), "--out", str(out),
        "--split-by", "hash", "--exclude", str(tmp_path / "dev.tsv"),
        "--exclude-packages", "scan", f"@{tmp_path / 'held-out.txt'}",
    )  # fmt: skip
    err = result.stderr.decode()
    assert result.returncode == 3, err  # printer still fails
    assert corpus_sources(out) == {"Open"}  # nano's Save excluded, seahorse and scan left out
    assert "--exclude-packages: not fetched into" in err and "not-a-package" in err
    assert "2 left out" in err
    # left out of the corpus, fetched all the same: a held-out test reads them from DEST
    assert (dest / "seahorse" / "seahorse.mo").is_file()


def test_no_apt_no_contents_and_misused_flags_are_one_line(
    apt: FakeApt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest, out = str(tmp_path / "debian-de"), str(tmp_path / "corpus")
    args = ["corpus", "--tgt-lang", "de", "--debian", dest, "--out", out]
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    no_apt = luong(*args)
    assert_one_line_error(no_apt, "needs apt (apt-get, apt-cache, dpkg-deb)", "no apt-get and")
    assert no_apt.returncode == 1 and not Path(out).exists()
    monkeypatch.setenv("PATH", apt.path)
    (apt.archive / "Contents").unlink()
    monkeypatch.setattr(debian.os, "geteuid", lambda: 1000)
    assert_one_line_error(luong(*args), "apt has no Contents index here", "apt-file update")
    monkeypatch.setattr(debian.os, "geteuid", lambda: 0)  # root: apt-get update fetches it
    assert luong(*args).returncode == 3
    assert len(apt.calls("apt-get update")) == 1
    target = "Contents-deb::MetaKey=$(COMPONENT)/Contents-$(ARCHITECTURE)"
    assert target in apt.calls("apt-get update")[0]
    assert_one_line_error(luong(*args, "x.po"), "--debian DIR: the catalogs are DIR's")
    assert_one_line_error(
        luong("corpus", "x.po", "--tgt-lang", "de", "--out", out, "--exclude-packages", "nano"),
        "--exclude-packages: leaves packages of --debian out",
    )
    assert_one_line_error(luong(*args, "--jobs", "0"), "--jobs: expected an int from 1 to 64")
    # another language's catalogs in DEST: refused before anything is fetched
    fr = luong("corpus", "--tgt-lang", "fr", "--debian", dest, "--out", str(tmp_path / "fr"))
    assert_one_line_error(fr, "luong-fetched.json: the catalogs of de, not fr")
    # --out checked before the fetch, not after it
    assert_one_line_error(luong(*args), "not empty", "--force replaces it")


def test_progress_lines_give_the_rate_and_an_eta(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    progress = FetchProgress(4, 400_000_000, True, every=30, clock=lambda: now[0], terminal=False)
    with caplog.at_level("INFO", logger="luong"):
        now[0] = 10.0
        progress.advance(100_000_000)  # before the half minute: no line
        now[0] = 40.0
        progress.advance(100_000_000)
        now[0] = 41.0
        progress.advance(0)
        progress.advance(200_000_000)  # the last: a line
    progress.close()
    assert [r.getMessage() for r in caplog.records] == [
        "fetched 2/4 packages (50%), 200/400 MB, 5.0 MB/s, ETA 0:00:40",
        "fetched 4/4 packages (100%), 400/400 MB, 9.8 MB/s, ETA 0:00:00",
    ]
