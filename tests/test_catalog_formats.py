"""Catalogs read as gettext reads them (``luong.catalogs.po_file``, ``luong.catalogs.fill``, ``luong
po``): every charset a header may declare, every header layout msgfmt accepts, the one table of
format directives, catalogs msgfmt rejects, over-long entries and ``--out``. Stand-in
translations (the identity, upper case) test the catalog machinery; a tiny untrained model
tests the command. msgfmt (gettext) is the oracle where it is installed."""

from __future__ import annotations

import gettext
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import polib
import pytest
from helpers import SRC_SPACE, assert_one_line_error, luong, small_model, with_pair

from luong.catalogs.entries import format_placeholders
from luong.catalogs.fill import fill_catalog
from luong.catalogs.header import catalog_language
from luong.translation.placeholders import find_placeholders, keeps_placeholders

msgfmt = pytest.mark.skipif(shutil.which("msgfmt") is None, reason="needs gettext's msgfmt")
MATCH_ALL = "placeholders checked: {} of {} format entries match"


def fill(text: str, translate: Callable[[list[str]], list[str]] = list, **options: object):  # type: ignore[no-untyped-def]
    options.setdefault("target", "de")
    return fill_catalog(text, translate, model="m", **options)  # type: ignore[arg-type]


def upper(texts: list[str]) -> list[str]:
    return [text.upper() for text in texts]


