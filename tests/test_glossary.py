"""Glossaries (luong.memory.glossary): TSV, CSV and TBX files read with errors that name their line;
terms found at word boundaries with the case rule, overlaps to the longest then the leftmost,
none inside a placeholder span; the target terms held by the constrained search on every
face (``Translator.translations``, ``luong translate``, ``luong po``, ``/api/translate``,
LibreTranslate's ``glossary`` field); and LibreTranslate's ``confidence``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polib
import pytest
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, assert_one_line_error, luong, output_lines, small_model

import luong.cli.serve as serve_command
from luong.cli import main as cli_main
from luong.common.errors import LuongError
from luong.config.request import RequestOptions
from luong.config.search import MAX_CONSTRAINT_PIECES, OptionError, SearchOptions
from luong.memory.glossary import Glossary, Term, enforced_terms
from luong.memory.glossary_files import parse_glossary, read_glossary, tbx_glossary
from luong.server.app import ServedModel, create_app
from luong.server.libretranslate import parse_request
from luong.service.texts import line_groups, split_lines
from luong.translation.confidence import confidence, joint_confidence
from luong.translation.translator import Translator

# The tiny model's vocabularies: sources of a-j and spaces, outputs of digits and "-". An
# untrained model writes "" for most sources: whatever a term's target is in its output, the
# constrained search put it there.
SOURCES = ["abc de", "j", "hij a bc", "abcd"]
PAIRS = (("abc", "777"), ("bc", "99"))


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator(small_model(4, src=SRC_SPACE))


# -- files --------------------------------------------------------------------------------


def test_a_tsv_file_rows_variants_comments_and_a_header(tmp_path: Path) -> None:
    path = tmp_path / "terms.tsv"
    path.write_text(
        "source\ttarget\n# a comment\n\nprinter\tDrucker\tDruckers\tDruckern\n"
        " keyring \t Schlüsselbund \nprinter\tPrinter\n",
        encoding="utf-8",
    )
    glossary = read_glossary(path)
    assert glossary.terms == (
        Term("printer", "Drucker", ("Druckers", "Druckern", "Printer"), f"{path}:4"),
        Term("keyring", "Schlüsselbund", (), f"{path}:5"),
    )
    assert glossary.pairs() == (("printer", "Drucker"), ("keyring", "Schlüsselbund"))


def test_a_csv_file_reads_quoted_cells(tmp_path: Path) -> None:
    path = tmp_path / "terms.csv"
    text = '\ufeff"Save As...",Speichern unter\n"print, queue","Druck, Warteschlange"\n'
    path.write_bytes(text.encode())
    assert read_glossary(path).pairs() == (
        ("Save As...", "Speichern unter"),
        ("print, queue", "Druck, Warteschlange"),
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("g.tsv", "a\tb\nprinter\n", "g.tsv:2: expected a source term and a target term, "
         "tab-separated; the target term is missing (one cell 'printer')"),
        ("g.tsv", "a\tb\n\nprinter\t \n", "g.tsv:3: expected a source term and a target term, "
         "tab-separated; the target term is missing (an empty one)"),
        ("g.csv", 'a,b\n"x, y",z\n,Drucker\n', "g.csv:3: the source term is empty"),
        ("g.csv", 'a,b\n"open,x\n', "g.csv:2: unexpected end of data"),
        ("g.tsv", "%s file\tDatei\n", "g.tsv:1: the source term '%s file' holds the "
         "placeholder '%s'; placeholders are carried over as they are, never terms"),
        ("g.tsv", "file\t<b>Datei</b>\n", "g.tsv:1: the target term '<b>Datei</b>' holds the "
         "placeholder '<b>'; placeholders are carried over as they are, never terms"),
        ("g.tsv", "file\tDa\x07tei\n", "g.tsv:1: the target term 'Da\\x07tei' holds a line "
         "break or a control character"),
        ("g.tsv", "# only a comment\n", "g.tsv: holds no term (a row: source term, target "
         "term)"),
        ("g.tsv", "a\tb\n\xff\tc\n", "g.tsv:2: not valid UTF-8 (invalid start byte)"),
        ("g.xlsx", "a\tb\n", "g.xlsx: expected a glossary file named .tsv, .tab, .txt, .csv "
         "or .tbx, got .xlsx"),
    ],
)  # fmt: skip
def test_a_malformed_tsv_or_csv_is_named_with_its_line(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1") if "\xff" in content else content.encode())
    with pytest.raises(LuongError) as caught:
        read_glossary(path)
    assert str(caught.value) == f"{tmp_path}/{message}"


TBX = """<?xml version="1.0" encoding="UTF-8"?>
<martif type="TBX-Basic" xml:lang="en">
<martifHeader><fileDesc><sourceDesc><p>test</p></sourceDesc></fileDesc></martifHeader>
<text><body>
<termEntry id="c1">
  <langSet xml:lang="en"><tig><term>printer</term></tig></langSet>
  <langSet xml:lang="de-DE">
    <tig><term>Drucker</term></tig>
    <ntig><termGrp><term>Druckers</term></termGrp></ntig>
  </langSet>
