"""The LibreTranslate API of ``luong serve`` with real clients from the registry
(``libretranslatepy``, ``deep-translator``'s ``LibreTranslator``) over a real server on a
free loopback port; and the language pair of a model folder, which routes their requests
(``luong train --src-lang``, ``luong pair``, ``Translator.src_lang``, ``luong runs``)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from deep_translator import LibreTranslator
from deep_translator.exceptions import AuthorizationException
from helpers import SRC_SPACE, TINY_MODEL_FLAGS, assert_one_line_error, luong, small_model
from libretranslatepy import LibreTranslateAPI

import luong.cli.serve as serve_command
from luong.cli import main as cli_main
from luong.config.faces import ServeLimits
from luong.config.search import SearchOptions
from luong.model.averaging import average_checkpoints
from luong.model.ensemble import Ensemble
from luong.model.folder import record_language_pair
from luong.model.quantize import quantize_folder
from luong.model.seq2seq import Seq2Seq
from luong.server.app import ServedModel, create_app
from luong.training.run_folders import compare, read_run
from luong.translation.placeholder_search import translate_masked
from luong.translation.translator import Translator, translate, translate_nbest

TEXTS = ["abc de", "j", "hij a bc"]
LIMITS = ServeLimits(max_sources=4, max_source_len=12)


def model(seed: int, src_lang: str | None, tgt_lang: str | None) -> Seq2Seq:
    m = small_model(seed=seed, src=SRC_SPACE)
    m.src_lang, m.tgt_lang = src_lang, tgt_lang
    return m


# Three pairs (en -> de, en -> fr, fr -> de) and a model that records none.
MODELS = {"ende": (4, "en", "de"), "enfr": (5, "en", "fr"), "frde": (6, "fr", "de")}


def served_models() -> list[ServedModel]:
    # decoding defaults of beam 5, as the translation preset's models have (config.toml)
    served = [
        ServedModel(name, Translator(model(*spec), search=SearchOptions(beam=5)))
        for name, spec in MODELS.items()
    ]
    return [ServedModel("nopair", Translator(model(7, None, None))), *served]


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port, in a thread; yields its URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(600):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving(create_app(served_models(), max_wait_ms=0, limits=LIMITS)) as base:
        yield base


@pytest.fixture(scope="module")
def keyed_url() -> Iterator[str]:
    app = create_app(served_models(), max_wait_ms=0, limits=LIMITS, api_keys={"k1", "k2"})
    with serving(app) as base:
        yield base


def offline(name: str, texts: list[str]) -> list[str]:
    """What the server answers: the model's decoding defaults (beam 5 here)."""
    return translate(model(*MODELS[name]), texts, SearchOptions(beam=5))


def answered(answer: dict[str, Any]) -> dict[str, Any]:
    """A /translate answer less its ``confidence`` (luong's own field, a number or null per
    text: tests/test_glossary.py checks its values)."""
    return {key: value for key, value in answer.items() if key != "confidence"}


def error_of(call: Any) -> tuple[int, Any]:
    """The status and JSON body of the HTTP error ``call`` raises (urllib's)."""
    with pytest.raises(urllib.error.HTTPError) as caught:
        call()
    return caught.value.code, json.loads(caught.value.read())


def test_libretranslatepy_translates_a_string_routed_by_the_pair(url: str) -> None:
    client = LibreTranslateAPI(url)
    for name, (_, src, tgt) in MODELS.items():
        assert client.translate(TEXTS[0], src, tgt) == offline(name, TEXTS[:1])[0]
    # The pairs give different models: the routing is seen in the outputs.
    assert len({client.translate(TEXTS[2], s, t) for _, s, t in MODELS.values()}) > 1


def test_languages_lists_each_served_pair_by_source(url: str) -> None:
    assert LibreTranslateAPI(url).languages() == [
        {"code": "de", "name": "German", "targets": []},
        {"code": "en", "name": "English", "targets": ["de", "fr"]},
        {"code": "fr", "name": "French", "targets": ["de"]},
    ]