def check(path: Path, *flags: str) -> tuple[int, str]:
    """msgfmt --check's exit status and messages on ``path`` (fuzzy entries included)."""
    done = subprocess.run(
        ["msgfmt", "--check", "--use-fuzzy", *flags, "-o", "/dev/null", str(path)],
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stderr


# the fields msgfmt --check asks a header for, Language, Content-Type and Plural-Forms aside
FIELDS = (
    "Project-Id-Version: demo 1.0\\n"
    "PO-Revision-Date: 2024-01-01 00:00+0000\\n"
    "Last-Translator: A <a@example.org>\\n"
    "Language-Team: B <b@example.org>\\n"
    "MIME-Version: 1.0\\n"
    "Content-Transfer-Encoding: 8bit\\n"
)


def header(*fields: str, charset: str = "UTF-8") -> str:
    lines = [f'"{field}\\n"' for field in FIELDS.split("\\n")[:-1]]
    lines += [f'"{field}\\n"' for field in fields]
    lines.append(f'"Content-Type: text/plain; charset={charset}\\n"')
    return 'msgid ""\nmsgstr ""\n' + "\n".join(lines) + "\n"


GERMAN = header("Language: de", "Plural-Forms: nplurals=2; plural=(n != 1);")
ENTRIES = """
#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

msgid "Save"
msgstr ""
"""

# -- charsets ----------------------------------------------------------------------------------

LATIN = (
    "# Deutsche Übersetzung.\n"
    + header("Language: de", "Plural-Forms: nplurals=2; plural=(n != 1);", charset="ISO-8859-1")
    + '\nmsgid "Open file"\nmsgstr "Datei öffnen"\n'
    + ENTRIES
)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("formats") / "tiny"
    with_pair(small_model(seed=4, src=SRC_SPACE, max_src_len=40)).save_pretrained(path)
    return path


def po(model: Path, catalog: Path, out: Path, *flags: str):  # type: ignore[no-untyped-def]
    # --min-len 3: an untrained model's outputs are otherwise empty (left untranslated)
    return luong(
        "po", str(model), str(catalog), "--out", str(out), "--tgt-lang", "de", "--min-len", "3",
        *flags,
    )  # fmt: skip


@msgfmt
def test_a_latin1_catalog_is_filled_in_its_own_charset(model: Path, tmp_path: Path) -> None:
    catalog, out = tmp_path / "de.po", tmp_path / "out.po"
    catalog.write_bytes(LATIN.encode("latin-1"))
    result = po(model, catalog, out)
    assert result.returncode == 0, result.stderr.decode()
    data = out.read_bytes()
    assert data.startswith(LATIN[: LATIN.index("\n#, c-format")].encode("latin-1"))
    assert polib.pofile(data.decode("latin-1")).metadata["Content-Type"].endswith("ISO-8859-1")
    assert check(out) == (0, "")
    # --to-utf8: the same catalog in UTF-8, its header saying so
    result = po(model, catalog, out, "--to-utf8", "--force")
    assert result.returncode == 0, result.stderr.decode()
    text = out.read_bytes().decode("utf-8")
    assert '"Content-Type: text/plain; charset=UTF-8\\n"' in text
    assert "charset=ISO-8859-1" not in text and 'msgstr "Datei öffnen"' in text
    assert check(out) == (0, "")


def test_a_translation_the_charset_cannot_hold_is_mapped_or_left_for_a_person(
    tmp_path: Path,
) -> None:
    filled = fill(LATIN, lambda texts: [t + " für" for t in texts])
    assert filled.encoding == "iso8859-1"
    assert 'msgstr[1] "%d files für"'.encode("latin-1") in filled.data  # ü is one byte
    # typographic characters the charset lacks: its own (it refused the whole catalog)
    quoted = fill(LATIN, lambda texts: [f"„{t}“ – ‚so‘…" for t in texts])
    assert quoted.summary.filled == 2 and not quoted.summary.untranslated
    assert 'msgstr "\\"Save\\" - \'so\'..."' in quoted.data.decode("latin-1")
    # a character it has no stand-in for: that entry left for a person, named; the rest filled
    for odd in ("€", "\ufffd"):
        some = fill(
            LATIN, lambda texts, odd=odd: [t if t == "Save" else f"{t} {odd}" for t in texts]
        )
        assert some.summary.filled == 1 and some.summary.left_empty == 0
        assert some.summary.untranslated == (
            f'line 18 (msgid "%d file"): left untranslated: its translation holds {odd!r} '
            f"(U+{ord(odd):04X}), which the catalog's charset ISO-8859-1 cannot hold (luong po "
            "--to-utf8 writes the catalog in UTF-8, which can)",
        )
        assert 'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] ""' in some.text
    euro = fill(LATIN, lambda texts: [t + " €" for t in texts], to_utf8=True)
    assert euro.encoding == "utf-8" and "charset=UTF-8" in euro.text
    assert 'msgstr[1] "%d files €"' in euro.data.decode("utf-8")
    if shutil.which("msgfmt") is not None:
        out = tmp_path / "out.po"
        out.write_bytes(quoted.data)
        assert check(out) == (0, "")


@pytest.mark.parametrize("charset", ["utf8", "Utf-8", "UTF8"])
def test_every_spelling_of_utf8_is_utf8(charset: str) -> None:
    text = (GERMAN + ENTRIES).replace("charset=UTF-8", f"charset={charset}")
    filled = fill(text)
    assert filled.text.startswith(text[: text.index("\n#, c-format")])  # the header as it was
    assert filled.encoding == "utf-8" and filled.summary.filled == 2


def test_a_mo_file_a_bom_and_bytes_not_in_the_charset(model: Path, tmp_path: Path) -> None:
    mo, out = tmp_path / "de.mo", tmp_path / "out.po"
    polib.pofile(LATIN).save_as_mofile(str(mo))
    result = po(model, mo, out)
    assert_one_line_error(
        result,
        f"luong: error: {mo}: a compiled catalog (.mo), not a .po: give the .po or .pot it "
        "was made from (msgunfmt writes one from a .mo)",
    )
    assert "msgconv" not in result.stderr.decode()
    bad = tmp_path / "bad.po"
    bad.write_bytes((GERMAN + ENTRIES).encode() + b'\nmsgid "caf\xe9"\nmsgstr ""\n')
    result = po(model, bad, out)
    assert_one_line_error(
        result, f"{bad}: line 22: byte 0xe9 is not UTF-8, the charset the header declares"
    )
    unknown = tmp_path / "unknown.po"
    unknown.write_text(GERMAN.replace("UTF-8", "KLINGON") + ENTRIES, encoding="utf-8")
    assert_one_line_error(
        po(model, unknown, out),
        f"{unknown}: charset=KLINGON: not a charset Python can decode",
    )
    assert not out.exists()
    # a UTF-8 byte-order mark is read, and not written
    bom = tmp_path / "bom.po"
    bom.write_bytes(b"\xef\xbb\xbf" + (GERMAN + ENTRIES).encode())
    result = po(model, bom, out)
    assert result.returncode == 0, result.stderr.decode()
    assert out.read_bytes().startswith(GERMAN.encode())
    assert not fill("\ufeff" + GERMAN + ENTRIES).text.startswith("\ufeff")


# -- headers -----------------------------------------------------------------------------------

ONE_LINE = (
    f'msgid ""\nmsgstr "{FIELDS}Language: LANG\\nContent-Type: text/plain; charset=UTF-8\\n'
    'Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n'
)
WRAPPED = (
    'msgid ""\nmsgstr ""\n"Language: "\n"LANG\\n"\n'
    '"Content-Type: text/plain; charset=UTF-8\\n"\n"Plural-Forms: nplurals=2; "\n'
    f'"plural=(n != 1);\\n"\n"{FIELDS}"\n'
)
CRLF_HEADER = header("Language: LANG", "Plural-Forms: nplurals=2; plural=(n != 1);")
LAYOUTS = {  # (the header, the catalog)
    "crlf": (
        CRLF_HEADER.replace("\n", "\r\n"),
        (CRLF_HEADER + ENTRIES).replace("\n", "\r\n"),
    ),
    "one line": (ONE_LINE, ONE_LINE + ENTRIES),
    "wrapped": (WRAPPED, WRAPPED + ENTRIES),
    "not first": (ONE_LINE, ENTRIES.lstrip("\n") + "\n" + ONE_LINE),
    "no blank lines": (ONE_LINE, ONE_LINE + ENTRIES.replace("\n\n", "\n")),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_header_in_any_layout_msgfmt_accepts_names_its_language(layout: str) -> None:
    french = LAYOUTS[layout][1].replace("LANG", "fr")
    assert catalog_language(french) == "fr"
    with pytest.raises(
        ValueError, match="^the catalog's Language is fr, the model translates into de$"
    ):
        fill(french)


@msgfmt
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_header_that_lacks_nothing_is_kept_byte_for_byte(layout: str, tmp_path: Path) -> None:
    header_text, text = (part.replace("LANG", "de") for part in LAYOUTS[layout])
    filled = fill(text)
    assert header_text in filled.text
    assert filled.text.count('msgid ""') == 1  # no second header in front
    assert filled.summary.filled == 2 and filled.language == "de"
    if layout == "crlf":  # what polib wrote anew has the file's line ends
        assert "\n" not in filled.text.replace("\r\n", "")
    out = tmp_path / "out.po"
    out.write_bytes(filled.data)
    assert check(out) == (0, "")


@msgfmt
def test_a_crlf_template_gets_one_of_each_field_and_a_plural_python_reads(tmp_path: Path) -> None:
    template = (
        header(
            "Language: ", "Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;", charset="CHARSET"
        )
        + ENTRIES
    ).replace("\n", "\r\n")
    filled = fill(template)
    text = filled.text
    assert "\n" not in text.replace("\r\n", "")  # CRLF throughout, the new lines too
    for field in ("Language", "Content-Type", "Plural-Forms"):
        assert text.count(f'"{field}:') == 1, field
    metadata = polib.pofile(text).metadata
    assert {k: metadata[k] for k in ("Language", "Content-Type", "Plural-Forms")} == {
        "Language": "de",
        "Content-Type": "text/plain; charset=UTF-8",
        "Plural-Forms": "nplurals=2; plural=(n != 1);",
    }
    out, mo = tmp_path / "de.po", tmp_path / "de.mo"
    out.write_bytes(filled.data)
    assert check(out) == (0, "")
    subprocess.run(["msgfmt", "--use-fuzzy", "-o", str(mo), str(out)], check=True)
    with mo.open("rb") as handle:
        translations = gettext.GNUTranslations(handle)
    assert translations.ngettext("%d file", "%d files", 1) == "%d file"
    assert translations.ngettext("%d file", "%d files", 5) == "%d files"


@pytest.mark.parametrize(
    ("forms", "message"),
    [
        ("nplurals=2; plural=n > 1 ?;", r"plural=n > 1 \? is not an expression Python's gettext"),
        ("nplurals=1; plural=(n != 1);", r"plural=\(n != 1\) gives form 1 for n = 0, past"),
        ("nplurals=2;", "expected nplurals=N; plural=EXPRESSION;"),
    ],
)
def test_a_plural_expression_pythons_gettext_cannot_use_is_refused(
    forms: str, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^Plural-Forms: .*{message}"):
        fill(header("Language: de", f"Plural-Forms: {forms}") + ENTRIES)
    polish = (
        "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);"
    )
    own = header("Language: de", f"Plural-Forms: {polish}") + ENTRIES
    filled = fill(own)
    assert filled.nplurals == 3 and filled.text.startswith(own[: own.index("\n#, c-format")])


# -- format directives -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("directive", "flag"),
    [
        ("% d", "c-format"),
        ("%<PRIu64>", "c-format"),
        ("%1$*2$d", "c-format"),
        ("%r", "python-format"),
        ("%-10.3lf", "c-format"),
        ("%I64d", "c-format"),
        ("%*d", "c-format"),
        ("%.f", "c-format"),
        ("%ls", "c-format"),
        ("%(name)r", "python-format"),
        ("{0!r}", "python-brace-format"),
        ("{name!s:>10}", "python-brace-format"),
    ],
)
def test_one_table_of_directives_for_placeholders_and_the_format_check(
    directive: str, flag: str
) -> None:
    text = f"Got {directive} items"
    assert [span.text for span in find_placeholders(text)] == [directive]
    assert format_placeholders(text, flag) == {directive: 1}
    assert not keeps_placeholders(text, "Got items")


def test_prose_is_not_taken_for_a_directive() -> None:
    for text in ("100% sure", "50% discount", "5% a year", "10% e.g. less", "100% e-mail"):
        assert find_placeholders(text) == [], text


FORMATTED = """
#, c-format
msgid "Copy %s to %d"
msgstr ""

#, python-brace-format
msgid "Hello {name}, {0!r}"
msgstr ""

#, python-format
msgid "%r and %(n)d"
msgstr ""

#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""
"""
GARBLED = {
    "Copy %s to %d": "Kopiere %d nach %s",
    "Hello {name}, {0!r}": "Hallo {name}",
    "%r and %(n)d": "%r und %(n)d",
    "%d file": "%d Datei",
    "%d files": "%s Dateien",
}


@msgfmt
def test_the_summary_names_each_entry_that_fails_the_format_check(tmp_path: Path) -> None:
    filled = fill(GERMAN + FORMATTED, lambda texts: [GARBLED[t] for t in texts])
    summary = filled.summary
    assert (summary.format_entries, summary.format_matches) == (4, 1)
    assert summary.format_errors == (
        'line 14 (msgid "Copy %s to %d"): c-format check fails: msgstr takes %s %d in another '
        "order",
        'line 18 (msgid "Hello {name}, {0!r}"): python-brace-format check fails: msgstr lacks '
        "{0!r}",
        'line 26 (msgid "%d file"): c-format check fails: msgstr[1] lacks %d, adds %s',
    )
    assert summary.named() == list(summary.format_errors)
    assert MATCH_ALL.format(1, 4) in summary.line()
    # msgfmt finds the two c-format entries at fault; it lets a python-brace-format
    # translation drop a field (str.format ignores an argument left unused), which the
    # summary names: a placeholder of the source is lost
    out = tmp_path / "out.po"
    out.write_bytes(filled.data)
    status, errors = check(out)
    assert status == 1 and errors.endswith("msgfmt: found 2 fatal errors\n")
    assert [line.split(":")[1] for line in errors.splitlines()[:-1]] == ["16", "32"]
    assert 'msgid "Copy %s to %d"' in out.read_text().splitlines()[14]
    assert 'msgid_plural "%d files"' in out.read_text().splitlines()[30]
    # the identity keeps them all: python-brace-format counted with the others
    assert MATCH_ALL.format(4, 4) in fill(GERMAN + FORMATTED).summary.line()


def test_luong_po_names_the_entries_that_fail_and_exits_3(model: Path, tmp_path: Path) -> None:
    catalog, out = tmp_path / "de.po", tmp_path / "out.po"
    catalog.write_text(GERMAN + '\n#, c-format\nmsgid "%d files"\nmsgstr ""\n', encoding="utf-8")
    # the model's digits cannot spell %d: with --placeholders off it is lost
    result = po(model, catalog, out, "--placeholders", "off")
    assert result.returncode == 3
    assert result.stderr.decode().splitlines() == [
        "luong: filled 1 entries (0 plural, 0 plural forms); skipped 0 translated, 0 obsolete, "
        "0 fuzzy; 0 left as they were (an empty translation); placeholders checked: 0 of 1 "
        f"format entries match; written to {out}",
        f'luong: {catalog}: line 14 (msgid "%d files"): c-format check fails: msgstr lacks %d',
    ]
    assert polib.pofile(str(out))[0].fuzzy  # written, for review


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('msgid "a\nmsgstr ""\n', "line 13: end-of-line within string"),
        ('msgid "a\\q"\nmsgstr ""\n', r"line 13: invalid control sequence \q"),
        (
            'msgid "a"\nmsgid_plural "as"\nmsgstr[0] ""\nmsgstr[99999] ""\n',
            "line 16: plural form has wrong index",
        ),
        ('msgid "a"\nmsgstr[0] ""\n', "line 14: missing 'msgid_plural' section"),
        ('msgid "a"\n\nmsgid "b"\nmsgstr ""\n', "line 13: missing 'msgstr' section"),
        ('#~ msgid "a"\nmsgstr ""\n', "line 14: inconsistent use of #~"),
        (
            'msgid "Save"\nmsgstr ""\n\nmsgid "Save"\nmsgstr ""\n',
            "line 16: duplicate message definition (the first is at line 13)",
        ),
        (
            ONE_LINE.replace("LANG", "de"),
            "line 13: duplicate message definition (the first is at line 1)",
        ),
    ],
)
def test_a_catalog_msgfmt_rejects_is_refused_with_its_line(
    model: Path, tmp_path: Path, entry: str, message: str
) -> None:
    catalog, out = tmp_path / "bad.po", tmp_path / "out.po"
    catalog.write_text(GERMAN + "\n" + entry, encoding="utf-8")
    if shutil.which("msgfmt"):
        assert check(catalog)[0] == 1  # msgfmt rejects it too
    assert_one_line_error(po(model, catalog, out), f"luong: error: {catalog}: {message}")
    assert not out.exists()


