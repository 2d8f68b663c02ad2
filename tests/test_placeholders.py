"""Placeholders (``luong.translation.placeholders``): each pattern's spans, and translation with
masking that keeps every source span exactly as often as the source holds it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from helpers import SRC_SPACE, luong, small_model
from hypothesis import given, settings
from hypothesis import strategies as st

import luong.translation.placeholder_search as placeholder_search
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.data.vocab import Vocab
from luong.search import decode, hypothesis_text
from luong.translation.placeholder_search import (
    CONSTRAINED_BEAM,
    keep_placeholders,
    spellable_spans,
    translate_constrained,
    translate_masked,
    with_placeholders,
)
from luong.translation.placeholders import (
    find_placeholders,
    keeps_placeholders,
    mask_source,
    restore,
)
from luong.translation.translator import Translator, translate


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("Copy %s to %d files (%5.2f%%)", [("%s", "printf"), ("%d", "printf"),
                                          ("%5.2f", "printf"), ("%%", "printf")]),
        ("%1$s of %2$lu, %-10s", [("%1$s", "printf"), ("%2$lu", "printf"), ("%-10s", "printf")]),
        ("failed: %m", [("%m", "printf")]),
        ("100% sure", []),
        ("Hello %(name)s, %(n)d new", [("%(name)s", "python"), ("%(n)d", "python")]),
        ("{name} has {0} of {} ({0:.2f})", [("{name}", "braces"), ("{0}", "braces"),
                                            ("{}", "braces"), ("{0:.2f}", "braces")]),
        ('<b>Save</b> <br/> <a href="x y">here</a>', [("<b>", "tag"), ("</b>", "tag"),
                                                      ("<br/>", "tag"),
                                                      ('<a href="x y">', "tag"),
                                                      ("</a>", "tag")]),
        ("a < b > c", []),
        ("use --dry-run or --color=auto, not a--b", [("--dry-run", "option"),
                                                     ("--color", "option")]),
        ("git add <file>... <B>x</B> <item>y</item> <note id=1> <x/>",
         [("<B>", "tag"), ("</B>", "tag"), ("<item>", "tag"), ("</item>", "tag"),
          ("<note id=1>", "tag"), ("<x/>", "tag")]),
        ("see https://example.org/a?b=c.", [("https://example.org/a?b=c", "url")]),
        ("line\\nnext\nthird\r\n", [("\\n", "escape"), ("\n", "newline"), ("\r\n", "newline")]),
    ],
)  # fmt: skip
def test_each_pattern_finds_its_spans(text: str, spans: list[tuple[str, str]]) -> None:
    found = find_placeholders(text)
    assert [(s.text, s.kind) for s in found] == spans
    assert all(text[s.start : s.end] == s.text for s in found)


def test_spans_are_leftmost_longest_and_do_not_overlap() -> None:
    # At "%(": python's "%(a)s" is longer than nothing; at "{": "{0:>5}" whole.
    assert [s.text for s in find_placeholders("%(a)s{0:>5}%%s")] == ["%(a)s", "{0:>5}", "%%", "s"][
        :3
    ]
    with pytest.raises(TypeError, match="text: expected a str, got int"):
        find_placeholders(3)  # type: ignore[arg-type]


def test_a_bad_mask_is_refused() -> None:
    with pytest.raises(ValueError, match="mask: expected one placeholder without spaces .*'X'"):
        mask_source("a %s", "X")


def test_restore_puts_each_span_at_its_aligned_word() -> None:
    masked = mask_source("Delete <b>%s</b> now?")
    assert masked.text == "Delete %d %d %d now?"
    assert masked.words == [1, 2, 3]
    # "Jetzt %d löschen?": output word 0 from source word 4, 1 from the masks, 2 from 0.
    restored = restore(masked, "Jetzt %d löschen?", [(4, 0), (2, 1), (0, 2)])
    assert restored == "Jetzt <b>%s</b> löschen?"


def test_restore_deals_arguments_taken_in_order_in_the_sources_order() -> None:
    # The attention puts %d's mask first and %s's later: the places stand, %s comes first
    # (msgfmt --check-format: "Copy %s to %d" -> "%d ... %s" is an error). %2$s and %1$s
    # name their arguments: they go where the attention puts them.
    links = [(3, 0), (4, 1), (2, 2), (1, 3), (0, 4)]
    output = "%d Dateien nach %d kopieren"
    assert restore(mask_source("Copy %s to %d files"), output, links) == (
        "%s Dateien nach %d kopieren"
    )
    assert restore(mask_source("Copy %1$s to %2$s files"), output, links) == (
        "%2$s Dateien nach %1$s kopieren"
    )
    assert not keeps_placeholders("Copy %s to %d", "%d nach %s")
    assert keeps_placeholders("Copy %1$s to %2$s", "%2$s nach %1$s")
    assert keeps_placeholders("<b>%s</b> of %d %%", "%% <b>%s</b> von %d")
    assert not keeps_placeholders("{} of {:.2f}", "{:.2f} von {}")


WORDS = st.sampled_from(["ab", "cd", "e", "fghij", "a.", "b,", "100%", "c:", "--", "x<y", "}"])
SPANS = st.sampled_from([
    "%s", "%d", "%1$s", "%5.2f", "%%", "%m", "%(name)s", "{0}", "{name}", "{}", "<b>", "</b>",
    "<br/>", '<a href="x y">', "--dry-run", "https://example.org/a", "\\n",
])  # fmt: skip
PIECE = st.tuples(st.one_of(WORDS, SPANS), st.sampled_from(["", " ", "  "]))
MODEL = small_model(src=SRC_SPACE, tgt=Vocab(list("abcdefghij %s{}<>/-n0$.")))


@settings(max_examples=60, deadline=None)
@given(st.lists(PIECE, max_size=8), st.integers(0, 3))
def test_masking_keeps_every_span_exactly_as_often(
    pieces: list[tuple[str, str]], seed: int
) -> None:
    text = "".join(a + b for a, b in pieces)
    options = SearchOptions(beam=2, nbest=2, max_len=30) if seed % 2 else SearchOptions(max_len=30)
    outputs = translate_masked(MODEL, [text], options)[0]
    expected = Counter(s.text for s in find_placeholders(text))
    for output in outputs:
        assert Counter(s.text for s in find_placeholders(output)) == expected, (text, output)
        assert keeps_placeholders(text, output), (text, output)  # and %s, %d, {} in order


def test_translate_align_writes_a_line_per_input(tmp_path: Path) -> None:
    model = small_model(src=SRC_SPACE, tgt=Vocab(list("abcdefghij ")))
    model.save_pretrained(tmp_path / "m")
    lines = ["ab cd", "", "j", "abc de f"]
    result = luong("translate", str(tmp_path / "m"), "--align", "--max-len", "9",
                   stdin="\n".join(lines).encode())  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode().split("\n")
    assert out[-1] == "" and len(out[:-1]) == len(lines)
    assert out[1] == ""
    for source, line in zip(lines, out[:-1], strict=True):
        if not source:
            continue
        text, links = line.split("\t")
        targets = sorted(int(link.split("-")[1]) for link in links.split())
        assert targets == list(range(len(text.split())))
    both = luong("translate", str(tmp_path / "m"), "--align", "--placeholders", "mask",
                 stdin=b"ab\n")  # fmt: skip
    assert both.returncode == 2
    assert (
        both.stderr.decode()
        .strip()
        .endswith("luong: error: --align: not with --placeholders mask; expected off")
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECE, max_size=8), st.lists(PIECE, max_size=8), st.randoms())
def test_restore_keeps_every_span_whatever_the_model_wrote(
    source: list[tuple[str, str]], output: list[tuple[str, str]], random: object
) -> None:
    # A fake search result: any output (masks, spans and broken pieces of its own included)
    # and any alignment of its words.
    text = "".join(a + b for a, b in source)
    written = "".join(a + b for a, b in output)
    masked = mask_source(text)
    sources, words = len(masked.text.split()), len(written.split())
    links = [(random.randrange(sources), j) for j in range(words)] if sources else []  # type: ignore[attr-defined]
    restored = restore(masked, written, links)
    expected = Counter(s.text for s in find_placeholders(text))
    assert Counter(s.text for s in find_placeholders(restored)) == expected, (text, written)
    assert keeps_placeholders(text, restored), (text, written)


@settings(max_examples=60, deadline=None)
@given(st.lists(PIECE, max_size=8), st.integers(0, 3))
def test_constraints_keep_every_span_exactly_as_often(
    pieces: list[tuple[str, str]], seed: int
) -> None:
    text = "".join(a + b for a, b in pieces)
    options = SearchOptions(beam=3, nbest=2, max_len=30) if seed % 2 else SearchOptions(beam=2)
    outputs = translate_constrained(MODEL, [text], options)[0]
    expected = Counter(s.text for s in find_placeholders(text))
    assert len(outputs) == (options.nbest if text.strip() else 0)
    for output in outputs:
        assert Counter(s.text for s in find_placeholders(output)) == expected, (text, output)
        assert keeps_placeholders(text, output), (text, output)  # and %s, %d, {} in order


def test_constraints_search_again_only_where_the_beam_missed_a_span() -> None:
    # "ab cd": no span, the beam's output stands; %s, {} and <b> are spelled by MODEL's
    # target symbols: the constrained search holds them; %1$s is not ('1'): masked instead.
    texts = ["ab cd", "ab %s cd", "{} e <b>f", "ab %1$s"]
    options = SearchOptions(beam=4)
    plain = translate(MODEL, texts, options)
    assert keeps_placeholders(texts[0], plain[0])
    assert not any(keeps_placeholders(t, o) for t, o in zip(texts[1:], plain[1:], strict=True))
    phrases = [["%s"], ["{}", "<b>"]]
    wider = SearchOptions(beam=CONSTRAINED_BEAM)  # the constrained search's narrowest beam
    searched = decode(MODEL, texts[1:3], wider, constraints=phrases, exact=True)
    by_search = [hypothesis_text(MODEL, hyps[0]) for hyps in searched]
    assert all(keeps_placeholders(t, o) for t, o in zip(texts[1:3], by_search, strict=True))
    masked = translate_masked(MODEL, texts[3:], options)[0][0]
    outputs = [hyps[0] for hyps in translate_constrained(MODEL, texts, options)]
    assert outputs == [plain[0], *by_search, masked]
    assert keeps_placeholders(texts[3], masked)
    with pytest.raises(ValueError, match="sample: placeholders are kept by beam search"):
        translate_constrained(MODEL, texts, SearchOptions(sample=True))


def test_the_misses_of_a_search_call_are_searched_again_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Translator keeps placeholders for a whole search call at once: one constrained
    search for the sources whose outputs missed a span, one masked search for those that
    still miss one (not a search a source); each source's outputs are those it gets
    alone."""
    texts = ["ab cd", "ab %s cd", "{} e <b>f", "ab %1$s", "e %s <b>f", "ab %1$s cd"]
    options = SearchOptions(beam=4, nbest=2)
    alone = [
        with_placeholders(MODEL, t, [hypothesis_text(MODEL, h) for h in hyps], options)
        for t, hyps in zip(texts, decode(MODEL, texts, options), strict=True)
    ]
    calls: list[int] = []
    search = placeholder_search.decode

    def counted(model: object, sources: list[str], *args: object, **kwargs: object) -> object:
        calls.append(len(sources))
        return search(model, sources, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(placeholder_search, "decode", counted)
    request = RequestOptions(placeholders="constrain")
    got = list(Translator(MODEL).translations(texts, options, request, batch_size=len(texts)))
    assert [t.texts for t in got] == alone
    assert len(calls) == 2 and sum(calls) < 2 * (len(texts) - 1)  # one pass each, not a source
    assert any(any(t.searched_again) for t in got) and not any(got[0].searched_again)
    calls.clear()
    assert translate_constrained(MODEL, texts, options) == alone
    assert len(calls) == 3 and calls[0] == len(texts)  # its own first search, then the two
    with pytest.raises(ValueError, match="expected one per source"):
        keep_placeholders(MODEL, texts, [[]], options)


def test_spellable_spans_are_the_sources_spans_or_none() -> None:
    # MODEL's target symbols spell %s, {} and <b> but not %1$s (no '1' and no byte pieces).
    assert spellable_spans(MODEL, "ab %s cd {} <b>") == ["%s", "{}", "<b>"]
    assert spellable_spans(MODEL, "ab cd") == []
    assert spellable_spans(MODEL, "ab %1$s") is None
    with pytest.raises(TypeError):
        spellable_spans(MODEL, 3)  # type: ignore[arg-type]


def test_translate_placeholders_constrain_keeps_lines_and_spans(tmp_path: Path) -> None:
    MODEL.save_pretrained(tmp_path / "m")
    lines = ["ab %s cd", "", "{} e <b>f", "ab %1$s"]
    result = luong("translate", str(tmp_path / "m"), "--placeholders", "constrain", "--beam",
                   "3", stdin="\n".join(lines).encode())  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode().split("\n")
    assert out[-1] == "" and len(out[:-1]) == len(lines) and out[1] == ""
    options = SearchOptions(beam=3)
    expected = [h[0] for h in translate_constrained(MODEL, [lines[i] for i in (0, 2, 3)], options)]
    assert [out[i] for i in (0, 2, 3)] == expected


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "gettext-en-de"
CATALOGS = Path(__file__).parent / "data" / "catalogs"


def held_sources() -> list[str]:
    """devtest's sources and the test catalogs' message lines that hold a placeholder."""
    lines = (CORPUS / "devtest.tsv").read_text(encoding="utf-8").splitlines()
    sources = [line.split("\t")[0] for line in lines]
    for name in ("nano.pot", "wdiff.pot"):
        for block in (CATALOGS / name).read_text(encoding="utf-8").split("\n\n"):
            for line in block.splitlines():
                if line.startswith(("msgid ", "msgid_plural ")) and line.endswith('"'):
                    sources.append(line.split(" ", 1)[1][1:-1])
    return [s for s in sources if find_placeholders(s)]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/data/gettext-en-de")
@pytest.mark.parametrize("mechanism", [translate_masked, translate_constrained])
def test_every_devtest_and_catalog_placeholder_is_kept(mechanism: object) -> None:
    # An untrained model over real messages: its outputs are noise, so whatever keeps the
    # spans is the mechanism's construction. Its symbols spell every placeholder (the
    # constrained search can hold them) and stray ones.
    sources = held_sources()
    assert len(sources) > 400
    symbols = sorted(set("".join(sources)) - {" "})
    model = small_model(src=Vocab([" ", *symbols]), tgt=Vocab([" ", *symbols]))
    outputs = mechanism(model, sources, SearchOptions(beam=2, max_len=12))  # type: ignore[operator]
    missed = [
        (s, o[0]) for s, o in zip(sources, outputs, strict=True) if not keeps_placeholders(s, o[0])
    ]
    assert missed == []


@pytest.mark.parametrize("source", ["ab {} cd", "ab <b> cd"])
def test_the_search_again_for_spans_keeps_exact_constraints(source: str) -> None:
    # Issue 52: the placeholder re-search dropped ``exact``. MODEL writes "sss..." whatever
    # the source; asked for "sss" exactly once, the output searched again for the span
    # (the beam misses it) holds it once, as the first search did, and keeps the span.
    translator = Translator(MODEL)
    options, request = SearchOptions(beam=4), RequestOptions(placeholders="constrain")
    loose, held = (
        next(translator.translations([source], options, request, constraints=[["sss"]], exact=e))
        for e in (False, True)
    )
    assert held.searched_again == [True]
    assert keeps_placeholders(source, held.texts[0]), held.texts
    assert len(re.findall("(?=sss)", held.texts[0])) == 1, held.texts
    assert len(re.findall("(?=sss)", loose.texts[0])) > 1, loose.texts  # what exact forbids