def test_deep_translator_translates_a_text_and_a_batch(url: str) -> None:
    # deep-translator sends its fields in the query string, and insists on some api_key.
    client = LibreTranslator(source="en", target="fr", api_key="unused", custom_url=url + "/")
    assert client.translate(TEXTS[2]) == offline("enfr", TEXTS[2:])[0]
    assert client.translate_batch(TEXTS) == offline("enfr", TEXTS)


def test_a_list_gives_a_list_and_alternatives_come_from_the_nbest_list(url: str) -> None:
    body = {"q": TEXTS, "source": "en", "target": "de"}
    answer = requests.post(f"{url}/translate", json=body, timeout=60)
    assert answer.status_code == 200
    assert answered(answer.json()) == {"translatedText": offline("ende", TEXTS)}
    answer = requests.post(f"{url}/translate", json={**body, "alternatives": 2}, timeout=60)
    nbest = translate_nbest(model(*MODELS["ende"]), TEXTS, SearchOptions(beam=5, nbest=3))
    assert answer.json()["translatedText"] == [outputs[0] for outputs in nbest]
    expected = [[t for t in dict.fromkeys(o[1:]) if t != o[0]] for o in nbest]
    assert answer.json()["alternatives"] == expected
    assert any(expected)  # the model gives some alternatives: the test checks something
    single = requests.post(
        f"{url}/translate", json={**body, "q": TEXTS[0], "alternatives": 2}, timeout=60
    ).json()
    assert answered(single) == {"translatedText": nbest[0][0], "alternatives": expected[0]}


def test_form_bodies_urlencoded_and_multipart(url: str) -> None:
    fields = {"q": TEXTS[2], "source": "fr", "target": "de", "format": "text"}
    expected = {"translatedText": offline("frde", TEXTS[2:])[0]}
    urlencoded = requests.post(f"{url}/translate", data=fields, timeout=60)
    assert answered(urlencoded.json()) == expected
    multipart = requests.post(
        f"{url}/translate", files={k: (None, v) for k, v in fields.items()}, timeout=60
    )
    assert multipart.status_code == 200 and answered(multipart.json()) == expected


def test_html_keeps_every_tag_through_the_masking(url: str) -> None:
    texts = ["<b>ab</b> c", '<br/> <a href="x">j</a>']
    answer = requests.post(
        f"{url}/translate",
        json={"q": texts, "source": "en", "target": "de", "format": "html"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.json()
    outputs = answer.json()["translatedText"]
    masked = translate_masked(model(*MODELS["ende"]), texts, SearchOptions(beam=5))
    expected = [hyps[0] for hyps in masked]
    assert outputs == expected
    for text, output in zip(texts, outputs, strict=True):
        for tag in ("<b>", "</b>", "<br/>", '<a href="x">', "</a>"):
            assert output.count(tag) == text.count(tag), (text, output)
    # the tags are not the model's to translate: as text, these sources are too long for it
    plain = requests.post(
        f"{url}/translate", json={"q": texts, "source": "en", "target": "de"}, timeout=60
    )
    assert plain.status_code == 400 and "max_source_len" in plain.json()["error"]


def test_auto_is_the_one_source_served_for_the_target(url: str) -> None:
    answer = requests.post(
        f"{url}/translate", json={"q": TEXTS[0], "source": "auto", "target": "fr"}, timeout=60
    )
    assert answered(answer.json()) == {
        "translatedText": offline("enfr", TEXTS[:1])[0],
        "detectedLanguage": {"confidence": 100.0, "language": "en"},
    }
    status, body = error_of(lambda: LibreTranslateAPI(url).translate("a", "auto", "de"))
    assert status == 400
    assert body == {
        "error": "auto: this server detects no languages; it takes auto for the one source "
        "language served for de, found several (en, fr): give source"
    }


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        ("de", "en", "English (en) is not available as a target language from German (de)"),
        ("xx", "de", "xx is not supported"),
        ("fr", "es", "es is not supported"),
        ("de", "fr", "French (fr) is not available as a target language from German (de)"),
    ],
)
def test_an_unknown_pair_is_librestranslates_400(
    url: str, source: str, target: str, message: str
) -> None:
    status, body = error_of(lambda: LibreTranslateAPI(url).translate("abc", source, target))
    assert (status, body) == (400, {"error": message})