@msgfmt
def test_escapes_msgfmt_reads_and_polib_does_not_are_left_untranslated(tmp_path: Path) -> None:
    # \a, octal and hex escapes are legal; polib keeps them as text and would write back
    # a backslash escaped: such an entry is left as it is, and named
    text = GERMAN + '\nmsgid "Bell\\a"\nmsgstr ""\n\nmsgid "A\\101\\x41"\nmsgstr ""\n' + ENTRIES
    catalog = tmp_path / "escapes.po"
    catalog.write_text(text, encoding="utf-8")
    assert check(catalog) == (0, "")
    filled = fill(text, upper)
    assert filled.summary.untranslated == (
        'line 13 (msgid "Bell\\\\a"): left untranslated: it holds the escape \\a, which polib '
        "would write back as another text (write the character itself)",
        'line 16 (msgid "A\\\\101\\\\x41"): left untranslated: it holds the escape \\101, which '
        "polib would write back as another text (write the character itself)",
    )
    assert filled.summary.filled == 2 and text[: text.index("\n#, c-format")] in filled.text


# -- over-long entries, --out, --tgt-lang ------------------------------------------------------

LONG = " ".join(["abc defghij"] * 9)  # 107 symbols, above the model's 40


@pytest.mark.parametrize("attention", ["general", "location"])
def test_an_entry_longer_than_the_model_reads_is_left_untranslated_and_named(
    tmp_path: Path, attention: str
) -> None:
    folder = tmp_path / "tiny"
    model = small_model(seed=4, src=SRC_SPACE, attention=attention, max_src_len=40)
    with_pair(model).save_pretrained(folder)
    catalog, out = tmp_path / "de.po", tmp_path / "out.po"
    long_entry = f'msgid "{LONG}"\nmsgstr ""\n'
    catalog.write_text(GERMAN + ENTRIES + "\n" + long_entry, encoding="utf-8")
    result = po(folder, catalog, out)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().splitlines() == [
        "luong: filled 2 entries (1 plural, 2 plural forms); skipped 0 translated, 0 obsolete, "
        "0 fuzzy; 0 left as they were (an empty translation); 1 left untranslated (named "
        f"below); {MATCH_ALL.format(1, 1)}; written to {out}",
        f'luong: {catalog}: line 22 (msgid "{LONG[:37]}..."): left untranslated: 107 symbols, '
        "above the model's maximum source length 40",
    ]
    assert out.read_text(encoding="utf-8").endswith("\n" + long_entry)


