"""``luong.server.app``: the API through FastAPI's test client, every field and every error, and
the dynamic batching under 64 concurrent clients (answers identical to offline decoding)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, small_model

import luong.server.app
import luong.service.answers
from luong import RequestOptions, Translator
from luong.config.search import SearchOptions
from luong.search import decode, source_symbols
from luong.server.app import EXPLORER_FILES, ServedModel, ServeLimits, create_app
from luong.translation.records import hypothesis_record
from luong.translation.translator import translate

SOURCES = ["abc de", "j", "hij a bc", "", "ff gg hh ii"]


def served(name: str = "one", seed: int = 0, **fields: object) -> ServedModel:
    model = small_model(seed=seed, src=SRC_SPACE, **fields)
    return ServedModel(name, Translator(model), {"test_exact_match": 0.5})


@pytest.fixture(scope="module")
def models() -> list[ServedModel]:
    return [served("one", 0), served("two", 1, attention="dot")]


@pytest.fixture()
def client(models: list[ServedModel]) -> Iterator[Any]:
    with TestClient(create_app(models, max_wait_ms=0)) as test_client:
        yield test_client


def expected(
    model: ServedModel, sources: list[str], attention: bool, options: SearchOptions | None = None
) -> list:
    """What the API must answer, computed offline with ``decode`` and ``hypothesis_record``."""
    seq2seq = model.translator.model
    options = SearchOptions() if options is None else options
    lists = decode(seq2seq, sources, options)
    results = []
    for source, hyps in zip(sources, lists, strict=True):
        records = [hypothesis_record(seq2seq, h, source) for h in hyps]
        if not attention:
            for record in records:
                del record["attention"]
        results.append(
            {
                "source": source,
                "source_tokens": source_symbols(seq2seq, source),
                "prefix_tokens": len(seq2seq.tgt_vocab.tokenize(options.prefix)),
                "hypotheses": records,
            }
        )
    return results


def test_greedy_outputs_are_offline_translates(client: Any, models: list[ServedModel]) -> None:
    answer = client.post("/api/translate", json={"sources": SOURCES})
    assert answer.status_code == 200
    body = answer.json()
    assert body["model"] == "one"
    texts = [r["hypotheses"][0]["text"] if r["hypotheses"] else "" for r in body["results"]]
    assert texts == translate(models[0].translator.model, SOURCES)
    assert body["results"] == expected(models[0], SOURCES, attention=False)
    assert body["results"][3]["hypotheses"] == []  # an empty source: no hypotheses


@pytest.mark.parametrize(
    "options",
    [
        {"beam": 3, "nbest": 2},
        {"beam": 4, "nbest": 4, "alpha": 0.6, "beta": 0.2},
        {"prefix": "1-"},
        {"prefix": "7", "beam": 3, "nbest": 3},
        {"sample": True, "nbest": 3, "seed": 7, "temperature": 0.8, "top_k": 4},
    ],
)
def test_every_option_gives_offline_decodings_with_attention(
    client: Any, models: list[ServedModel], options: dict[str, Any]
) -> None:
    answer = client.post(
        "/api/translate", json={"sources": SOURCES, "attention": True, "model": "two", **options}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["model"] == "two"
    assert body["results"] == expected(models[1], SOURCES, True, SearchOptions(**options))
    for result in body["results"]:
        for hypothesis in result["hypotheses"]:
            rows = hypothesis["attention"]
            assert len(rows) == len(hypothesis["tokens"])
            assert all(len(row) == len(result["source_tokens"]) for row in rows)
            assert hypothesis["text"].startswith(options.get("prefix", ""))


def test_models_health_schema_and_page(client: Any, models: list[ServedModel]) -> None:
    listed = client.get("/api/models").json()
    assert [m["name"] for m in listed["models"]] == ["one", "two"]
    assert listed["models"][1]["config"] == models[1].translator.config.to_json()
    assert listed["models"][0]["src_vocab_size"] == len(SRC_SPACE)
    assert listed["models"][0]["tgt_vocab_size"] == len(models[0].translator.tgt_vocab)
    assert listed["models"][0]["metrics"] == {"test_exact_match": 0.5}
    assert listed["limits"] == {
        "max_sources": 64,
        "max_source_len": 200,
        "max_beam": 16,
        "max_nbest": 16,
        "max_prefix_len": 200,
        "max_output_len": 512,
        "max_body_bytes": 1_000_000,
        "max_glossary_terms": 1000,
    }
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["models"] == ["one", "two"]
    assert health["batcher"]["queued"] == 0
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == {
        "/health",
        "/api/models",
        "/api/translate",
        *("/translate", "/detect", "/languages", "/frontend/settings"),  # LibreTranslate's
    }
    fields = schema["components"]["schemas"]["TranslateRequest"]["properties"]
    options = [f.name for f in dataclasses.fields(SearchOptions)]
    requested = [f.name for f in dataclasses.fields(RequestOptions)]
    assert requested == ["attention", "align", "placeholders", "glossary", "memory"]
    assert list(fields) == ["sources", "model", *requested, *options]  # every option
    assert fields["placeholders"]["enum"] == ["off", "mask", "constrain"]
    assert (fields["beam"]["minimum"], fields["beam"]["maximum"]) == (1, 1000)
    assert fields["temperature"]["exclusiveMinimum"] == 0
    assert fields["combine"]["enum"] == ["logprob", "prob"]
    assert (
        fields["beta"]["description"]
        == SearchOptions.__dataclass_fields__["beta"].metadata["option"].help
    )
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/static/explorer.js">' in page.text
    script = client.get("/static/explorer.js")
    assert script.status_code == 200 and "text/javascript" in script.headers["content-type"]
    assert "/api/translate" in script.text
    assert client.get("/static/explorer.css").status_code == 200
    assert client.get("/static/server.py").status_code == 404
    assert client.get("/static/..%2Fserver.py").status_code == 404


LIMITS = ServeLimits(
    max_sources=3, max_source_len=5, max_beam=4, max_nbest=3, max_prefix_len=4, max_output_len=9
)


def test_requests_exactly_at_the_limits_are_answered(models: list[ServedModel]) -> None:
    at_the_limits = [
        {"sources": ["a", "b", "c"]},  # max_sources
        {"sources": ["abcde"]},  # max_source_len (symbols)
        {"sources": ["a"], "beam": 4, "nbest": 3},  # max_beam, max_nbest
        {"sources": ["a"], "prefix": "1234"},  # max_prefix_len
        {"sources": ["a"], "beam": 2, "max_len": 9, "min_len": 8},  # max_output_len
    ]
    with TestClient(create_app(models, limits=LIMITS, max_wait_ms=0)) as client:
        for body in at_the_limits:
            answer = client.post("/api/translate", json=body)
            assert answer.status_code == 200, (body, answer.text)
            assert len(answer.json()["results"]) == len(body["sources"])
        (long,) = client.post("/api/translate", json=at_the_limits[4]).json()["results"]
        assert len(long["hypotheses"][0]["tokens"]) == 9  # EOS forbidden until the 9th


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"sources": ["a"] * 4}, 413, "max_sources: 4 sources, above the limit of 3"),
        (
            {"sources": ["a", "abcdef"]},
            413,
            "max_source_len: source 1 has 6 symbols, above the limit of 5",
        ),
        ({"sources": ["a"], "beam": 5}, 422, "max_beam: beam 5, above the limit of 4"),
        (
            {"sources": ["a"], "beam": 4, "nbest": 4},
            422,
            "max_nbest: nbest 4, above the limit of 3",
        ),
        ({"sources": ["a"], "beam": 2, "nbest": 3}, 422, "nbest: expected at most beam = 2, got 3"),
        (
            {"sources": ["a"], "prefix": "12345"},
            422,
            "max_prefix_len: the prefix has 5 characters, above the limit of 4",
        ),
        (
            {"sources": ["a"], "prefix": "1x"},
            422,
            "prefix: expected symbols of the target vocabulary, got unknown ['x']",
        ),
        ({"sources": ["a"], "model": "three"}, 422, "model: expected one of one, two, got 'three'"),
        (
            {"sources": ["a"], "sample": True, "beam": 2},
            422,
            "beam: sampling draws one token a step, expected 1, got 2",
        ),
        (
            {"sources": ["a"], "beam": 2, "max_len": 10},
            422,
            "max_output_len: max_len 10, above the limit of 9",
        ),
    ],
)
def test_limits_are_named(models: list[ServedModel], body: dict, status: int, detail: str) -> None:
    with TestClient(create_app(models, limits=LIMITS)) as client:
        answer = client.post("/api/translate", json=body)
    assert (answer.status_code, answer.json()) == (status, {"detail": detail})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "sources"),
        ({"sources": "abc"}, "sources"),
        ({"sources": [1]}, "sources"),
        ({"sources": ["a"], "beam": "2"}, "beam"),
        ({"sources": ["a"], "attention": "yes"}, "attention"),
        ({"sources": ["a"], "beam": float("nan")}, "beam"),  # not echoed: NaN is not JSON
        ({"sources": ["a"], "file": "/etc/passwd"}, "file"),  # no field names a file
    ],
)
def test_fields_of_the_wrong_type_are_422_naming_the_field(
    client: Any, body: dict, field: str
) -> None:
    answer = client.post(
        "/api/translate",
        content=json.dumps(body),  # json.dumps writes NaN, as some clients do
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 422
    errors = answer.json()["detail"]
    assert field in [error["loc"][-1] for error in errors] or field in str(errors[0]["loc"])
    assert all(set(error) == {"type", "loc", "msg"} for error in errors)  # no input echoed


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"beam": 0}, "beam: expected an int >= 1, got 0"),
        ({"nbest": 0}, "nbest: expected an int >= 1, got 0"),
        ({"alpha": -1}, "alpha: expected a finite number >= 0, got -1.0"),
        ({"alpha": 6}, "alpha: expected at most 5, got 6.0"),
        ({"alpha": float("nan")}, "alpha: expected a finite number >= 0, got nan"),
        ({"beta": float("inf")}, "beta: expected a finite number >= 0, got inf"),
        ({"beta": 11}, "beta: expected at most 10, got 11.0"),
        ({"temperature": 0}, "temperature: expected a finite number > 0, got 0.0"),
        ({"top_k": 0}, "top_k: expected an int >= 1, got 0"),
        ({"seed": -1}, "seed: expected an int >= 0, got -1"),
        ({"seed": 2**64, "sample": True}, f"seed: expected at most {2**64 - 1}, got {2**64}"),
        ({"top_k": 3}, "top_k: only when sampling"),
        ({"seed": 3}, "seed: only when sampling"),
        ({"temperature": 1e-300, "sample": True, "seed": 1, "nbest": 2}, None),  # the argmax
        (
            {"prefix": "1\ud800"},
            "prefix: expected valid Unicode, got a lone surrogate at character 1",
        ),
        (
            {"prefix": "1\n2"},
            "prefix: expected one line of text, got a line break, tab or NUL in it",
        ),
        ({"combine": "max"}, "combine: expected one of logprob, prob, got 'max'"),
        ({"max_len": 600}, "max_output_len: max_len 600, above the limit of 512"),
        (
            {"min_len": 3, "max_len": 3},
            "min_len: expected < max_len = 3 (EOS could never come), got 3",
        ),
    ],
)
def test_options_are_checked_by_search_options_with_its_messages(
    client: Any, body: dict, detail: str | None
) -> None:
    """The messages the command line gives (a JSON integer in a number field reads as a
    float: -1.0); values that JSON cannot hold (NaN, Infinity, 1e400) and strings that are
    not Unicode (a lone surrogate) are 422 too, never 500."""
    text = json.dumps({"sources": ["abc", "j"], **body}).replace("\\\\", "\\")
    answer = client.post(
        "/api/translate", content=text.encode(), headers={"content-type": "application/json"}
    )
    if detail is None:
        assert answer.status_code == 200, answer.text
        drawn = answer.json()["results"]
        greedy = client.post("/api/translate", json={"sources": ["abc", "j"]}).json()["results"]
        for one, best in zip(drawn, greedy, strict=True):  # T -> 0 draws the argmax
            assert [h["tokens"] for h in one["hypotheses"]] == [best["hypotheses"][0]["tokens"]] * 2
        return
    assert (answer.status_code, answer.json()) == (422, {"detail": detail})


def test_json_numbers_beyond_float_and_lone_surrogates_in_sources_are_422(client: Any) -> None:
    headers = {"content-type": "application/json"}
    huge = client.post(
        "/api/translate", content=b'{"sources": ["a"], "alpha": 1e400}', headers=headers
    )
    assert (huge.status_code, huge.json()) == (
        422,
        {"detail": "alpha: expected a finite number >= 0, got inf"},
    )
    lone = client.post("/api/translate", content=b'{"sources": ["a", "b\\ud800"]}', headers=headers)
    assert (lone.status_code, lone.json()) == (
        422,
        {"detail": "sources: source 1 is not valid Unicode (a lone surrogate at character 1)"},
    )


def test_bodies_that_are_not_json_or_not_utf8(models: list[ServedModel]) -> None:
    limits = ServeLimits(max_body_bytes=100)
    with TestClient(create_app(models, limits=limits)) as client:
        headers = {"content-type": "application/json"}
        broken = client.post("/api/translate", content=b'{"sources": [', headers=headers)
        assert broken.status_code == 422
        assert broken.json()["detail"][0]["type"] == "json_invalid"
        latin = client.post("/api/translate", content=b'{"sources": ["\xe9"]}', headers=headers)
        assert (latin.status_code, latin.json()) == (
            400,
            {"detail": "There was an error parsing the body"},
        )
        body = b'{"sources": ["' + b"a" * 200 + b'"]}'
        large = client.post("/api/translate", content=body, headers=headers)
        assert (large.status_code, large.json()) == (
            413,
            {"detail": "max_body_bytes: the body is 217 bytes, above the limit of 100"},
        )

        def chunks(*parts: bytes) -> Iterator[bytes]:  # no Content-Length: chunked
            yield from parts

        chunked = client.post(
            "/api/translate", content=chunks(body[:80], body[80:]), headers=headers
        )
        assert "content-length" not in chunked.request.headers
        assert (chunked.status_code, chunked.json()) == (
            413,
            {"detail": "max_body_bytes: the body is more than 100 bytes, above the limit of 100"},
        )
        small = b'{"sources": ["abc", "de"]}'
        fits = client.post(
            "/api/translate", content=chunks(small[:10], small[10:]), headers=headers
        )
        assert fits.status_code == 200
        texts = [r["hypotheses"][0]["text"] for r in fits.json()["results"]]
        assert texts == translate(models[0].translator.model, ["abc", "de"])


def test_create_app_checks_its_arguments(models: list[ServedModel]) -> None:
    with pytest.raises(ValueError, match="models: expected at least one model, got none"):
        create_app([])
    with pytest.raises(ValueError, match="models: expected distinct names, got one twice"):
        create_app([models[0], models[0]])
    with pytest.raises(TypeError, match="models: expected ServedModel items, got Translator"):
        create_app([models[0].translator])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_batch: expected an int >= 1, got 0"):
        create_app(models, max_batch=0)
    with pytest.raises(ValueError, match="max_wait_ms: expected a finite number >= 0, got -1"):
        create_app(models, max_wait_ms=-1)
    with pytest.raises(ValueError, match="max_sources: expected an int >= 1, got 0"):
        ServeLimits(max_sources=0)
    with pytest.raises(ValueError, match="name: expected a non-empty str, got ''"):
        ServedModel("", models[0].translator)
    with pytest.raises(TypeError, match="translator: expected a Translator, got str"):
        ServedModel("x", "model")  # type: ignore[arg-type]


# -- the batcher under many clients ----------------------------------------------------------


def client_sources(n: int) -> list[str]:
    """Client n's own sources: 1 to 3 of them, all different across clients."""
    letters = "abcdefghij"
    return [
        " ".join(letters[(n + i + j) % 10] * (1 + (n + j) % 4) for j in range(1 + i % 3))
        + f" {letters[n % 10]}{letters[n // 10]}"
        for i in range(1 + n % 3)
    ]