</termEntry>
<termEntry id="c2">
  <langSet xml:lang="en"><ntig><termGrp><term>keyring</term></termGrp></ntig>
    <ntig><termGrp><term>key ring</term></termGrp></ntig></langSet>
  <langSet xml:lang="de">
    <tig><term>Schlüsselring</term>
      <termNote type="administrativeStatus">deprecatedTerm-admn-sts</termNote></tig>
    <ntig><termGrp><term>Schlüsselbund</term></termGrp></ntig>
  </langSet>
</termEntry>
<termEntry id="c3"><langSet xml:lang="en"><tig><term>trash</term></tig></langSet></termEntry>
</body></text></martif>
"""


def test_a_tbx_file_reads_tig_and_ntig_terms_in_the_models_pair(tmp_path: Path) -> None:
    path = tmp_path / "terms.tbx"
    path.write_text(TBX, encoding="utf-8")
    expected = (
        Term("printer", "Drucker", ("Druckers",), f"{path}:6"),
        Term("keyring", "Schlüsselbund", (), f"{path}:13"),
        Term("key ring", "Schlüsselbund", (), f"{path}:14"),
    )
    # the languages of the martif (en) and the one other of the file; or the model's pair,
    # "de" matching de-DE; a concept without German (c3) and a deprecated term left out
    assert read_glossary(path).terms == expected
    assert read_glossary(path, "en", "de").terms == expected
    with pytest.raises(LuongError, match=r"holds no term from en to fr \(its languages: de, en\)"):
        read_glossary(path, "en", "fr")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<martif>\n<text><body>\n<termEntry></body>", "t.tbx:3: not XML"),
        ("<tbx xml:lang='en'/>", "t.tbx:1: expected TBX (a martif root element: TBX-Basic or "
         "the 2008 core structure), got <tbx>"),
        ("<martif xml:lang='en'><text><body><termEntry>\n<langSet><tig><term>a</term></tig>"
         "</langSet></termEntry></body></text></martif>", "t.tbx:2: a langSet without xml:lang"),
        ("<martif xml:lang='en'><text><body><termEntry>\n<langSet xml:lang='en'><tig><term>a"
         "</term></tig></langSet>\n<langSet xml:lang='de'><tig><term> </term></tig></langSet>"
         "</termEntry></body></text></martif>", "t.tbx:3: an empty term"),
        ("<martif><text><body><termEntry><langSet xml:lang='en'><tig><term>a</term></tig>"
         "</langSet></termEntry></body></text></martif>", "t.tbx: the martif names no source "
         "language (xml:lang) and none was given"),
    ],
)  # fmt: skip
def test_a_malformed_tbx_is_named_with_its_xml_line(text: str, message: str) -> None:
    with pytest.raises(LuongError) as caught:
        tbx_glossary(text.encode(), "t.tbx")
    assert str(caught.value).startswith(message)


# -- matching -----------------------------------------------------------------------------

TERMS = parse_glossary(
    "printer\tDrucker\nfile\tDatei\nprint queue\tDruckwarteschlange\nqueue\tWarteschlange\n"
    "print\tdrucken\nGNOME\tGNOME\nTrash\tPapierkorb\n.NET\t.NET\ne-mail\tE-Mail\n"
)


def found(text: str) -> list[tuple[str, str]]:
    return [(text[m.start : m.end], m.term.source) for m in TERMS.find(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # whole words: no letter, digit, _ or - on either side
        ("file. (file) user's file", [("file", "file")] * 3),
        ("profile files file-based file_name 2file", []),
        ("Send E-Mail", [("E-Mail", "e-mail")]),
        ("ASP.NET and .NET", [(".NET", ".NET")]),
        # case: a lower-case term in any case, one with a capital only as written
        ("Add Printer, PRINTER", [("Printer", "printer"), ("PRINTER", "printer")]),
        ("gnome, Gnome, GNOME", [("GNOME", "GNOME")]),
        ("Empty trash, Empty Trash", [("Trash", "Trash")]),
        # spaces inside a term match any whitespace
        ("print  queue", [("print  queue", "print queue")]),
    ],
)
def test_terms_match_whole_words_with_the_case_rule(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert found(text) == expected


def test_overlapping_terms_go_to_the_longest_then_the_leftmost() -> None:
    # "print queue" over "queue" and "print"; a shorter term still counts elsewhere
    assert found("Print queue of the printer, print it") == [
        ("Print queue", "print queue"),
        ("printer", "printer"),
        ("print", "print"),
    ]
    # equal lengths overlapping: the leftmost ("aa bb" at 0, not "bb cc" at 3)
    glossary = Glossary.of([("bb cc", "2"), ("aa bb", "1")])
    assert [(m.start, m.term.target) for m in glossary.find("aa bb cc")] == [(0, "1")]


def test_a_term_inside_a_placeholder_span_does_not_match() -> None:
    text = "%(printer)s {file} --file https://x.org/file <b>printer</b> %sfile git add <file>"
    # not inside %(printer)s, {file}, --file or a URL; beside a tag or a printf directive a
    # word of its own; in a usage message's metavariable <file> (not a span: translated)
    assert [(m.start, m.term.source) for m in TERMS.find(text)] == [
        (text.index("printer<"), "printer"),
        (text.index("%sfile") + 2, "file"),
        (text.index("<file>") + 1, "file"),
    ]


def test_enforced_terms_once_each_after_the_given_phrases_within_the_bound() -> None:
    vocab = small_model(0).tgt_vocab
    glossary = Glossary.of([("a", "1"), ("b", "22"), ("c", "1"), ("d", "9" * 60)])
    terms = enforced_terms(glossary, "a b a c d d", vocab, given=["22"])
    assert [t.target for t in terms] == ["1", "9" * 60]  # "22" given, "1" once
    many = Glossary.of([(f"w{i}", str(i) * 60) for i in range(10)])
    kept = enforced_terms(many, " ".join(f"w{i}" for i in range(10)), vocab)
    assert sum(len(t.target) for t in kept) <= MAX_CONSTRAINT_PIECES and len(kept) == 3


# -- the request path ---------------------------------------------------------------------


def test_the_request_field_takes_pairs_and_refuses_sampling() -> None:
    request = RequestOptions(glossary=[["abc", "777"], ("bc", "99")])  # type: ignore[arg-type]
    assert request.glossary == PAIRS and hash(request)
    with pytest.raises(OptionError, match=r"glossary: expected a list of \[source term, "):
        RequestOptions(glossary=[["abc"]])  # type: ignore[list-item]
    with pytest.raises(OptionError, match="sample: a glossary's terms are held by constrained"):
        request.check_search(SearchOptions(sample=True))


@pytest.mark.parametrize("placeholders", ["off", "mask", "constrain"])
@pytest.mark.parametrize("beam", [1, 3])
def test_every_output_holds_the_target_of_each_term_its_source_holds(
    translator: Translator, placeholders: str, beam: int
) -> None:
    request = RequestOptions(placeholders=placeholders, glossary=PAIRS)
    translations = list(translator.translations(SOURCES, SearchOptions(beam=beam), request))
    assert [[t.target for t in tr.terms] for tr in translations] == [["777"], [], ["99"], []]
    assert "777" in translations[0].texts[0] and "99" in translations[2].texts[0]
    plain = translator.translate(SOURCES, SearchOptions(beam=beam))
    assert "777" not in plain[0] and "99" not in plain[2]  # the glossary put them there


def test_a_glossary_beside_constraints_and_a_placeholder(translator: Translator) -> None:
    request = RequestOptions(placeholders="constrain", glossary=PAIRS)
    [out] = translator.translate(["abc %d j"], SearchOptions(beam=3), request, constraints=[["5"]])
    assert "777" in out and "5" in out and out.count("%d") == 1


def test_a_target_the_vocabulary_cannot_spell_is_one_error_naming_it(
    translator: Translator, tmp_path: Path
) -> None:
    request = RequestOptions(glossary=(("abc", "777"), ("de", "Datei")))
    with pytest.raises(LuongError) as caught:
        translator.translate(SOURCES, None, request)
    assert str(caught.value) == (
        "glossary[1]: the target term 'Datei' has symbols the model's target vocabulary "
        "cannot produce: ['D', 'a', 't', 'e', 'i']; correct the term or leave it out"
    )


# -- the command line ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glossary") / "tiny"
    small_model(4, src=SRC_SPACE).save_pretrained(path)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "src_lang": "en", "tgt_lang": "de"}))
    return path


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_luong_translate_glossary_text_and_jsonl(folder: Path, tmp_path: Path) -> None:
    sources = write(tmp_path / "in.txt", "\n".join(SOURCES) + "\n")
    glossary = write(tmp_path / "g.tsv", "abc\t777\nbc\t99\n")
    args = ["translate", str(folder), "--input", sources, "--glossary", glossary]
    lines = output_lines(luong(*args))
    assert len(lines) == 4 and "777" in lines[0] and "99" in lines[2]
    records = [json.loads(line) for line in output_lines(luong(*args, "--format", "jsonl"))]
    assert [r["glossary"] for r in records] == [
        [{"source": "abc", "target": "777"}], [], [{"source": "bc", "target": "99"}], []
    ]  # fmt: skip
    bad = write(tmp_path / "bad.tsv", "abc\t777\nde\n")
    assert_one_line_error(luong(*args[:-1], bad), f"{bad}:2: expected a source term and a")
    result = luong(*args, "--sample", "--seed", "1")
    assert_one_line_error(result, "--glossary: its terms are held by constrained beam search")


CATALOG = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Language: de\\n"

msgid "abc de"
msgstr ""

msgid "hij a bc"
msgstr ""
"""