def test_out_is_checked_before_the_catalog_is_translated(model: Path, tmp_path: Path) -> None:
    catalog = tmp_path / "de.po"
    catalog.write_text(GERMAN + ENTRIES, encoding="utf-8")
    reviewed = tmp_path / "reviewed.po"
    reviewed.write_text("# reviewed\n", encoding="utf-8")
    missing = tmp_path / "no model"  # each refusal comes before the model is read
    for out, message in [
        (reviewed, f"{reviewed}: a file that exists; pass --force to write over it"),
        (catalog, f"{catalog}: the catalog being filled that exists; pass --force to write"),
        (tmp_path, f"{tmp_path}: a folder; --out names the catalog file to write"),
        (tmp_path / "x" / "o.po", f"{tmp_path / 'x' / 'o.po'}: no such folder {tmp_path / 'x'}"),
    ]:
        assert_one_line_error(po(missing, catalog, out), f"luong: error: {message}")
    assert reviewed.read_text(encoding="utf-8") == "# reviewed\n"
    assert catalog.read_text(encoding="utf-8") == GERMAN + ENTRIES
    result = po(model, catalog, catalog, "--force")  # in place, when asked
    assert result.returncode == 0, result.stderr.decode()
    assert polib.pofile(str(catalog)).percent_translated() == 0  # filled, fuzzy
    assert len([e for e in polib.pofile(str(catalog)) if e.fuzzy]) == 2