def test_64_concurrent_clients_get_their_own_offline_translations_in_one_batch(
    models: list[ServedModel],
) -> None:
    clients = 64
    sources = [client_sources(n) for n in range(clients)]
    total = sum(len(s) for s in sources)
    # The batch is run once it holds every client's sources (max_batch), whatever the timing;
    # the window is long enough never to close before.
    app = create_app(models, max_batch=total, max_wait_ms=600_000)
    offline = translate(models[0].translator.model, [s for own in sources for s in own])
    with TestClient(app) as client:

        def ask(n: int) -> list[str]:
            answer = client.post("/api/translate", json={"sources": sources[n]})
            assert answer.status_code == 200, answer.text
            return [r["hypotheses"][0]["text"] for r in answer.json()["results"]]

        with ThreadPoolExecutor(clients) as pool:
            answers = list(pool.map(ask, range(clients)))
        stats = client.get("/health").json()["batcher"]
    assert [text for own in answers for text in own] == offline
    assert stats == {
        "requests": clients,
        "batches": 1,
        "merged": 1,
        "items": total,
        "largest": clients,
        "queued": 0,
    }


def test_requests_with_different_options_are_batched_apart(
    models: list[ServedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(models, max_batch=8, max_wait_ms=600_000)
    asks = [({"sources": ["abc", "de"], "beam": beam}) for beam in (1, 2, 1, 2, 1, 2, 1, 2)]
    # The first full batch (one beam's four requests) runs as soon as it is full; it holds
    # until the other beam's four are queued, so that they wait that call out together (a
    # request that waited a call runs at once with what queued beside it: were the threads
    # slow to send, the other four would come as two calls of two).
    translator = models[0].translator
    answer = translator.answer
    calls: list[int] = []

    def held(*args: Any, **kwargs: Any) -> Any:
        if not calls:
            for _ in range(6000):  # polling, not a timing check
                if app.state.batcher.queued == 4:
                    break
                time.sleep(0.01)
        calls.append(app.state.batcher.queued)
        return answer(*args, **kwargs)

    monkeypatch.setattr(translator, "answer", held)
    with TestClient(app) as client, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda body: client.post("/api/translate", json=body), asks))
        stats = client.get("/health").json()["batcher"]
    model = models[0].translator.model
    for body, answer in zip(asks, answers, strict=True):
        texts = [r["hypotheses"][0]["text"] for r in answer.json()["results"]]
        assert texts == translate(model, ["abc", "de"], SearchOptions(beam=body["beam"]))
    assert (stats["batches"], stats["merged"], stats["largest"]) == (2, 2, 4)
    assert calls == [4, 0]  # the second call took the other beam's four at once