def test_a_body_above_the_limit_is_librestranslates_error_shape() -> None:
    # LibreTranslate's paths answer 413 as {"error"}, which its clients read; the server's
    # own API keeps FastAPI's {"detail"}.
    app = create_app(served_models(), limits=ServeLimits(max_body_bytes=100))
    message = "max_body_bytes: the body is {} bytes, above the limit of 100"
    with serving(app) as url:
        text = "abc " * 40
        status, body = error_of(lambda: LibreTranslateAPI(url).translate(text, "en", "de"))
        assert status == 413 and list(body) == ["error"]
        size = int(body["error"].split()[4])
        assert body["error"] == message.format(size) and size > 160
        own = requests.post(f"{url}/api/translate", json={"sources": [text]}, timeout=60)
        size = len(own.request.body)  # type: ignore[arg-type]
        assert (own.status_code, own.json()) == (413, {"detail": message.format(size)})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"source": "en", "target": "de"}, "Invalid request: missing q parameter"),
        ({"q": "", "source": "en", "target": "de"}, "Invalid request: missing q parameter"),
        ({"q": "a", "target": "de"}, "Invalid request: missing source parameter"),
        ({"q": "a", "source": "en"}, "Invalid request: missing target parameter"),
        ({"q": [1], "source": "en", "target": "de"}, "Invalid request: q must be a text or a "
         "list of texts"),
        ({"q": "a", "source": "en", "target": "de", "format": "pdf"}, "pdf format is not "
         "supported"),
        ({"q": ["a"] * 5, "source": "en", "target": "de"}, "Invalid request: max_sources: 5 "
         "sources, above the limit of 4"),
        ({"q": ["a", "abcdefghij abc"], "source": "en", "target": "de"}, "Invalid request: "
         "max_source_len: source 1 has 14 symbols, above the limit of 12"),
        ({"q": "a", "source": "en", "target": "de", "alternatives": 16}, "Invalid request: "
         "alternatives: 16, above the limit of 15 (max_beam 16: the translation and its "
         "alternatives)"),
        ({"q": "a", "source": "en", "target": "de", "alternatives": 99999999999},
         "Invalid request: alternatives must be at most 999, got 99999999999"),
        ({"q": "a", "source": "en", "target": "de", "alternatives": -1}, "Invalid request: "
         "alternatives must be an int >= 0, got -1"),
    ],
)  # fmt: skip
def test_bad_requests_and_limits_are_librestranslates_400(
    url: str, body: dict[str, Any], message: str
) -> None:
    answer = requests.post(f"{url}/translate", json=body, timeout=60)
    assert (answer.status_code, answer.json()) == (400, {"error": message})


def test_missing_q_through_libretranslatepy(url: str) -> None:
    status, body = error_of(lambda: LibreTranslateAPI(url).translate("", "en", "de"))
    assert (status, body) == (400, {"error": "Invalid request: missing q parameter"})


def test_api_keys_a_wrong_or_missing_key_is_403(keyed_url: str) -> None:
    assert (
        LibreTranslateAPI(keyed_url, api_key="k2").translate(TEXTS[0], "en", "de")
        == (offline("ende", TEXTS[:1])[0])
    )
    status, body = error_of(
        lambda: LibreTranslateAPI(keyed_url, api_key="k3").translate("a", "en", "de")
    )
    assert (status, body) == (403, {"error": "Invalid API key"})
    status, body = error_of(lambda: LibreTranslateAPI(keyed_url).translate("a", "en", "de"))
    assert (status, body) == (403, {"error": "Invalid API key: this server needs an api_key"})
    wrong = LibreTranslator(source="en", target="de", api_key="nope", custom_url=keyed_url + "/")
    with pytest.raises(AuthorizationException):
        wrong.translate("abc")
    right = LibreTranslator(source="en", target="de", api_key="k1", custom_url=keyed_url + "/")
    assert right.translate("abc") == offline("ende", ["abc"])[0]
    # Languages and settings need no key, as LibreTranslate's.
    assert len(LibreTranslateAPI(keyed_url).languages()) == 3