def test_tgt_lang_is_a_language_code(model: Path, tmp_path: Path) -> None:
    catalog, out = tmp_path / "de.pot", tmp_path / "out.po"
    # a template with its Plural-Forms: the crafted value would go into the header as it is
    catalog.write_text(
        header("Language: ", "Plural-Forms: nplurals=2; plural=(n != 1);") + ENTRIES,
        encoding="utf-8",
    )
    result = luong(
        "po", str(model), str(catalog), "--out", str(out), "--tgt-lang", "de\nX-Injected: yes"
    )
    assert result.returncode == 2
    assert_one_line_error(
        result,
        "luong: error: --tgt-lang: expected an ISO 639 language code that babel knows (en, de, "
        "pt-BR), got 'de\\nX-Injected: yes'",
    )
    assert not out.exists()
    with pytest.raises(ValueError, match="^target: expected an ISO 639 language code"):
        fill(GERMAN + ENTRIES, target="de\nX-Injected: yes")


# -- what a fault audit found untested ---------------------------------------------------------


def test_brace_fields_with_a_conversion_are_placeholders() -> None:
    spans = find_placeholders("{0!r} of {name!s} at {x!a:>5}")
    assert [(s.text, s.kind) for s in spans] == [
        ("{0!r}", "braces"),
        ("{name!s}", "braces"),
        ("{x!a:>5}", "braces"),
    ]
    assert not keeps_placeholders("{0!r} of {name!s}", "{0} of {name}")