def test_health_answers_while_a_request_waits_and_closing_finishes_it(
    models: list[ServedModel],
) -> None:
    app = create_app(models, max_wait_ms=600_000)  # the request waits until the batcher closes
    answers: list[Any] = []
    with TestClient(app) as client:
        asking = threading.Thread(
            target=lambda: answers.append(client.post("/api/translate", json={"sources": ["ab"]}))
        )
        asking.start()
        for _ in range(6000):  # until the request is queued (polling, not a timing check)
            health = client.get("/health")
            if health.json()["batcher"]["queued"] == 1:
                break
            time.sleep(0.01)
        assert health.status_code == 200 and health.json()["batcher"]["queued"] == 1
        assert answers == []
        # What the app's shutdown does (after uvicorn has let requests in flight finish):
        # the batcher decodes what is queued, then takes no more.
        app.state.batcher.close()
        asking.join()
        refused = client.post("/api/translate", json={"sources": ["ab"]})
    assert answers[0].status_code == 200
    assert (
        answers[0].json()["results"][0]["hypotheses"][0]["text"]
        == translate(models[0].translator.model, ["ab"])[0]
    )
    assert (refused.status_code, refused.json()) == (
        503,
        {"detail": "the batcher is closed: it takes no more requests"},
    )


def test_the_explorer_ships_as_package_data() -> None:
    """Every file the server reads is in luong/server/explorer/, which pyproject ships with the
    package (a wheel without it would serve a 500 at /)."""
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert "server/explorer/*" in data["tool"]["setuptools"]["package-data"]["luong"]
    folder = resources.files("luong.server") / "explorer"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["index.html", *EXPLORER_FILES])


