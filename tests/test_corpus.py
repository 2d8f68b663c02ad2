"""``luong corpus``: parallel data from gettext catalogs (``luong.catalogs.corpus``): the rules a
careful corpus builder follows, charsets, malformed catalogs, splits and exclusions."""

from __future__ import annotations

import json
from pathlib import Path

import polib
import pytest
from helpers import assert_one_line_error, luong
from test_mo_file import HEADER as MO_HEADER
from test_mo_file import by_hand

from luong.catalogs.corpus import build_corpus, catalog_files, excluded_sources
from luong.common.files import write_folder
from luong.config.faces import CorpusOptions

HEADER = {"Language": "de", "Content-Type": "text/plain; charset=UTF-8"}


def catalog(
    path: Path,
    entries: list[polib.POEntry],
    metadata: dict[str, str] | None = None,
    mo: bool = False,
) -> Path:
    """A catalog of ``entries`` at ``path`` (a .po, or with ``mo`` compiled to a .mo)."""
    po = polib.POFile()
    po.metadata = metadata or HEADER
    for entry in entries:
        po.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save_as_mofile(str(path)) if mo else po.save(str(path))
    return path


def entry(msgid: str, msgstr: str = "", **fields: object) -> polib.POEntry:
    return polib.POEntry(msgid=msgid, msgstr=msgstr, **fields)


def every_rule(folder: Path) -> list[Path]:
    """Catalogs holding a case of each rule."""
    alpha = catalog(
        folder / "alpha.po",
        [
            entry("Open file", "Datei öffnen"),
            entry("Maybe", "Vielleicht", flags=["fuzzy"]),
            entry("Nothing yet"),
            entry("Gone", "Weg", obsolete=True),
            polib.POEntry(
                msgid="%d file",
                msgid_plural="%d files",
                msgstr_plural={0: "%d Datei", 1: "%d Dateien"},
            ),
            entry("Close", "Schließen", msgctxt="tab"),
            entry("_Save", "_Speichern"),
            entry("_Quit", "_Beenden"),
            entry("Line one\n  line\ttwo ", "Zeile eins\nZeile zwei"),
            entry("A message far longer than the limit of forty characters", "Lang"),
            entry("Print", "Drucken"),
        ],
    )
    beta = catalog(folder / "beta.mo", [entry("Print", "Ausdrucken")], mo=True)
    gamma = catalog(folder / "gamma.po", [entry("Print", "Ausdrucken"), entry("Quit", "Ende")])
    return [alpha, beta, gamma]


def pairs_of(corpus_splits: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str]]:
    return [pair for split in ("train", "dev", "devtest") for pair in corpus_splits[split]]


def test_the_rules_of_a_careful_corpus_builder(tmp_path: Path) -> None:
    files = every_rule(tmp_path)
    options = CorpusOptions(max_len=40, dev=0, devtest=0, split_by="hash")
    corpus = build_corpus(files, options, "de")
    assert pairs_of(corpus.splits) == [
        ("Open file", "Datei öffnen"),
        ("Close", "Schließen"),  # the context dropped
        ("Save", "Speichern"),  # the accelerators out (the catalog marks with _)
        ("Quit", "Beenden"),  # the first catalog's: one each
        ("Line one line two", "Zeile eins Zeile zwei"),  # whitespace collapsed
        ("Print", "Ausdrucken"),  # the most frequent translation: two catalogs of three
    ]
    assert corpus.dropped == {
        "fuzzy": 1,
        "untranslated": 1,
        "plural": 1,
        "too long": 1,
        "duplicate source": 3,
    }
    assert [(c["domain"], c["entries"], c["pairs"]) for c in corpus.catalogs] == [
        ("alpha", 10, 6),
        ("beta", 1, 1),
        ("gamma", 2, 2),
    ]


def test_plurals_and_contexts_as_asked(tmp_path: Path) -> None:
    files = every_rule(tmp_path)
    options = CorpusOptions(plurals=True, context="skip", max_len=40, dev=0, devtest=0)
    pairs = pairs_of(build_corpus(files, options, "de").splits)
    assert ("%d file", "%d Datei") in pairs and ("%d files", "%d Dateien") in pairs
    assert not [pair for pair in pairs if pair[0] == "Close"]