def test_frontend_settings(url: str, keyed_url: str) -> None:
    settings = requests.get(f"{url}/frontend/settings", timeout=60).json()
    assert settings == {
        "charLimit": -1,
        "frontendTimeout": 500,
        "apiKeys": False,
        "keyRequired": False,
        "suggestions": False,
        "filesTranslation": False,
        "supportedFilesFormat": [],
        "language": {
            "source": {"code": "en", "name": "English"},
            "target": {"code": "de", "name": "German"},
        },
    }
    keyed = requests.get(f"{keyed_url}/frontend/settings", timeout=60).json()
    assert (keyed["apiKeys"], keyed["keyRequired"]) == (True, True)


def test_concurrent_clients_share_one_batch_of_the_batcher() -> None:
    clients = 4
    # The batch runs once it holds every client's text (max_batch), whatever the timing.
    app = create_app(served_models(), max_batch=clients, max_wait_ms=600_000, limits=LIMITS)
    with serving(app) as base, ThreadPoolExecutor(clients) as pool:
        client = LibreTranslateAPI(base)
        texts = [*TEXTS, "ff gg"]
        answers = list(pool.map(lambda text: client.translate(text, "en", "de"), texts))
        stats = requests.get(f"{base}/health", timeout=60).json()["batcher"]
    assert answers == offline("ende", texts)
    assert (stats["requests"], stats["batches"], stats["largest"]) == (clients, 1, clients)


def test_the_api_routes_are_unchanged(url: str) -> None:
    answer = requests.post(f"{url}/api/translate", json={"sources": ["abc"]}, timeout=60)
    assert answer.json()["model"] == "nopair"
    assert requests.get(f"{url}/health", timeout=60).json()["models"] == [
        "nopair",
        *MODELS,
    ]


# -- the language pair of a model folder ----------------------------------------------------


def test_the_pair_round_trips_through_save_average_quantize(tmp_path: Path) -> None:
    m = model(4, "en", "de")
    m.save_pretrained(tmp_path / "a")
    raw = json.loads((tmp_path / "a" / "config.json").read_text())
    assert (raw["src_lang"], raw["tgt_lang"]) == ("en", "de")
    loaded = Translator.from_pretrained(tmp_path / "a")
    assert (loaded.src_lang, loaded.tgt_lang) == ("en", "de")
    average_checkpoints([tmp_path / "a", tmp_path / "a"], tmp_path / "avg")
    quantize_folder(tmp_path / "a", tmp_path / "int8")
    for name in ("avg", "int8"):
        again = Seq2Seq.from_pretrained(tmp_path / name)
        assert (again.src_lang, again.tgt_lang) == ("en", "de"), name
    # A folder without the keys: unknown.
    model(5, None, None).save_pretrained(tmp_path / "b")
    assert "src_lang" not in json.loads((tmp_path / "b" / "config.json").read_text())
    assert Translator.from_pretrained(tmp_path / "b").src_lang is None


def test_an_ensemble_has_its_members_pair_or_none(tmp_path: Path) -> None:
    same = Translator(Ensemble([model(4, "en", "de"), model(5, "en", "de")]))
    assert (same.src_lang, same.tgt_lang) == ("en", "de")
    mixed = Translator(Ensemble([model(4, "en", "de"), model(5, None, None)]))
    with pytest.raises(ValueError, match=r"different language pairs \(\?-\?, en-de\)"):
        _ = mixed.src_lang


def test_a_bad_code_in_config_json_is_named(tmp_path: Path) -> None:
    model(4, None, None).save_pretrained(tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**raw, "tgt_lang": "Deutsch"}))
    with pytest.raises(ValueError, match="config.json: tgt_lang: expected an ISO 639"):
        Seq2Seq.from_pretrained(tmp_path)


