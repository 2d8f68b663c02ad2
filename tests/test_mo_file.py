"""Compiled gettext catalogs (``.mo``) checked as msgunfmt checks them (``luong.catalogs.mo_file``)
wherever luong reads one: ``luong corpus`` and its ``--exclude``, and a translation memory
(``--tm``). A file cut short, an empty one, a string without its NUL, a table that names one
string many times are refused naming the file, before polib reads a string of it. Rows of
docs/robustness.md ("Round 5: catalogs and corpora")."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import polib
import pytest
from helpers import assert_one_line_error, luong, luong_limited

from luong.catalogs.corpus import build_corpus, excluded_sources
from luong.catalogs.mo_file import MAX_MO_TEXT_BYTES, check_mo
from luong.common.errors import LuongError
from luong.config.faces import CorpusOptions
from luong.memory.translation_memory import TranslationMemory

HEADER = "Language: de\nContent-Type: text/plain; charset=UTF-8\n"


def compiled(pairs: list[tuple[str, str]]) -> bytes:
    """A .mo file of ``pairs`` (the header first, as msgfmt writes it), by polib."""
    po = polib.POFile()
    po.metadata = {"Language": "de", "Content-Type": "text/plain; charset=UTF-8"}
    for msgid, msgstr in pairs:
        po.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    return bytes(po.to_binary())


def by_hand(originals: list[bytes], translations: list[bytes], shared: int = 0) -> bytes:
    """A .mo file laid out by hand: the header, the two tables, then the strings, each
    followed by its NUL; with ``shared``, the last ``shared`` translations all name the
    bytes of the first of them (a table pointing many times at one string)."""
    count = len(originals)
    strings = bytearray()
    at = 28 + 16 * count
    tables: list[list[tuple[int, int]]] = [[], []]
    for side, texts in enumerate((originals, translations)):
        for i, text in enumerate(texts):
            if side == 1 and shared and i > count - shared:
                tables[1].append(tables[1][count - shared])
                continue
            tables[side].append((len(text), at + len(strings)))
            strings += text + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, count, 28, 28 + 8 * count, 0, 0)
    body = b"".join(struct.pack("<2I", *entry) for table in tables for entry in table)
    return head + body + bytes(strings)


GOOD = [("Message", "Nachricht"), ("Open", "Öffnen")]
CUT = 'truncated: the msgstr of msgid "Message"'  # its strings come last


def test_an_intact_mo_passes_and_polib_reads_it_as_before() -> None:
    data = compiled(GOOD)
    check_mo(data)
    assert [(e.msgid, e.msgstr) for e in polib.mofile(data)] == GOOD
    check_mo(by_hand([b"", b"Open"], [HEADER.encode(), "Öffnen".encode()]))


def damaged() -> dict[str, tuple[bytes, str]]:
    """Damaged .mo files, each with the words of the error it gets."""
    data = compiled(GOOD)
    no_nul = by_hand([b"", b"Open"], [HEADER.encode(), b"Offen"])
    return {
        "cut 12 bytes short": (data[:-12], CUT),
        "cut 1 byte short": (data[:-1], 'truncated: the msgstr of msgid "Open"'),
        "cut inside its tables": (data[:40], "truncated: its msgid table (3 strings from byte 28)"),
        "cut inside its header": (data[:20], "20 bytes: too short for a .mo file"),
        "empty": (b"", "0 bytes: too short for a .mo file"),
        "not a .mo": (b"x" * 40, "not a .mo file: it does not start with"),
        "a string without its NUL": (no_nul[:-1] + b"!", "not followed by a NUL byte"),
        "a revision to come": (
            data[:4] + struct.pack("<I", 2 << 16) + data[8:],
            "revision 2.0: not a .mo revision",
        ),
    }


@pytest.mark.parametrize("case", list(damaged()))
def test_a_damaged_mo_is_refused_as_msgunfmt_refuses_it(case: str, tmp_path: Path) -> None:
    data, words = damaged()[case]
    with pytest.raises(LuongError, match="msgunfmt") as error:
        check_mo(data)
    assert words in str(error.value)
    if shutil.which("msgunfmt") is not None:  # the reference refuses it too
        path = tmp_path / "de.mo"
        path.write_bytes(data)
        result = subprocess.run(["msgunfmt", str(path)], capture_output=True, check=False)
        assert result.returncode != 0, result.stdout


def test_a_truncated_mo_is_refused_everywhere_catalogs_are_read(tmp_path: Path) -> None:
    cut = tmp_path / "de.mo"
    cut.write_bytes(compiled(GOOD)[:-12])  # polib read it as "Nachric"
    good = tmp_path / "good.po"
    good.write_text(
        'msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "Close"\nmsgstr "Schließen"\n',
        encoding="utf-8",
    )
    options = CorpusOptions(dev=0, devtest=0)
    corpus = build_corpus([cut, good], options, "de")
    assert [pair for pairs in corpus.splits.values() for pair in pairs] == [("Close", "Schließen")]
    (skipped,) = corpus.skipped
    assert skipped["path"] == str(cut) and skipped["reason"].startswith(CUT)
    # luong corpus names it on stderr; --exclude and a memory refuse it in one line
    result = luong("corpus", str(cut), str(good), "--tgt-lang", "de", "--out", str(tmp_path / "c"))
    assert result.returncode == 0, result.stderr.decode()
    assert f"skipped {cut}: {CUT}" in result.stderr.decode()
    assert "Nachric" not in (tmp_path / "c" / "train.tsv").read_text()
    with pytest.raises(LuongError, match=f"^{cut}: {re.escape(CUT)}"):
        excluded_sources([cut])
    with pytest.raises(LuongError, match=f"^{cut}: {re.escape(CUT)}"):
        TranslationMemory.read([cut], "en", "de")


def test_an_empty_mo_given_to_exclude_is_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.po"
    good.write_text('msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "A"\nmsgstr "B"\n')
    empty = tmp_path / "empty.mo"
    empty.write_bytes(b"")  # it was struct.error, a traceback and exit 70
    result = luong(
        "corpus", str(good), "--tgt-lang", "de", "--out", str(tmp_path / "c"), "--exclude",
        str(empty),
    )  # fmt: skip
    assert_one_line_error(result, f"luong: error: {empty}: 0 bytes: too short for a .mo file")
    assert result.returncode == 1
    with pytest.raises(LuongError, match=rf"^{empty}: 0 bytes: too short for a \.mo file"):
        TranslationMemory.read([empty], "en", "de")


ORIGINALS = [b"", *(f"Message {i:03}".encode() for i in range(999))]
TRANSLATIONS = [HEADER.encode(), *[b"x" * 500_000] * 999]
NAMED = sum(map(len, ORIGINALS + TRANSLATIONS))  # 500 MB


def amplifying(tmp_path: Path) -> Path:
    """A 516 KB .mo whose 999 translations all name one 500 KB string: 500 MB of text."""
    path = tmp_path / "de.mo"
    path.write_bytes(by_hand(ORIGINALS, TRANSLATIONS, shared=999))
    assert path.stat().st_size < 530_000
    return path


def test_a_mo_whose_table_names_one_string_many_times_is_refused_unread(tmp_path: Path) -> None:
    path = amplifying(tmp_path)
    started = time.perf_counter()
    with pytest.raises(LuongError, match="above the limit of") as error:
        check_mo(path.read_bytes())
    assert time.perf_counter() - started < 1.0
    assert str(error.value) == (
        f"its tables name {NAMED} bytes of strings, above the limit of {MAX_MO_TEXT_BYTES} "
        f"for a .mo file (the file holds {path.stat().st_size} bytes: a string named many "
        "times); msgfmt writes no such file, and msgunfmt would spell it out in full"
    )
    with pytest.raises(LuongError, match=rf"^{path}: its tables name {NAMED} bytes"):
        TranslationMemory.read([path], "en", "de")
    with pytest.raises(LuongError, match=rf"^{path}: its tables name {NAMED} bytes"):
        excluded_sources([path])
    # luong corpus skips it, naming why, within 200 MB (it took 1.46 GB and 34 s)
    out = tmp_path / "corpus"
    result = luong_limited(200 * 2**20, "corpus", str(path), "--tgt-lang", "de", "--out", str(out))
    assert_one_line_error(result, f"no pairs: 1 catalogs read, 1 skipped ({path}: its tables")
    assert not out.exists()
