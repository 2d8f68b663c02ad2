"""The translation memory (``luong.memory.translation_memory``): its readers (TSV, TMX 1.4, .po,
.mo), its index (exact, whitespace-collapsed and case-sensitive; fuzzy by rapidfuzz's ratio), the
placeholder check of a reused translation, and its faces: ``Translator.translations``,
``luong po --tm``, ``luong translate --tm`` and ``luong serve --tm``'s ``/api/translate``."""

from __future__ import annotations

import json
from pathlib import Path

import polib
import pytest
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, assert_one_line_error, luong, small_model
from rapidfuzz import fuzz

from luong.catalogs.entries import MachineText
from luong.catalogs.fill import fill_catalog
from luong.catalogs.po_file import decode_catalog
from luong.common.errors import LuongError
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.memory.translation_memory import (
    Match,
    MemoryEntry,
    Recall,
    TranslationMemory,
    read_entries,
)
from luong.server.app import ServedModel, create_app
from luong.translation.translator import Translator

TMX = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE tmx SYSTEM "tmx14.dtd">
<tmx version="1.4">
  <header srclang="en-US" datatype="plaintext" segtype="sentence" adminlang="en"
          o-tmf="po" creationtool="test" creationtoolversion="1"/>
  <body>
    <tu tuid="1">
      <tuv xml:lang="fr"><seg>Ouvrir le <bpt i="1">&lt;b&gt;</bpt>fichier<ept i="1">&lt;/b&gt;</ept></seg></tuv>
      <tuv xml:lang="en-US"><seg>Open the <bpt i="1">&lt;b&gt;</bpt>file<ept i="1">&lt;/b&gt;</ept></seg></tuv>
      <tuv xml:lang="de-DE"><seg>Die <bpt i="1">&lt;b&gt;</bpt>Datei<ept i="1">&lt;/b&gt;</ept> öffnen</seg></tuv>
    </tu>
    <tu>
      <tuv lang="EN"><seg>Save %s</seg></tuv>
      <tuv lang="DE"><seg>%s speichern</seg></tuv>
    </tu>
    <tu>
      <tuv xml:lang="en"><seg>English alone</seg></tuv>
    </tu>
  </body>
</tmx>
"""  # noqa: E501


def test_tmx_takes_the_tuv_of_each_language_by_xml_lang_or_lang(tmp_path: Path) -> None:
    path = tmp_path / "project.tmx"
    path.write_text(TMX, encoding="utf-8")
    assert read_entries(path, "en", "de") == [
        # the French tuv first in the file, the inline codes' text kept
        MemoryEntry("Open the <b>file</b>", "Die <b>Datei</b> öffnen", "project.tmx", 7),
        MemoryEntry("Save %s", "%s speichern", "project.tmx", 12),  # TMX 1.1-1.3's lang
    ]
    # no source language given: the header's srclang
    assert [e.target for e in read_entries(path, None, "fr")] == ["Ouvrir le <b>fichier</b>"]


def test_a_tmx_without_the_target_language_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "project.tmx"
    path.write_text(TMX, encoding="utf-8")
    with pytest.raises(LuongError) as error:
        read_entries(path, "en", "pt-BR")
    assert str(error.value) == (
        f"{path}: no <tuv> in the target language pt-BR (its languages: fr, en-US, de-DE, EN, "
        "DE, en)"
    )


def test_malformed_tmx_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.tmx"
    path.write_text(
        '<tmx version="1.4"><body>\n<tu><tuv xml:lang="en"><seg>a</seg>\n</tu></body></tmx>\n'
    )
    with pytest.raises(LuongError, match=rf"^{path}:3: not well-formed XML \(Opening and ending"):
        read_entries(path, "en", "de")
    path.write_text('<?xml version="1.0"?>\n<xliff/>\n')
    with pytest.raises(LuongError, match=rf"^{path}:2: expected a <tmx> document, got <xliff>$"):
        read_entries(path, "en", "de")


def test_tsv_without_a_tab_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "memory.tsv"
    path.write_text("Open\tÖffnen\n\nClose Schließen\n", encoding="utf-8")
    with pytest.raises(LuongError) as error:
        read_entries(path, None, None)
    assert str(error.value) == f"{path}:3: expected source<TAB>target, got a line with no tab"
    path.write_text("Open\tÖffnen\tx\n", encoding="utf-8")
    with pytest.raises(LuongError, match=r":1: expected source<TAB>target, got a line with 2"):
        read_entries(path, None, None)


CATALOG = r"""msgid ""
msgstr ""
"Language: de\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

