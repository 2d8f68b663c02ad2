"""Issue 54's fault audit: the tests it found missing under memory, glossary, decoding
defaults, server, export and int8. Each fails when the behaviour its name states breaks (a
single edit of the code planted by the audit went unseen without it)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, small_model
from test_search_reference import SEARCHES, TEXTS, lively, reference
from test_shortlist import narrow, restricted, with_shortlist

from luong.config.decoding import decoding_defaults
from luong.config.faces import ServeLimits
from luong.config.request import RequestOptions
from luong.config.run import run_toml
from luong.config.search import MAX_CONSTRAINT_PIECES, SearchOptions
from luong.config.translation_request import TranslationRequest
from luong.export import runtime
from luong.export.exporter import export_onnx
from luong.memory.glossary import Glossary, enforced_terms
from luong.memory.translation_memory import MemoryEntry, TranslationMemory, read_entries
from luong.model.ensemble import shortlist_columns
from luong.search import decode
from luong.search.prefix import prefix_ids
from luong.server.app import ServedModel, create_app
from luong.service.batcher import Batcher
from luong.training.settings import configure
from luong.translation.translator import Translator

TIMEOUT = 10.0

# -- memory ----------------------------------------------------------------------------------


def test_a_tmx_with_pt_pt_and_pt_br_gives_a_pt_br_model_the_pt_br_segment(tmp_path: Path) -> None:
    path = tmp_path / "m.tmx"
    path.write_text(
        '<tmx version="1.4"><header srclang="en"/><body><tu>'
        '<tuv xml:lang="en"><seg>File</seg></tuv>'
        '<tuv xml:lang="pt-PT"><seg>Ficheiro</seg></tuv>'
        '<tuv xml:lang="pt-BR"><seg>Arquivo</seg></tuv>'
        "</tu></body></tmx>",
        encoding="utf-8",
    )
    assert [e.target for e in read_entries(path, "en", "pt-BR")] == ["Arquivo"]
    assert [e.target for e in read_entries(path, "en", "pt-PT")] == ["Ficheiro"]
    assert [e.target for e in read_entries(path, "en", "pt")] == ["Ficheiro"]  # the first


def test_a_language_pt_catalog_serves_a_pt_br_model(tmp_path: Path) -> None:
    path = tmp_path / "pt.po"
    path.write_text(
        'msgid ""\nmsgstr ""\n"Language: pt\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "File"\nmsgstr "Arquivo"\n',
        encoding="utf-8",
    )
    assert [(e.source, e.target) for e in read_entries(path, "en", "pt-BR")] == [
        ("File", "Arquivo")
    ]


def test_with_an_exact_match_the_fuzzy_matches_still_number_the_limit() -> None:
    pairs = [
        ("Open the file", "Die Datei öffnen"),
        ("Open the files", "Die Dateien öffnen"),
        ("Open the filer", "x"),
        ("Open a file", "Eine Datei öffnen"),
        ("Open the fil", "y"),
    ]
    memory = TranslationMemory([MemoryEntry(s, t, "m.tsv") for s, t in pairs], limit=3)
    recall = memory.recall("Open the file")
    assert recall.exact is not None and recall.exact.target == "Die Datei öffnen"
    assert len(recall.fuzzy) == 3
    assert "Open the file" not in [m.source for m in recall.fuzzy]


def test_of_two_files_holding_one_source_the_first_file_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a.tsv", tmp_path / "b.tsv"
    first.write_text("Open\tÖffnen\n", encoding="utf-8")
    second.write_text("Open\tAufmachen\n", encoding="utf-8")
    orders = (([first, second], ("Öffnen", "a.tsv")), ([second, first], ("Aufmachen", "b.tsv")))
    for files, wins in orders:
        exact = TranslationMemory.read(files, "en", "de").recall("Open").exact
        assert exact is not None and (exact.target, exact.origin) == wins


# -- glossary --------------------------------------------------------------------------------


def test_a_term_that_exactly_fills_the_constraint_room_is_held() -> None:
    vocab = small_model(0).tgt_vocab  # digits and "-": one piece a character
    glossary = Glossary.of([("abc", "12345")])
    given = ["9" * 100, "8" * (MAX_CONSTRAINT_PIECES - 100 - 5)]  # room for exactly 5 pieces
    assert [t.target for t in enforced_terms(glossary, "abc", vocab, given)] == ["12345"]
    fuller = [given[0], given[1] + "8"]  # room for 4
    assert enforced_terms(glossary, "abc", vocab, fuller) == []


def test_hyphenated_words_do_not_match_their_parts() -> None:
    glossary = Glossary.of([("print", "drucken"), ("mail", "Post"), ("e-mail", "E-Mail")])
    found = [(m.start, m.term.source) for m in glossary.find("re-print the e-mail, print mail")]
    assert found == [(13, "e-mail"), (21, "print"), (27, "mail")]
    assert glossary.find("re-print") == [] and glossary.find("print-out") == []


def test_constraints_that_fill_the_room_leave_the_term_out_and_the_request_succeeds() -> None:
    translator = Translator(small_model(4, src=SRC_SPACE))
    full = ["9" * 100, "8" * (MAX_CONSTRAINT_PIECES - 100)]
    request = RequestOptions(glossary=(("abc", "777"),))
    [translation] = translator.translations(
        ["abc de"], SearchOptions(beam=2), request, constraints=[full]
    )
    assert translation.terms == ()  # no room: left out, not an error
    assert "9" * 100 in translation.texts[0] and "8" * 100 in translation.texts[0]


# -- decoding defaults -----------------------------------------------------------------------


def folder_with(tmp_path: Path, name: str, train: dict[str, Any], seed: int = 0) -> Path:
    """A model folder whose config.toml is a real run's (``run_toml`` of the dates task's
    settings) with ``train`` changed."""
    path = tmp_path / name
    small_model(seed, src=SRC_SPACE).save_pretrained(path)
    (path / "config.toml").write_text(run_toml(configure("dates", train=train)))
    return path


def test_a_real_config_toml_with_max_decode_len_0_means_no_limit(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "dates", {})
    written = (folder / "config.toml").read_text()
    assert "max_decode_len = 0" in written  # every run's default
    search = decoding_defaults(folder)
    assert search.max_len is None
    translator = Translator.from_pretrained(folder)
    assert translator.translate(["abc de"]) == Translator(translator.model).translate(
        ["abc de"], SearchOptions(beam=search.beam, alpha=search.alpha)
    )


def test_an_ensemble_decodes_with_its_first_folders_settings(tmp_path: Path) -> None:
    three = folder_with(tmp_path, "three", {"test_beam": 3, "test_alpha": 0.6}, seed=0)
    two = folder_with(tmp_path, "two", {"test_beam": 2, "test_alpha": 0.0}, seed=1)
    assert Translator.from_pretrained([three, two]).search == SearchOptions(beam=3, alpha=0.6)
    assert Translator.from_pretrained([two, three]).search == SearchOptions(beam=2)


# -- server ----------------------------------------------------------------------------------


def test_a_request_queued_during_a_call_runs_as_soon_as_the_call_ends() -> None:
    entered, release = threading.Event(), threading.Event()

    def run(key: str, items: list[int]) -> list[int]:
        if key == "first":
            entered.set()
            release.wait(TIMEOUT)
        return items

    batcher: Batcher[str, int, int] = Batcher(run, max_batch=4, max_wait=30.0)
    try:
        first = batcher.submit("first", [1, 2, 3, 4])  # a full batch: it runs at once
        assert entered.wait(TIMEOUT)
        second = batcher.submit("second", [5])  # queued while the call runs, room for 3 more
        release.set()
        assert first.result(timeout=TIMEOUT) == [1, 2, 3, 4]
        started = time.monotonic()
        assert second.result(timeout=TIMEOUT) == [5]  # not 30 s later
        assert time.monotonic() - started < 5
    finally:
        release.set()
        batcher.close(TIMEOUT)


@pytest.fixture(scope="module")
def served() -> ServedModel:
    model = small_model(14, src=SRC_SPACE)
    model.src_lang, model.tgt_lang = "en", "de"
    return ServedModel("ende", Translator(model, search=SearchOptions(beam=20)))


def held_together(
    client: TestClient, served: ServedModel, bodies: list[dict[str, Any]]
) -> tuple[int, list[list[str]], list[tuple[list[str], int | None]]]:
    """``bodies`` posted to ``/api/translate`` while the batcher's worker is held in the call
    of a first request: the requests queued together (``batcher.queued`` then), their answers'
    best texts, and the sources (and sampling seed) of each call after the first."""
    entered, release = threading.Event(), threading.Event()
    calls: list[tuple[list[str], int | None]] = []
    answer = served.translator.answer

    def spy(sources: list[str], request: TranslationRequest, **kwargs: Any) -> Any:
        search = request.search
        if list(sources) == ["j"]:  # the first request: the worker waits here
            entered.set()
            release.wait(TIMEOUT)
        elif search is not None:
            calls.append((list(sources), search.seed if search.sample else None))
        return answer(sources, request, **kwargs)

    batcher = client.app.state.batcher  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(1 + len(bodies)) as pool:
        patch.setattr(served.translator, "answer", spy)
        try:
            first = pool.submit(ask, client, {"sources": ["j"], "beam": 1})
            assert entered.wait(TIMEOUT)
            asked = [pool.submit(ask, client, body) for body in bodies]
            deadline = time.monotonic() + TIMEOUT
            while batcher.queued < len(bodies) and time.monotonic() < deadline:
                time.sleep(0.01)
            queued = batcher.queued
        finally:
            release.set()
        answers = [future.result(TIMEOUT) for future in asked]
        first.result(TIMEOUT)
    return queued, answers, calls


def ask(client: TestClient, body: dict[str, Any]) -> list[str]:
    answer = client.post("/api/translate", json=body)
    assert answer.status_code == 200, answer.text
    return [r["hypotheses"][0]["text"] for r in answer.json()["results"]]


def test_two_concurrent_seeded_sampling_requests_give_what_each_gives_alone(
    served: ServedModel,
) -> None:
    sources = ["abc de", "hij"]
    sampling = {"sample": True, "temperature": 2.0}
    bodies = [  # the last shares the first's options, seed included: the same batcher key
        {"sources": sources, "seed": 1, **sampling},
        {"sources": sources, "seed": 2, **sampling},
        {"sources": sources[::-1], "seed": 1, **sampling},
    ]
    greedy = [{"sources": sources, "beam": 1}, {"sources": sources[::-1], "beam": 1}]
    with TestClient(create_app([served], max_wait_ms=0)) as client:
        alone = [ask(client, body) for body in bodies]
        # Requests that queue while the worker is busy are taken by its next call with what
        # queued beside them: the greedy pair runs in one call...
        queued, answers, calls = held_together(client, served, greedy)
        assert queued == 2 and len(calls) == 1
        assert sorted(calls[0][0]) == sorted(sources * 2) and calls[0][1] is None
        assert answers == [ask(client, body) for body in greedy]
        # ...while a sampling request carries its own ticket: a call each, its own draws
        queued, together, calls = held_together(client, served, bodies)
    assert queued == 3
    assert sorted(calls, key=lambda call: (call[1] or 0, call[0])) == [
        (sources, 1),
        (sources[::-1], 1),
        (sources, 2),
    ]
    assert together == alone
    assert alone[0] != alone[1]  # the seeds draw differently


def test_a_form_bodys_crlf_answers_with_lf(served: ServedModel) -> None:
    with TestClient(create_app([served], max_wait_ms=0)) as client:
        form = client.post("/translate", data={"q": "abc\r\nhij", "source": "en", "target": "de"})
        lf = client.post("/translate", json={"q": "abc\nhij", "source": "en", "target": "de"})
    assert form.status_code == 200
    text = form.json()["translatedText"]
    assert "\r" not in text and text == lf.json()["translatedText"]
    assert text.count("\n") == 1


def test_a_model_whose_default_beam_is_above_max_beam_answers_200(served: ServedModel) -> None:
    assert served.translator.search.beam == 20
    limits = ServeLimits(max_beam=16)
    with TestClient(create_app([served], max_wait_ms=0, limits=limits)) as client:
        answer = client.post("/translate", json={"q": "abc", "source": "en", "target": "de"})
    assert answer.status_code == 200, answer.text
    assert (
        answer.json()["translatedText"]
        == Translator(served.translator.model).translate(["abc"], SearchOptions(beam=16))[0]
    )


# -- export and int8 -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_onnx(small_model(0, src=SRC_SPACE), tmp_path_factory.mktemp("export") / "onnx")


@pytest.mark.parametrize("name", ["src_vocab.json", "tgt_vocab.json"])
def test_an_edited_vocabulary_of_an_export_is_refused(
    exported: Path, tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "onnx"
    shutil.copytree(exported, folder)
    data = json.loads((folder / name).read_text(encoding="utf-8"))
    (folder / name).write_text(json.dumps(data, indent=2), encoding="utf-8")  # same symbols
    assert runtime.load(exported, threads=1)
    with pytest.raises(ValueError) as caught:
        runtime.load(folder, threads=1)
    assert str(caught.value).startswith(f"{folder / name}: changed since the model was exported")


@pytest.mark.parametrize("options", [SEARCHES[0], SEARCHES[2], SEARCHES[4]])
def test_an_int8_model_with_a_narrow_shortlist_matches_its_restricted_reference(
    options: SearchOptions,
) -> None:
    int8 = lively(7, attention="general").float().to_int8()
    model = with_shortlist(int8, narrow(int8, seed=1))
    columns = shortlist_columns(model, TEXTS, None, prefix_ids(model.tgt_vocab, options.prefix))
    assert columns is not None and 4 < len(columns.ids) < len(model.tgt_vocab)
    oracle = restricted(model, columns.ids)
    got = decode(model, TEXTS, options, batch_size=len(TEXTS))
    for text, hyps in zip(TEXTS, got, strict=True):
        expected = reference(oracle, text, options)
        assert [h.tokens for h in hyps] == [tokens for tokens, _ in expected], text
        assert [h.score for h in hyps] == pytest.approx([s for _, s in expected], abs=1e-4)