def test_charsets_a_malformed_catalog_and_another_language(tmp_path: Path) -> None:
    latin = tmp_path / "latin.po"
    latin.write_bytes(
        b'msgid ""\nmsgstr ""\n"Language: de\\n"\n'
        b'"Content-Type: text/plain; charset=ISO-8859-1\\n"\n\n'
        b'msgid "Size"\nmsgstr "Gr\xf6\xdfe"\n'
    )
    broken = tmp_path / "broken.po"
    broken.write_text('msgid "Open\nmsgstr "Offen"\n', encoding="utf-8")
    french = catalog(tmp_path / "fr.po", [entry("Open", "Ouvrir")], {"Language": "fr"})
    corpus = build_corpus(catalog_files([tmp_path], "de"), CorpusOptions(dev=0, devtest=0), "de")
    assert pairs_of(corpus.splits) == [("Size", "Größe")]
    assert corpus.skipped == [
        {"path": str(broken), "reason": "line 1: end-of-line within string"},
        {"path": str(french), "reason": "its Language header says 'fr', not de"},
    ]


def test_a_language_header_in_words_names_its_language(tmp_path: Path) -> None:
    """Some catalogs' headers name their language in words: a dozen of Debian's French ones
    (``French``, ``Français``, ``français``) were skipped as another language. Its English
    name or its own, in any case, is read as the code; another language's is still
    refused, and so is a name for another variety than the one asked."""
    named = [
        catalog(tmp_path / f"{i}.po", [entry(source, target)], {"Language": header})
        for i, (source, target, header) in enumerate(
            [("Open", "Ouvrir", "French"), ("Save", "Enregistrer", "Français"),
             ("Quit", "Quitter", "français"), ("Help", "Hilfe", "Deutsch")]
        )
    ]  # fmt: skip
    corpus = build_corpus(catalog_files([tmp_path], "fr"), CorpusOptions(dev=0, devtest=0), "fr")
    assert sorted(pairs_of(corpus.splits)) == [
        ("Open", "Ouvrir"), ("Quit", "Quitter"), ("Save", "Enregistrer"),
    ]  # fmt: skip
    assert corpus.skipped == [
        {"path": str(named[3]), "reason": "its Language header says 'Deutsch', not fr"}
    ]
    portuguese = catalog(tmp_path / "pt.po", [entry("Open", "Abrir")], {"Language": "Portuguese"})
    with pytest.raises(ValueError, match="its Language header says 'Portuguese', not pt-BR"):
        build_corpus([portuguese], CorpusOptions(dev=0, devtest=0), "pt-BR")


def two_languages_of_catalogs(folder: Path, count: int = 12) -> list[Path]:
    """``count`` catalogs of 5 messages each, two sources shared by every catalog."""
    return [
        catalog(
            folder / f"domain{i:02}.po",
            [entry(f"Message {i}.{j}", f"Nachricht {i}.{j}") for j in range(3)]
            + [entry("Cancel", "Abbrechen"), entry("Help", "Hilfe")],
        )
        for i in range(count)
    ]


def test_splits_by_catalog_are_disjoint_and_hold_whole_catalogs(tmp_path: Path) -> None:
    files = two_languages_of_catalogs(tmp_path)
    options = CorpusOptions(dev=0.2, devtest=0.2, split_by="catalog")
    corpus = build_corpus(files, options, "de")
    assert build_corpus(files, options, "de").splits == corpus.splits  # the same every time
    sources = {split: {s for s, _ in pairs} for split, pairs in corpus.splits.items()}
    assert not sources["train"] & sources["dev"] and not sources["train"] & sources["devtest"]
    assert not sources["dev"] & sources["devtest"]
    for info in corpus.catalogs:  # each catalog's own messages all in its split
        i = int(info["domain"][-2:])
        assert {f"Message {i}.{j}" for j in range(3)} <= sources[info["split"]]
    dealt = [info["split"] for info in corpus.catalogs]
    assert dealt.count("devtest") >= 1 and dealt.count("dev") >= 1 and dealt.count("train") >= 6
    # the shared sources go where a held-out catalog holds them, never to train
    assert {"Cancel", "Help"} <= sources["devtest"]