msgid "Open"
msgstr "Öffnen"

#, fuzzy
msgid "Close"
msgstr "Zu"

msgid "Untranslated"
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

#~ msgid "Old"
#~ msgstr "Alt"
"""


@pytest.mark.parametrize("suffix", [".po", ".mo"])
def test_a_catalog_memory_holds_its_translated_non_fuzzy_entries(
    tmp_path: Path, suffix: str
) -> None:
    po = tmp_path / "de.po"
    po.write_text(CATALOG, encoding="utf-8")
    path = po
    if suffix == ".mo":
        path = tmp_path / "de.mo"
        polib.pofile(str(po)).save_as_mofile(str(path))
    pairs = sorted((e.source, e.target, e.origin) for e in read_entries(path, "en", "de"))
    name = path.name
    assert pairs == [
        ("%d file", "%d Datei", name),  # a plural entry: msgid and msgstr[0], ...
        ("%d files", "%d Dateien", name),  # ... msgid_plural and msgstr[1]
        ("Open", "Öffnen", name),
    ]
    with pytest.raises(
        LuongError, match=f"{name}: its Language is de, the model translates into fr"
    ):
        read_entries(path, "en", "fr")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # polib took "Datei öffne" from this (the closing quote missing), reused unmarked
        ('msgid "Open file"\nmsgstr "Datei öffnen\n', "line 2: end-of-line within string"),
        ('msgid Open file\nmsgstr "Datei öffnen"\n', "line 1: syntax error"),
        ('msgid "Open file"\nmsgstr "Datei öffnen" junk\n', "line 2: syntax error"),
        (
            'msgid "Open file"\nmsgstr "Datei öffnen"\n\nmsgid "Open file"\nmsgstr "X"\n',
            "duplicate message definition (msgid 'Open file')",
        ),
    ],
)
def test_a_po_memory_is_read_as_msgfmt_reads_a_catalog(
    tmp_path: Path, text: str, message: str
) -> None:
    po = tmp_path / "tm.po"
    po.write_text(text, encoding="utf-8")
    with pytest.raises(LuongError) as raised:
        read_entries(po, "en", "de")
    assert str(raised.value) == f"{po}: {message}"


def memory(*pairs: tuple[str, str], threshold: float = 75.0) -> TranslationMemory:
    return TranslationMemory(
        [MemoryEntry(s, t, "m.tsv", n) for n, (s, t) in enumerate(pairs, 1)], threshold
    )


def test_exact_recall_collapses_whitespace_and_keeps_case() -> None:
    tm = memory(("Open  the\nfile", "Datei öffnen"), ("open the file", "datei öffnen"))
    assert tm.recall(" Open the file ").exact == Match(
        "Open  the\nfile", "Datei öffnen", 100.0, "m.tsv"
    )
    assert tm.recall("open the file").exact == Match(
        "open the file", "datei öffnen", 100.0, "m.tsv"
    )
    assert tm.recall("OPEN THE FILE") == Recall(None)  # ratio 15.4: below the threshold


def test_fuzzy_matches_best_first_with_their_scores() -> None:
    tm = memory(
        ("Open the file", "Die Datei öffnen"),
        ("Open a file", "Eine Datei öffnen"),
        ("Open the files", "Die Dateien öffnen"),
        ("Close the window", "Das Fenster schließen"),
    )
    recall = tm.recall("Open the filer")
    assert recall.exact is None
    assert [(m.source, round(m.score, 2)) for m in recall.fuzzy] == [
        ("Open the file", 96.3),
        ("Open the files", 92.86),
        ("Open a file", 80.0),
    ]
    assert recall.fuzzy[0].score == fuzz.ratio("Open the filer", "Open the file")
    ties = memory(*[(f"Open {c}", c) for c in "abcde"]).recall("Open x")
    assert [m.source for m in ties.fuzzy] == ["Open a", "Open b", "Open c"]  # at most 3, in order


def test_a_reused_translation_must_keep_the_sources_placeholders() -> None:
    tm = memory(("Delete %s?", "Löschen?"), ("Delete %s?", "%s löschen?"), ("Save %s", "Speichern"))
    # the first entry of the key that keeps them is reused
    assert tm.recall("Delete %s?").exact == Match("Delete %s?", "%s löschen?", 100.0, "m.tsv")
    recall = tm.recall("Save %s")
    assert recall.exact is None  # not filled: the model translates it
    assert recall.fuzzy[0] == Match(
        "Save %s", "Speichern", 100.0, "m.tsv", "not reused: its translation lacks %s"
    )
    assert memory(("a\nb", "a b")).recall("a\nb").fuzzy[0].note == (
        "not reused: its translation lacks \\n"  # written as two characters: one line
    )
    assert memory(("%s of %d", "%d von %s")).recall("%s of %d").fuzzy[0].note == (
        "not reused: its translation takes its placeholders in another order"
    )


def test_the_memory_refuses_bad_arguments() -> None:
    with pytest.raises(LuongError, match=r"^threshold: expected a number in \(0, 100\], got 0$"):
        TranslationMemory([], threshold=0)
    with pytest.raises(LuongError, match="^limit: expected an int >= 1, got 0$"):
        TranslationMemory([], limit=0)


# -- the faces --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("memory") / "tiny"
    small_model(seed=4, src=SRC_SPACE).save_pretrained(path)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "src_lang": "en", "tgt_lang": "de"}))
    return path


def test_the_translator_owns_its_pairs_memory_and_glossary(model: Path, tmp_path: Path) -> None:
    """``with_resources`` reads the files once, in the model's pair (a TMX file's en and de
    units), checks the glossary's targets against the vocabulary, and leaves the translator
    it came from as it was; ``translations`` consults the owned memory unless told not to."""
    tmx = tmp_path / "project.tmx"
    tmx.write_text(
        '<?xml version="1.0"?><tmx version="1.4"><header srclang="en" datatype="plaintext" '
        'segtype="sentence" adminlang="en" creationtool="t" creationtoolversion="1" '
        'o-tmf="t"/><body><tu><tuv xml:lang="fr"><seg>Abc Fr</seg></tuv>'
        '<tuv xml:lang="de"><seg>Abc Def</seg></tuv><tuv xml:lang="en"><seg>abc def</seg>'
        "</tuv></tu></body></tmx>",
        encoding="utf-8",
    )
    (tmp_path / "terms.tsv").write_text("abc\t7\n", encoding="utf-8")
    plain = Translator.from_pretrained(model)
    owning = plain.with_resources([tmx], tmp_path / "terms.tsv", tm_threshold=80.0)
    assert owning.model is plain.model and plain.memory is None and plain.glossary is None
    assert owning.memory is not None and len(owning.memory) == 1
    assert owning.memory.threshold == 80.0
    assert owning.glossary is not None and owning.glossary.pairs() == (("abc", "7"),)
    (first, second) = owning.translations(["abc def", "abc deg"])
    assert (first.origin, first.texts) == ("memory", ["Abc Def"])  # de, not fr
    assert second.origin == "model" and second.matches
    (off,) = owning.translations(["abc def"], request=RequestOptions(memory=False))
    assert off.origin == "model"
    assert plain.with_resources().memory is None
    with pytest.raises(TypeError, match="memory: expected a list of file names"):
        plain.with_resources(str(tmx))  # type: ignore[arg-type]
    (tmp_path / "bad.tsv").write_text("abc\tÿ\n", encoding="utf-8")
    with pytest.raises(ValueError, match="ÿ"):
        plain.with_resources(glossary=tmp_path / "bad.tsv")  # a target it cannot write
    with pytest.raises(FileNotFoundError):
        plain.with_resources([tmp_path / "missing.tsv"])


def test_the_translator_decodes_only_what_the_memory_lacks(model: Path) -> None:
    translator = Translator.from_pretrained(model)
    tm = memory(("abc def", "Abc Def"), ("hij %s", "Hij"))
    search = SearchOptions(min_len=3)
    alone = list(translator.translations(["abc deg", "hij %s"], search))
    both = list(translator.translations(["abc def", "abc deg", "hij %s"], search, memory=tm))
    assert [(t.origin, t.texts, t.hypotheses) for t in both[:1]] == [("memory", ["Abc Def"], [])]
    assert [t.texts for t in both[1:]] == [t.texts for t in alone]  # decoded as without
    assert [t.origin for t in both] == ["memory", "model", "model"]
    assert [(m.source, round(m.score, 2)) for m in both[1].matches or ()] == [("abc def", 85.71)]
    assert both[2].matches[0].note == "not reused: its translation lacks %s"
    # constraints: one list per source given, the decoded sources' kept
    held = translator.translations(
        ["abc def", "abc deg"], SearchOptions(beam=2), constraints=[["9"], ["77"]], memory=tm
    )
    assert [("77" in t.texts[0], t.origin) for t in held] == [(False, "memory"), (True, "model")]
    off = list(
        translator.translations(["abc def"], search, RequestOptions(memory=False), memory=tm)
    )
    assert (off[0].origin, off[0].matches, len(off[0].hypotheses)) == ("model", None, 1)


POT = r"""msgid ""
msgstr ""
"Language: de\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