def test_health_answers_while_a_batch_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    model = served("slow", 3)
    seq2seq = model.translator.model
    expected_text = translate(seq2seq, ["abc de"])[0]
    entered, release = threading.Event(), threading.Event()
    step = seq2seq.decoder.step

    def held_step(*args: Any) -> Any:  # the decoder stops at its first step until released
        entered.set()
        release.wait()
        return step(*args)

    monkeypatch.setattr(seq2seq.decoder, "step", held_step)
    answers: list[Any] = []
    with TestClient(create_app([model], max_wait_ms=0)) as client:
        asking = threading.Thread(
            target=lambda: answers.append(
                client.post("/api/translate", json={"sources": ["abc de"]})
            )
        )
        asking.start()
        entered.wait()
        health = client.get("/health")  # the batch is inside the decoder now
        release.set()
        asking.join()
    assert health.status_code == 200
    assert {k: health.json()["batcher"][k] for k in ("batches", "queued")} == {
        "batches": 0,
        "queued": 0,
    }
    assert answers[0].json()["results"][0]["hypotheses"][0]["text"] == expected_text


def test_health_answers_while_an_answer_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The records and JSON of a large answer (64 sources, beam 16, n-best 16, attention) took
    1.3 s on the event loop, and /health waited: they are written on a worker thread."""
    model = served("one", 0)
    entered, release = threading.Event(), threading.Event()
    records = luong.service.answers.translation_records

    on_the_loop: list[bool] = []

    def held_records(*args: Any) -> Any:  # the answer's first records wait until released
        try:
            asyncio.get_running_loop()  # only the event loop's thread has one
            on_the_loop.append(True)
        except RuntimeError:
            on_the_loop.append(False)
        entered.set()
        release.wait(timeout=5)  # (on the event loop, /health would wait this long)
        return records(*args)

    monkeypatch.setattr(luong.service.answers, "translation_records", held_records)
    answers: list[Any] = []
    with TestClient(create_app([model], max_wait_ms=0)) as client:
        asking = threading.Thread(
            target=lambda: answers.append(client.post("/api/translate", json={"sources": ["ab"]}))
        )
        asking.start()
        assert entered.wait(timeout=60)
        health = client.get("/health")  # the answer is being written now
        release.set()
        asking.join(timeout=60)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert on_the_loop == [False]
    assert answers[0].status_code == 200
    assert answers[0].json()["results"] == expected(model, ["ab"], attention=False)


def test_a_search_error_is_422_and_the_server_goes_on() -> None:
    broken = served("broken", 2)
    with torch.no_grad():  # finite weights too large to compute with: NaN scores
        for name, parameter in broken.translator.model.named_parameters():
            if name.startswith("decoder"):
                parameter.fill_(1e38)
    with TestClient(create_app([broken, served("fine", 0)], max_wait_ms=0)) as client:
        answer = client.post("/api/translate", json={"sources": ["abc"], "beam": 2})
        after = client.post("/api/translate", json={"sources": ["abc"], "model": "fine"})
    assert (answer.status_code, answer.json()) == (
        422,
        {
            "detail": "the model's scores are NaN at output step 1: its weights overflow "
            "(finite values in model.safetensors too large to compute with)"
        },
    )
    assert after.status_code == 200


def test_align_gives_each_output_its_word_alignment(client: Any) -> None:
    # A request field beside attention, not a decoding option: the words of a source of
    # spaces and of its outputs, each output word linked once.
    sources = ["ab cd ef", "j"]
    answer = client.post("/api/translate", json={"sources": sources, "align": True}).json()
    for source, result in zip(sources, answer["results"], strict=True):
        for hyp in result["hypotheses"]:
            assert "attention" not in hyp
            links = hyp["alignment"]
            assert [j for _, j in sorted(links, key=lambda link: link[1])] == list(
                range(len(hyp["text"].split()))
            )
            assert all(0 <= i < len(source.split()) for i, _ in links)
    plain = client.post("/api/translate", json={"sources": sources}).json()
    assert "alignment" not in plain["results"][0]["hypotheses"][0]


def test_a_request_field_reaches_the_api_from_request_options(
    client: Any, models: list[ServedModel]
) -> None:
    # placeholders, a RequestOptions field: the API's answer is the Translator's, the one
    # path every face takes, and the attention's columns are the masked source's symbols.
    sources = ["ab %s cd", "j {name} k", "abc"]
    translator = models[0].translator
    for mode in ("off", "mask", "constrain"):
        body = {"sources": sources, "placeholders": mode, "beam": 3, "attention": True}
        answer = client.post("/api/translate", json=body)
        assert answer.status_code == 200
        request = RequestOptions(placeholders=mode)
        offline = translator.translate(sources, SearchOptions(beam=3), request)
        results = answer.json()["results"]
        assert [r["hypotheses"][0]["text"] for r in results] == offline
        for result in results:
            widths = {len(row) for h in result["hypotheses"] for row in h["attention"]}
            assert widths == {len(result["source_tokens"])}
    masked = client.post("/api/translate", json={"sources": sources, "placeholders": "mask"})
    assert "%s" in masked.json()["results"][0]["hypotheses"][0]["text"]
    refused = client.post(
        "/api/translate", json={"sources": sources, "placeholders": "mask", "align": True}
    )
    assert (refused.status_code, refused.json()) == (
        422,
        {"detail": "align: not with placeholders='mask'; expected 'off'"},
    )