def test_splits_by_hash_follow_the_source_alone(tmp_path: Path) -> None:
    files = two_languages_of_catalogs(tmp_path)
    options = CorpusOptions(dev=0.3, devtest=0.3, split_by="hash")
    whole = build_corpus(files, options, "de").splits
    part = build_corpus(files[:4], options, "de").splits
    where = {source: split for split, pairs in whole.items() for source, _ in pairs}
    for split, pairs in part.items():
        assert all(where[source] == split for source, _ in pairs)
    assert all(whole[split] for split in ("train", "dev", "devtest"))


def test_excluded_sources_are_in_no_split(tmp_path: Path) -> None:
    files = every_rule(tmp_path / "catalogs")
    (tmp_path / "dev.tsv").write_text("Open  file\tDatei öffnen\n_Quit\tx\n", encoding="utf-8")
    held = catalog(tmp_path / "held.po", [entry("Print", "Drucken")])
    exclude = excluded_sources([tmp_path / "dev.tsv", held])
    assert {"Open file", "_Quit", "Quit", "Print"} <= exclude
    corpus = build_corpus(files, CorpusOptions(max_len=40, dev=0, devtest=0), "de", exclude)
    sources = [source for source, _ in pairs_of(corpus.splits)]
    assert sources == ["Close", "Save", "Line one line two"]
    assert corpus.dropped["excluded"] == 6  # each time a catalog held one: 1 + 2 + 3


def test_the_default_is_the_locale_tree_of_the_target_language(tmp_path: Path) -> None:
    mo = catalog(tmp_path / "pt_BR" / "LC_MESSAGES" / "app.mo", [entry("Yes", "Sim")], mo=True)
    catalog(tmp_path / "pt" / "LC_MESSAGES" / "app.mo", [entry("Yes", "Sim")], mo=True)
    assert catalog_files([], "pt-BR", root=tmp_path) == [mo]
    chinese = catalog(tmp_path / "zh_CN" / "LC_MESSAGES" / "app.mo", [entry("Yes", "是")], mo=True)
    assert catalog_files([], "zh-Hans-CN", root=tmp_path) == [chinese]  # gettext's ll_CC
    with pytest.raises(ValueError, match=r"/de/LC_MESSAGES: no \.po or \.mo catalogs in it$"):
        (tmp_path / "de" / "LC_MESSAGES").mkdir(parents=True)
        catalog_files([], "de", root=tmp_path)


def test_luong_corpus_writes_the_splits_and_a_manifest(tmp_path: Path) -> None:
    files = two_languages_of_catalogs(tmp_path / "catalogs")
    out = tmp_path / "corpus"
    args = [str(tmp_path / "catalogs"), "--tgt-lang", "de", "--out", str(out)]
    result = luong("corpus", *args, "--dev", "0.2", "--devtest", "0.2")
    assert result.returncode == 0, result.stderr.decode()
    manifest = json.loads((out / "manifest.json").read_text())
    lines = {s: (out / f"{s}.tsv").read_text().splitlines() for s in ("train", "dev", "devtest")}
    assert {s: len(v) for s, v in lines.items()} == manifest["pairs"]
    assert sum(manifest["pairs"].values()) == 3 * len(files) + 2
    # Cancel and Help: in every catalog, so in devtest's; out of dev's and train's
    assert manifest["dropped"] == {
        "duplicate source": 2 * len(files) - 2,
        "held out of dev": 2,
        "held out of train": 2,
    }
    assert result.stdout.decode().startswith(f"{3 * len(files) + 2} pairs from 12 catalogs")
    assert all(len(line.split("\t")) == 2 for v in lines.values() for line in v)
    # an earlier corpus is replaced only with --force; any other folder never
    assert_one_line_error(luong("corpus", *args), "(an earlier corpus: --force replaces it)")
    assert luong("corpus", *args, "--force").returncode == 0
    (out / "notes.txt").write_text("mine")
    assert_one_line_error(luong("corpus", *args, "--force"), f"{out}: not empty")
    assert (out / "notes.txt").read_text() == "mine"


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    bad_lang = luong("corpus", str(tmp_path), "--tgt-lang", "german", "--out", out)
    assert_one_line_error(bad_lang, "--tgt-lang: expected an ISO 639 language code")
    assert bad_lang.returncode == 2
    shares = luong("corpus", str(tmp_path), "--tgt-lang", "de", "--out", out, "--dev", "0.6",
                   "--devtest", "0.5")  # fmt: skip
    assert_one_line_error(shares, "--dev + devtest: expected below 1")
    assert_one_line_error(
        luong("corpus", str(tmp_path), "--tgt-lang", "de", "--out", out),
        f"{tmp_path}: no .po or .mo catalogs in it",
    )
    assert_one_line_error(
        luong("corpus", str(tmp_path / "none.po"), "--tgt-lang", "de", "--out", out),
        f"{tmp_path / 'none.po'}: no such file or folder",
    )
    empty = catalog(tmp_path / "empty.po", [entry("Nothing yet")])
    assert_one_line_error(
        luong("corpus", str(empty), "--tgt-lang", "de", "--out", out),
        "no pairs: 1 catalogs read, 0 skipped; dropped: 1 untranslated",
    )
    # a catalog that does not read: its reason, not the count alone
    broken = tmp_path / "broken.po"
    broken.write_text('msgid "Open\nmsgstr "Offen"\n', encoding="utf-8")
    assert_one_line_error(
        luong("corpus", str(broken), "--tgt-lang", "de", "--out", out),
        f"no pairs: 1 catalogs read, 1 skipped ({broken}: line 1: end-of-line within string); "
        "dropped: nothing",
    )
    assert not Path(out).exists()