def test_retranslate_fuzzy_refills_every_form_of_a_fuzzy_plural_entry() -> None:
    polish = header("Language: pl", "Plural-Forms: " + PLURALS_PL)
    entries = """
#, fuzzy, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d plik"
msgstr[1] "%d pliki"
msgstr[2] "%d plików"

#, fuzzy
msgid "%d dir"
msgid_plural "%d dirs"
msgstr[0] "%d katalog"
msgstr[1] ""
msgstr[2] ""
"""
    filled = fill(polish + entries, upper, target="pl", retranslate_fuzzy=True)
    out = polib.pofile(filled.text)
    assert [e.msgstr_plural for e in out] == [
        {0: "%D FILE", 1: "%D FILES", 2: "%D FILES"},
        {0: "%D DIR", 1: "%D DIRS", 2: "%D DIRS"},
    ]
    assert (filled.summary.plural_entries, filled.summary.plural_forms) == (2, 6)
    kept = fill(polish + entries, upper, target="pl")
    assert kept.text == polish + entries and kept.summary.skipped_fuzzy == 2


PLURALS_PL = (
    "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);"
)


def test_a_regional_language_keeps_its_header_byte_for_byte() -> None:
    austrian = (
        "# Österreichisch.\n"
        + header("Language: de_AT", "Plural-Forms: nplurals=2; plural=(n != 1);")
        + ENTRIES
    )
    filled = fill(austrian, upper)
    assert filled.text.startswith(austrian[: austrian.index("\n#, c-format")] + "\n")
    assert filled.language == "de_AT" and filled.summary.filled == 2