def test_record_language_pair_keeps_the_rest_of_config_json(tmp_path: Path) -> None:
    model(4, None, None).save_pretrained(tmp_path)
    before = json.loads((tmp_path / "config.json").read_text())
    record_language_pair(tmp_path, "pt-BR", "de")
    after = json.loads((tmp_path / "config.json").read_text())
    assert after == {**before, "src_lang": "pt-BR", "tgt_lang": "de"}
    for bad, message in (("EN", "spelled as babel does, 'en'"), ("pt_BR", "write 'pt-BR'")):
        with pytest.raises(ValueError, match=message):
            record_language_pair(tmp_path, bad, "de")


def test_luong_pair_records_shows_and_serve_routes_by_it(tmp_path: Path) -> None:
    model(4, None, None).save_pretrained(tmp_path)
    shown = luong("pair", str(tmp_path))
    assert shown.returncode == 0 and b"no language pair recorded" in shown.stdout
    recorded = luong("pair", str(tmp_path), "--src-lang", "en", "--tgt-lang", "de")
    assert recorded.returncode == 0, recorded.stderr
    assert luong("pair", str(tmp_path)).stdout == b"en-de\n"
    assert_one_line_error(
        luong("pair", str(tmp_path), "--src-lang", "xx", "--tgt-lang", "de"),
        "--src-lang: expected an ISO 639 language code that babel knows",
    )
    assert_one_line_error(luong("pair", str(tmp_path), "--src-lang", "en"), "give both")


def test_luong_train_records_the_pair_and_refuses_a_bad_code(tmp_path: Path) -> None:
    assert_one_line_error(
        luong("train", "dates", "--out", str(tmp_path / "bad"), "--src-lang", "english"),
        "--src-lang: expected an ISO 639 language code that babel knows (en, de, pt-BR), got "
        "'english'",
    )
    assert not (tmp_path / "bad").exists()


def test_serve_api_keys_file_errors_are_one_line(tmp_path: Path) -> None:
    model(4, "en", "de").save_pretrained(tmp_path / "m")
    (tmp_path / "keys").write_text("\n  \n")
    assert_one_line_error(
        luong("serve", str(tmp_path / "m"), "--api-keys", str(tmp_path / "keys")),
        "holds no key",
    )
    assert_one_line_error(
        luong("serve", str(tmp_path / "m"), "--api-keys", str(tmp_path / "none")),
        "no such file",
    )
    assert_one_line_error(  # a folder is not "no such file"
        luong("serve", str(tmp_path / "m"), "--api-keys", str(tmp_path)),
        f"--api-keys: {tmp_path}: a folder, expected a file of keys (one a line)",
    )


def test_luong_train_records_the_pair_and_luong_runs_shows_it(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "dates"
    flags = ["--n-train", "64", "--n-dev", "8", "--n-test", "8", *TINY_MODEL_FLAGS]
    trained = luong(
        "train", "dates", "--out", str(out), "--src-lang", "en", "--tgt-lang", "de", *flags
    )
    assert trained.returncode == 0, trained.stderr.decode()
    raw = json.loads((out / "config.json").read_text())
    assert (raw["src_lang"], raw["tgt_lang"]) == ("en", "de")
    assert read_run(out).settings["vocab.src_lang"] == "en"  # config.toml repeats the run
    assert read_run(out).pair == "en-de"
    assert compare([read_run(out)])[0]["pair"] == "en-de"
    runs = luong("runs", str(tmp_path / "runs"))
    header, row = runs.stdout.decode().splitlines()
    assert row.split()[header.split().index("pair")] == "en-de"


@pytest.mark.parametrize(("pair", "warned"), [((None, None), True), (("en", "de"), False)])
def test_serve_warns_when_no_model_records_a_pair(
    pair: tuple[str | None, str | None],
    warned: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model(4, *pair).save_pretrained(tmp_path / "m")
    monkeypatch.setattr(serve_command.uvicorn.Server, "run", lambda self: None)
    assert cli_main(["serve", str(tmp_path / "m"), "--port", "0"]) == 0
    warning = "no model records its language pair, so the LibreTranslate API has nothing"
    assert (warning in capsys.readouterr().err) is warned