def test_luong_po_glossary_fills_each_entry_with_its_terms(folder: Path, tmp_path: Path) -> None:
    catalog, out = tmp_path / "demo.pot", tmp_path / "demo.de.po"
    catalog.write_text(CATALOG, encoding="utf-8")
    glossary = tmp_path / "g.tbx"
    glossary.write_text(
        '<martif xml:lang="en"><text><body><termEntry><langSet xml:lang="en"><tig><term>abc'
        '</term></tig></langSet><langSet xml:lang="de"><tig><term>777</term></tig></langSet>'
        "</termEntry></body></text></martif>",
        encoding="utf-8",
    )
    result = luong("po", str(folder), str(catalog), "--out", str(out), "--glossary", str(glossary))
    assert result.returncode == 0, result.stderr.decode()
    filled = {e.msgid: e.msgstr for e in polib.pofile(str(out))}
    assert "777" in filled["abc de"] and "777" not in filled["hij a bc"]


def test_luong_serve_glossary_is_for_one_target_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, target in (("de", "de"), ("fr", "fr")):
        model = small_model(4, src=SRC_SPACE)
        model.src_lang, model.tgt_lang = "en", target
        model.save_pretrained(tmp_path / name)
    glossary = write(tmp_path / "g.tsv", "abc\t777\n")
    monkeypatch.setattr(serve_command.uvicorn.Server, "run", lambda self: None)
    assert cli_main(["serve", str(tmp_path / "de"), "--port", "0", "--glossary", glossary]) == 0
    result = luong("serve", str(tmp_path / "de"), str(tmp_path / "fr"), "--glossary", glossary)
    assert_one_line_error(result, "--glossary: the models translate into de, fr; a glossary")