# -- Round 5 (issue 54) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "target", "taken"),
    [
        ("sr@latin", "sr-Latn", True),  # gettext's script modifier
        ("sr_RS@latin", "sr-Latn", True),
        ("sr", "sr-Latn", False),  # Cyrillic
        ("zh_TW", "zh-Hant", True),  # Traditional by its territory
        ("zh_CN", "zh-Hant", False),
        ("pt_BR", "pt-BR", True),
        ("pt", "pt-BR", True),  # the language's own, as gettext falls back to it
        ("pt_PT", "pt-BR", False),
        ("de_DE", "de", True),
    ],
)
def test_a_catalog_of_another_script_or_region_is_not_the_models(
    language: str, target: str, taken: bool
) -> None:
    text = header(f"Language: {language}", "Plural-Forms: nplurals=2; plural=(n != 1);") + ENTRIES
    if taken:
        assert fill(text, upper, target=target).summary.filled == 2
        return
    with pytest.raises(
        ValueError, match=f"^the catalog's Language is {language}, the model translates into"
    ):
        fill(text, upper, target=target)


def test_one_msgid_under_two_contexts_reads_fine() -> None:
    text = GERMAN + (
        '\nmsgctxt "menu"\nmsgid "Open"\nmsgstr ""\n\nmsgctxt "state"\nmsgid "Open"\nmsgstr ""\n'
        '\nmsgid "Open"\nmsgstr ""\n'
    )
    filled = fill(text, upper)
    assert filled.summary.filled == 3
    entries = polib.pofile(filled.text)
    assert [(e.msgctxt, e.msgstr) for e in entries] == [
        ("menu", "OPEN"),
        ("state", "OPEN"),
        (None, "OPEN"),
    ]