# -- Round 5 (issue 54): languages, locale names, catalogs read as msgfmt reads them ----------


def no_header(path: Path, entries: list[polib.POEntry], mo: bool = False) -> Path:
    """A catalog without a Language header (as most of /usr/share/locale's)."""
    return catalog(path, entries, {"Content-Type": "text/plain; charset=UTF-8"}, mo=mo)


def test_a_catalogs_language_is_its_headers_else_its_folders_else_its_names(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "locale"
    # "am" sorts before "de": the tie went to Amharic (Dutch -> ደች), and French came as German
    no_header(tree / "am" / "LC_MESSAGES" / "iso.mo", [entry("Dutch", "ደች")], mo=True)
    dutch = [entry("Dutch", "Niederländisch")]
    german = no_header(tree / "de" / "LC_MESSAGES" / "iso.mo", dutch, mo=True)
    no_header(tree / "fr" / "LC_MESSAGES" / "app.mo", [entry("Open", "Ouvrir")], mo=True)
    header = catalog(tree / "fr" / "LC_MESSAGES" / "odd.mo", [entry("Help", "Hilfe")], mo=True)
    no_header(tmp_path / "po" / "fr.po", [entry("Save", "Enregistrer")])
    no_header(tmp_path / "po" / "de.po", [entry("Save", "Speichern")])
    unnamed = no_header(tmp_path / "misc" / "app.po", [entry("Quit", "Beenden")])
    files = catalog_files([tree, tmp_path / "po", tmp_path / "misc"], "de")
    corpus = build_corpus(files, CorpusOptions(dev=0, devtest=0), "de")
    assert sorted(pairs_of(corpus.splits)) == [
        ("Dutch", "Niederländisch"),
        ("Help", "Hilfe"),  # its header says de, wherever it lies
        ("Quit", "Beenden"),  # nothing names a language: taken as --tgt-lang says
        ("Save", "Speichern"),
    ]
    assert [(s["path"].removeprefix(f"{tmp_path}/"), s["reason"]) for s in corpus.skipped] == [
        ("locale/am/LC_MESSAGES/iso.mo", "its locale folder says 'am', not de"),
        ("locale/fr/LC_MESSAGES/app.mo", "its locale folder says 'fr', not de"),
        ("po/fr.po", "its file name says 'fr', not de"),
    ]
    languages = {Path(c["path"]): (c["language"], c["language_from"]) for c in corpus.catalogs}
    assert languages[german] == ("de", "locale folder")
    assert languages[header] == ("de", "Language header")
    assert languages[unnamed] == (None, None)
    # luong corpus on the French folder alone: nothing in German, each catalog named
    french = tree / "fr" / "LC_MESSAGES"
    (french / "odd.mo").unlink()
    result = luong("corpus", str(french), "--tgt-lang", "de", "--out", str(tmp_path / "c"))
    assert_one_line_error(
        result,
        f"no pairs: 1 catalogs read, 1 skipped ({french}/app.mo: its locale folder says 'fr', "
        "not de); dropped: nothing",
    )


@pytest.mark.parametrize(
    ("code", "folders", "chosen", "taken"),
    [
        # a script as gettext's modifier: not the Cyrillic sr, nor Ijekavian
        ("sr-Latn", ["sr", "sr@ije", "sr@latin"], ["sr@latin"], {"sr@latin"}),
        # a script as its territories: not Simplified zh_CN
        ("zh-Hant", ["zh_CN", "zh_Hant", "zh_TW"], ["zh_Hant", "zh_TW"], {"zh_Hant", "zh_TW"}),
        # a territory: pt, the language's own catalog, after pt_BR's; never pt_PT
        ("pt-BR", ["pt", "pt_BR", "pt_PT"], ["pt_BR"], {"pt", "pt_BR"}),
        ("uz-Cyrl", ["uz", "uz@cyrillic"], ["uz@cyrillic"], {"uz@cyrillic"}),
        ("zh-Hans-CN", ["zh_CN", "zh_TW"], ["zh_CN"], {"zh_CN"}),
        ("de", ["de", "de_CH", "en"], ["de"], {"de", "de_CH"}),
    ],
)  # fmt: skip
def test_a_language_code_with_a_script_or_region_finds_gettexts_folders(
    tmp_path: Path, code: str, folders: list[str], chosen: list[str], taken: set[str]
) -> None:
    files = {
        name: no_header(tmp_path / name / "LC_MESSAGES" / "app.mo", [entry("Yes", name)], True)
        for name in folders
    }
    assert catalog_files([], code, root=tmp_path) == [files[name] for name in chosen]
    # the whole tree given: each catalog taken or skipped by its folder's locale
    corpus = build_corpus(catalog_files([tmp_path], code), CorpusOptions(dev=0, devtest=0), code)
    read = [Path(info["path"]).parts[-3] for info in corpus.catalogs]
    assert set(read) == taken
    assert read[0] == chosen[0]  # the code's own locale first: its translations win ties
    assert pairs_of(corpus.splits) == [("Yes", chosen[0])]


def test_catalogs_are_read_as_msgfmt_reads_them(tmp_path: Path) -> None:
    header = (
        'msgid ""\nmsgstr ""\n"Language: de\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    )
    twice = tmp_path / "twice.po"  # msgfmt: duplicate message definition
    twice.write_text(header + 'msgid "A"\nmsgstr "B"\n\nmsgid "A"\nmsgstr "C"\n')
    escapes = tmp_path / "escapes.po"
    escapes.write_text(
        header + 'msgid "Bell"\nmsgstr "Glocke\\a"\n\nmsgid "Start\\x01"\nmsgstr "Anfang"\n\n'
        'msgid "Break"\nmsgstr "Um\u2028bruch"\n\nmsgid "Path \\\\a"\nmsgstr "Pfad \\\\a"\n'
    )
    contexts = tmp_path / "contexts.po"  # one msgid under two contexts: two messages
    contexts.write_text(
        header + 'msgctxt "menu"\nmsgid "Open"\nmsgstr "Öffnen"\n\n'
        'msgctxt "state"\nmsgid "Open"\nmsgstr "Offen"\n'
    )
    controls = catalog(
        tmp_path / "controls.mo",
        [entry("Null", "Nu\0ll"), entry("Escape", "\x1b[1mFett"), entry("Fine", "Gut")],
        mo=True,
    )
    files = [twice, escapes, contexts, controls]
    corpus = build_corpus(files, CorpusOptions(dev=0, devtest=0), "de")
    assert pairs_of(corpus.splits) == [
        ("Break", "Um bruch"),  # U+2028, which msgfmt accepts, is whitespace: one line
        ("Path \\a", "Pfad \\a"),  # an escaped backslash is a backslash
        ("Open", "Öffnen"),
        ("Fine", "Gut"),
    ]
    assert corpus.skipped == [
        {
            "path": str(twice),
            "reason": "line 9: duplicate message definition (the first is at line 6)",
        }
    ]
    assert corpus.dropped == {"escape": 2, "control character": 2, "duplicate source": 1}


@pytest.mark.parametrize("command", ["corpus", "export", "prepare", "quantize", "average"])
@pytest.mark.parametrize("out", [".", "", "..", "/"])
def test_an_out_that_names_no_folder_of_its_own_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, out: str
) -> None:
    monkeypatch.chdir(tmp_path)
    given = {
        "corpus": ["corpus", str(tmp_path), "--tgt-lang", "de"],
        "export": ["export", str(tmp_path)],
        "prepare": ["prepare", "--train", "t.tsv"],
        "quantize": ["quantize", str(tmp_path)],
        "average": ["average", str(tmp_path)],
    }[command]
    result = luong(*given, "--out", out)  # it was a traceback: PosixPath('.') has an empty name
    assert_one_line_error(
        result, f"argument --out: expected a folder of its own to write (such as out/{command}), "
    )
    assert result.returncode == 2
    with pytest.raises(ValueError, match="names no folder of its own"):
        write_folder(out or ".", lambda folder: None)


# -- the fault audit's gaps (issue 54): each test fails when the behaviour it names breaks ----


def test_a_three_form_plural_language_gives_its_last_form(tmp_path: Path) -> None:
    polish = catalog(
        tmp_path / "pl.po",
        [
            polib.POEntry(
                msgid="%d file",
                msgid_plural="%d files",
                msgstr_plural={0: "%d plik", 1: "%d pliki", 2: "%d plików"},
            )
        ],
        {
            "Language": "pl",
            "Plural-Forms": "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && "
            "(n%100<10 || n%100>=20) ? 1 : 2);",
        },
    )
    options = CorpusOptions(plurals=True, dev=0, devtest=0)
    assert pairs_of(build_corpus([polish], options, "pl").splits) == [
        ("%d file", "%d plik"),
        ("%d files", "%d plików"),  # the last form, the one for most counts
    ]


def test_a_regional_catalog_is_read_for_its_language(tmp_path: Path) -> None:
    german = catalog(tmp_path / "app.po", [entry("Open", "Öffnen")], {"Language": "de_DE"})
    corpus = build_corpus([german], CorpusOptions(dev=0, devtest=0), "de")
    assert pairs_of(corpus.splits) == [("Open", "Öffnen")] and not corpus.skipped


def test_a_pair_of_exactly_max_len_characters_is_kept(tmp_path: Path) -> None:
    exact, over = "x" * 20, "y" * 21
    path = catalog(
        tmp_path / "de.po", [entry(exact, exact.upper()), entry(over, "Z"), entry("Z", over)]
    )
    corpus = build_corpus([path], CorpusOptions(max_len=20, dev=0, devtest=0), "de")
    assert pairs_of(corpus.splits) == [(exact, exact.upper())]
    assert corpus.dropped["too long"] == 2


def test_one_huge_catalog_stays_in_train_and_dev_keeps_its_share(tmp_path: Path) -> None:
    files = [
        catalog(tmp_path / f"small{i:02}.po", [entry(f"S{i}.{j}", f"K{i}.{j}") for j in range(5)])
        for i in range(20)
    ]
    files.append(catalog(tmp_path / "huge.po", [entry(f"H{j}", f"G{j}") for j in range(300)]))
    options = CorpusOptions(dev=0.1, devtest=0.1, split_by="catalog")
    corpus = build_corpus(files, options, "de")
    total = 400
    assert {c["domain"]: c["split"] for c in corpus.catalogs}["huge"] == "train"
    for split in ("dev", "devtest"):  # a tenth each, at most a quarter above it
        assert 0.1 * total <= len(corpus.splits[split]) <= 1.25 * 0.1 * total, split


def test_a_mo_defining_one_message_twice_is_skipped_naming_it(tmp_path: Path) -> None:
    # msgfmt never writes one; polib reads both entries of a hand-made one
    twice = tmp_path / "twice.mo"
    twice.write_bytes(
        by_hand([b"", b"Open", b"Open"], [MO_HEADER.encode(), "Öffnen".encode(), b"Offen"])
    )
    assert [(e.msgid, e.msgstr) for e in polib.mofile(str(twice))] == [
        ("Open", "Öffnen"),
        ("Open", "Offen"),
    ]
    fine = catalog(tmp_path / "fine.po", [entry("Close", "Schließen")])
    out = tmp_path / "corpus"
    result = luong("corpus", str(twice), str(fine), "--tgt-lang", "de", "--out", str(out),
                   "--dev", "0", "--devtest", "0")  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    reason = "duplicate message definition (msgid 'Open')"
    assert result.stderr.decode().splitlines() == [f"luong: skipped {twice}: {reason}"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["skipped_catalogs"] == [{"path": str(twice), "reason": reason}]
    assert (out / "train.tsv").read_text(encoding="utf-8") == "Close\tSchließen\n"