# -- the server ---------------------------------------------------------------------------


def served(translator: Translator) -> list[ServedModel]:
    model = translator.model
    model.src_lang, model.tgt_lang = "en", "de"  # type: ignore[union-attr]
    return [ServedModel("tiny", Translator(model, search=SearchOptions(beam=3)))]


def test_api_translate_glossary_field_and_the_default_it_extends(translator: Translator) -> None:
    app = create_app(served(translator), max_wait_ms=0, glossary=(("bc", "99"), ("de", "55")))
    with TestClient(app) as client:
        schema = client.get("/openapi.json").json()["components"]["schemas"]
        field = schema["TranslateRequest"]["properties"]["glossary"]
        assert field["items"] == {"items": {"type": "string"}, "maxItems": 2, "minItems": 2,
                                  "type": "array"}  # fmt: skip
        body = {"sources": SOURCES, "glossary": [["abc", "777"], ["de", "44"]]}
        results = client.post("/api/translate", json=body).json()["results"]
        # the request's "de" -> "44" wins over the default's "55"; the default's "bc" holds
        assert [r["glossary"] for r in results] == [
            [{"source": "abc", "target": "777"}, {"source": "de", "target": "44"}],
            [],
            [{"source": "bc", "target": "99"}],
            [],
        ]
        assert "777" in results[0]["hypotheses"][0]["text"]
        assert "44" in results[0]["hypotheses"][0]["text"]
        assert "99" in results[2]["hypotheses"][0]["text"]
        bad = client.post("/api/translate", json={"sources": ["abc"], "glossary": [["abc", "x"]]})
        assert bad.status_code == 422 and bad.json()["detail"].startswith(
            "glossary[0]: the target term 'x' has symbols"
        )
        wrong = client.post("/api/translate", json={"sources": ["a"], "glossary": [["abc"]]})
        assert wrong.status_code == 422
        sampled = client.post("/api/translate", json={"sources": ["a"], "sample": True})
        assert sampled.status_code == 422 and "a glossary's terms" in sampled.json()["detail"]