msgid "abc def"
msgstr ""

msgid "abc  def "
msgstr ""

msgid "abc deg"
msgstr ""

#, c-format
msgid "hij %s"
msgstr ""

msgid "j"
msgstr ""
"""

TSV = "abc def\tAbc Def\nabc de\tAbc De\nhij %s\tHij\n"


def test_luong_po_fills_from_memory_and_shows_fuzzy_matches(model: Path, tmp_path: Path) -> None:
    catalog, out, tm = tmp_path / "demo.pot", tmp_path / "demo.de.po", tmp_path / "project.tsv"
    catalog.write_text(POT, encoding="utf-8")
    tm.write_text(TSV, encoding="utf-8")
    result = luong(
        "po", str(model), str(catalog), "--out", str(out), "--min-len", "3", "--tm", str(tm)
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().splitlines()[1] == (
        "luong: 2 from memory, 2 with fuzzy matches, 3 by the model"
    )
    entries = {e.msgid: e for e in polib.pofile(out.read_text(encoding="utf-8"))}
    exact = entries["abc def"]
    assert (exact.msgstr, exact.flags, exact.tcomment) == (
        "Abc Def",
        [],  # the same text, reviewed: not fuzzy
        "luong: from memory (project.tsv)",
    )
    spaced = entries["abc  def "]  # the same key, another text: filled, for review
    assert (spaced.msgstr, spaced.flags, spaced.tcomment) == (
        "Abc Def",
        ["fuzzy"],
        "luong: from memory (project.tsv), its source differs in whitespace: review it",
    )
    fuzzy = entries["abc deg"]
    assert fuzzy.flags == ["fuzzy"]
    assert fuzzy.tcomment.splitlines()[1:] == [
        'luong: memory 92 (project.tsv): "abc de" -> "Abc De"',  # best first: 92.31
        'luong: memory 85 (project.tsv): "abc def" -> "Abc Def"',  # 85.71
        f"luong: machine translation by {model.name}, review it",
    ]
    assert fuzzy.tcomment.splitlines()[0].startswith("luong: confidence ")
    refused = entries["hij %s"]  # the memory's translation lost %s: the model's keeps it
    assert "%s" in refused.msgstr
    assert refused.tcomment.splitlines()[1] == (
        'luong: memory 100 (project.tsv), not reused: its translation lacks %s: "hij %s" -> "Hij"'
    )
    assert "memory" not in entries["j"].tcomment


def test_luong_po_and_translate_refuse_a_po_memory_msgfmt_rejects(
    model: Path, tmp_path: Path
) -> None:
    catalog, tm = tmp_path / "demo.pot", tmp_path / "tm.po"
    catalog.write_text(POT, encoding="utf-8")
    tm.write_text('msgid "abc"\nmsgstr "123\n', encoding="utf-8")
    result = luong("po", str(model), str(catalog), "--out", str(tmp_path / "o.po"), "--tm", str(tm))
    assert_one_line_error(result, f"luong: error: {tm}: line 2: end-of-line within string")
    assert not (tmp_path / "o.po").exists()
    result = luong("translate", str(model), "--tm", str(tm), stdin=b"abc\n")
    assert_one_line_error(result, f"luong: error: {tm}: line 2: end-of-line within string")


def test_luong_po_names_a_malformed_memory(model: Path, tmp_path: Path) -> None:
    catalog, tm = tmp_path / "demo.pot", tmp_path / "project.tmx"
    catalog.write_text(POT, encoding="utf-8")
    tm.write_text('<tmx version="1.4">\n<body>\n<tu>\n</tmx>\n')
    result = luong("po", str(model), str(catalog), "--out", str(tmp_path / "o.po"), "--tm", str(tm))
    assert_one_line_error(result, f"luong: error: {tm}:4: not well-formed XML (Opening and ending")
    assert not (tmp_path / "o.po").exists()
    result = luong("po", str(model), str(catalog), "--out", "o.po", "--tm-threshold", "0")
    assert_one_line_error(result, "--tm-threshold: expected a number in (0, 100], got 0.0")


def test_luong_translate_text_and_jsonl_with_memory(model: Path, tmp_path: Path) -> None:
    tm = tmp_path / "project.tsv"
    tm.write_text(TSV, encoding="utf-8")
    sources = b"abc def\nabc deg\n"
    text = luong("translate", str(model), "--min-len", "3", "--tm", str(tm), stdin=sources)
    plain = luong("translate", str(model), "--min-len", "3", stdin=sources)
    assert text.returncode == 0, text.stderr.decode()
    lines = text.stdout.decode().splitlines()
    assert lines == ["Abc Def", plain.stdout.decode().splitlines()[1]]
    jsonl = luong(
        "translate", str(model), "--min-len", "3", "--tm", str(tm), "--format", "jsonl",
        stdin=sources,
    )  # fmt: skip
    first, second = (json.loads(line) for line in jsonl.stdout.decode().splitlines())
    assert first == {
        "source": "abc def",
        "hypotheses": [{"text": "Abc Def"}],
        "origin": "memory",
        "matches": [
            {"source": "abc def", "target": "Abc Def", "score": 100.0, "origin": "project.tsv"},
            {"source": "abc de", "target": "Abc De", "score": 92.31, "origin": "project.tsv"},
        ],
    }
    assert (second["origin"], [m["score"] for m in second["matches"]]) == ("model", [92.31, 85.71])
    assert set(second["hypotheses"][0]) == {"text", "score", "confidence", "tokens", "attention"}


def test_the_servers_answer_says_its_origin(model: Path, tmp_path: Path) -> None:
    tm = tmp_path / "project.tsv"
    tm.write_text(TSV, encoding="utf-8")
    translator = Translator.from_pretrained(model).with_resources([tm])
    served = ServedModel("tiny", translator)
    body = {"sources": ["abc def", "j"], "min_len": 3}
    with TestClient(create_app([served], max_wait_ms=0)) as client:
        answer = client.post("/api/translate", json=body).json()
        off = client.post("/api/translate", json={**body, "memory": False}).json()
        schema = client.get("/openapi.json").json()
        libre = client.post("/translate", json={"q": "abc def", "source": "en", "target": "de"})
    first, second = answer["results"]
    assert (first["origin"], first["hypotheses"]) == ("memory", [{"text": "Abc Def"}])
    assert first["matches"][0] == {
        "source": "abc def", "target": "Abc Def", "score": 100.0, "origin": "project.tsv"
    }  # fmt: skip
    assert (second["origin"], second["matches"]) == ("model", [])
    assert "origin" not in off["results"][0]
    assert off["results"][0]["hypotheses"][0]["text"] != "Abc Def"
    # LibreTranslate's API takes it too; a memory's text has no model confidence
    assert libre.json() == {"translatedText": "Abc Def", "confidence": None}
    fields = schema["components"]["schemas"]["TranslateRequest"]["properties"]
    assert fields["memory"]["default"] is True


def test_min_confidence_keeps_the_memorys_matches_on_the_entries_it_leaves(
    model: Path, tmp_path: Path
) -> None:
    """An entry ``--min-confidence`` leaves for a person keeps the memory's fuzzy matches as
    comments (issue 53 item 6.2: they were dropped from exactly the entries a person does),
    its msgstr empty and no fuzzy flag."""
    catalog, out, tm = tmp_path / "demo.pot", tmp_path / "demo.de.po", tmp_path / "project.tsv"
    catalog.write_text(POT, encoding="utf-8")
    tm.write_text(TSV, encoding="utf-8")
    flags = ["--min-len", "3", "--tm", str(tm), "--min-confidence", "1"]
    result = luong("po", str(model), str(catalog), "--out", str(out), *flags)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().splitlines()[1] == (
        "luong: 2 from memory, 0 with fuzzy matches, 0 by the model; "
        "2 left untranslated keep their fuzzy matches"
    )
    entries = {e.msgid: e for e in polib.pofile(out.read_text(encoding="utf-8"))}
    left = entries["abc deg"]
    assert (left.msgstr, left.flags, left.tcomment.splitlines()) == (
        "",
        [],
        [
            'luong: memory 92 (project.tsv): "abc de" -> "Abc De"',
            'luong: memory 85 (project.tsv): "abc def" -> "Abc Def"',
        ],
    )
    refused = entries["hij %s"]
    assert (refused.msgstr, refused.flags, refused.tcomment) == (
        "",
        ["c-format"],
        'luong: memory 100 (project.tsv), not reused: its translation lacks %s: "hij %s" -> "Hij"',
    )
    assert (entries["j"].msgstr, entries["j"].tcomment) == ("", "")  # no match: as it was


LEFT = r"""msgid ""
msgstr ""
"Language: de\n"
"Content-Type: text/plain; charset=UTF-8\n"