def test_libretranslate_glossary_field_and_confidence(translator: Translator) -> None:
    with TestClient(create_app(served(translator), max_wait_ms=0)) as client:
        asked = {"q": ["abc de", "hij a bc\nabc", ""], "source": "en", "target": "de"}
        plain = client.post("/translate", json=asked).json()
        for glossary in ([["abc", "777"], ["bc", "99"]], "abc\t777\nbc\t99\n"):
            answer = client.post("/translate", json={**asked, "glossary": glossary}).json()
            first, second, empty = answer["translatedText"]
            assert "777" in first and "99" in second.split("\n")[0] and "777" in second
            assert empty == "" and answer["confidence"][2] is None
            assert all(0.0 <= c <= 1.0 for c in answer["confidence"][:2])
        assert set(plain) == {"translatedText", "confidence"}
        # the confidence is the model's in its output; of a text of two lines, its tokens'
        expected = [
            translator.translations([t], SearchOptions(beam=3)).__next__().hypotheses[0]
            for t in ("abc de", "hij a bc", "abc")
        ]
        assert plain["confidence"][0] == round(confidence(expected[0]), 6)
        assert plain["confidence"][1] == round(joint_confidence(expected[1:]) or 0.0, 6)
        form = client.post("/translate", data={"q": "abc", "source": "en", "target": "de",
                                               "glossary": "abc\t777"}).json()  # fmt: skip
        assert "777" in form["translatedText"] and isinstance(form["confidence"], float)
        bad = client.post("/translate", json={**asked, "glossary": "abc\n"})
        assert bad.status_code == 400 and bad.json()["error"] == (
            "Invalid request: glossary:1: expected a source term and a target term, "
            "tab-separated; the target term is missing (one cell 'abc')"
        )


def test_joint_confidence_and_line_groups() -> None:
    split = split_lines(["a\n\nb", "", "c"])
    assert line_groups(split) == [[0, 1], [], [2]]
    assert joint_confidence([]) is None
    asked = parse_request("application/json", b'{"q": "a", "source": "en", "target": "de"}', {})
    assert asked.glossary == ()
    model = Translator(small_model(1, src=SRC_SPACE))
    hyps = [next(model.translations([t])).hypotheses[0] for t in ("abc", "hij a")]
    tokens = [len(h.log_probs) for h in hyps]
    logs = [math.log(confidence(h)) * n for h, n in zip(hyps, tokens, strict=True)]
    weighted = math.exp(sum(logs) / sum(tokens))
    assert joint_confidence(hyps) == pytest.approx(weighted, rel=1e-12)
    assert joint_confidence(hyps[:1]) == confidence(hyps[0])