# a person's note
msgid "abc deg"
msgstr ""

msgid "abc dex"
msgstr ""
"""


def test_an_entry_left_too_long_or_unsure_keeps_its_matches_once(tmp_path: Path) -> None:
    """Left too long or below the minimum, an entry keeps the person's comments and gets the
    matches once: filled again, the older match comments are replaced, not repeated."""
    tm_file = tmp_path / "project.tsv"
    tm_file.write_text("abc de\tAbc De\n", encoding="utf-8")
    tm = TranslationMemory.read([tm_file], "en", "de")

    def unsure(lines: list[str]) -> list[MachineText]:
        return [MachineText("x", 0.5) for _ in lines]

    def fill(text: str) -> str:
        filled = fill_catalog(
            text,
            unsure,
            target="de",
            model="m",
            min_confidence=0.9,
            memory=tm,
            too_long=lambda line: "too long" if line.endswith("x") else None,
        )
        assert filled.summary.low_confidence == 1 and filled.summary.left_with_matches == 2
        return filled.text

    once = fill(LEFT)
    assert fill(once) == once
    entries = {e.msgid: e for e in polib.pofile(once)}
    assert entries["abc deg"].tcomment.splitlines() == [
        "a person's note",
        'luong: memory 92 (project.tsv): "abc de" -> "Abc De"',
    ]
    assert entries["abc dex"].tcomment == 'luong: memory 92 (project.tsv): "abc de" -> "Abc De"'
    assert [e.msgstr for e in entries.values()] == ["", ""]


def test_the_readmes_wdiff_example() -> None:
    data = Path(__file__).parent / "data" / "catalogs"
    tm = TranslationMemory.read([data / "wdiff.de.po"], "en", "de")
    text = decode_catalog((data / "wdiff.pot").read_bytes())
    filled = fill_catalog(
        text, lambda lines: ["x"] * len(lines), target="de", model="translation", memory=tm
    )
    assert filled.summary.memory_line() == "115 from memory, 4 with fuzzy matches, 4 by the model"
    entries = {e.msgid: e for e in polib.pofile(filled.text)}
    changed = entries["  %d %.0f%% changed"]
    assert (changed.tcomment, changed.flags, changed.msgstr_plural) == (
        "luong: from memory (wdiff.de.po)",
        ["c-format"],
        {0: "  %d %.0f%% verändert", 1: "  %d %.0f%% verändert"},
    )
    statistics = entries["  -s, --statistics           say how many words deleted, inserted etc.\n"]
    assert statistics.tcomment.splitlines()[0] == (
        "luong: memory 100 (wdiff.de.po), not reused: its translation adds \\n: "
        '"  -s, --statistics           say how many words deleted, inserted etc.\\n" -> '
        '"  -s, --statistics           Anzahl gelöschter, eingefügter etc. Wörter\\n'
        '                             ausgeben\\n"'
    )
