"""The HTTP APIs of ``luong serve`` at their edges: keys on every translating route, what
``/api/models`` shows (and hides), the LibreTranslate API's lines, request shapes, field
precedence and errors, ``/detect``, and clients that hang up mid-body. One server with keys
for the module (uvicorn on a free loopback port), real clients (``libretranslatepy``,
``httpx``, a raw socket) and, where a browser is installed, the explorer page in headless
Chromium."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import socket
import threading
import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from helpers import SRC_SPACE, small_model
from libretranslatepy import LibreTranslateAPI

from luong.config.faces import ServeLimits
from luong.config.search import SearchOptions
from luong.model.seq2seq import Seq2Seq
from luong.server.app import ServedModel, create_app
from luong.server.libretranslate import LibreRequest, parse_request, translate_answer
from luong.service.texts import join_lines, split_lines
from luong.translation.placeholder_search import translate_masked
from luong.translation.translator import Translator, translate, translate_nbest

KEY = "k1"
LIMITS = ServeLimits(max_sources=4, max_source_len=12)
# What a run's metrics.json holds beside its figures: the host's paths, command and versions.
METRICS = {
    "task": "tsv",
    "test_exact_match": 0.5,
    "test_bleu": math.nan,
    "steps": 12,
    "stopped_early": False,
    "command": ["/home/ann/.venv/bin/luong", "train", "tsv", "--out", "/srv/runs/ende"],
    "data": {"train": "/srv/corpora/train.tsv"},
    "task_options": {"train": "/srv/corpora/train.tsv"},
    "versions": {"luong": "0.1.0", "torch": "2.13.0+cpu", "python": "3.11.7"},
    "data_sha256": {"train": "ab2f6bf1"},
}


def model() -> Seq2Seq:
    """The served en -> de model: its outputs differ from line to line (seed 14)."""
    m = small_model(seed=14, src=SRC_SPACE)
    m.src_lang, m.tgt_lang = "en", "de"
    return m


MODEL = model()


def offline(texts: list[str]) -> list[str]:
    """What ``/translate`` answers for each one-line text: beam 5."""
    return translate(MODEL, texts, SearchOptions(beam=5))


def serving(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port, in a thread; yields its URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
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
    # decoding defaults of beam 5, as the translation preset's models have (config.toml)
    served = [ServedModel("ende", Translator(MODEL, search=SearchOptions(beam=5)), METRICS)]
    yield from serving(create_app(served, max_wait_ms=0, limits=LIMITS, api_keys={KEY}))


def libre(url: str, body: Any = None, **request: Any) -> tuple[int, Any]:
    """POST /translate (a JSON ``body``, or httpx's ``data``/``files``/``params``/
    ``content``/``headers``); the status and the JSON answer, less the ``confidence`` of a
    translation (a number per text, or null: tests/test_glossary.py checks its values)."""
    answer = httpx.post(f"{url}/translate", json=body, timeout=60, **request)
    data = answer.json()
    if answer.status_code == 200:
        confidence = data.pop("confidence")
        for number in confidence if isinstance(confidence, list) else [confidence]:
            assert number is None or 0.0 <= number <= 1.0
    return answer.status_code, data


def error_of(call: Any) -> tuple[int, Any]:
    """The status and JSON body of the HTTP error ``call`` raises (urllib's)."""
    with pytest.raises(urllib.error.HTTPError) as caught:
        call()
    return caught.value.code, json.loads(caught.value.read())


# -- each line of a text translated apart, its breaks kept ----------------------------------


def test_each_line_is_translated_apart_and_the_breaks_are_kept(url: str) -> None:
    # "Print\nSave the file\n\nQuit" was read as one line: one short output.
    lines = ["abc", "hij a bc", "", "dd ee"]
    best = offline(["abc", "hij a bc", "dd ee"])
    expected = f"{best[0]}\n{best[1]}\n\n{best[2]}"
    client = LibreTranslateAPI(url, api_key=KEY)  # a form body
    assert client.translate("\n".join(lines), "en", "de") == expected
    assert expected != offline([" ".join(lines)])[0]
    # JSON: a list of texts, CRLF kept, empty lines first and last kept.
    status, answer = libre(
        url, {"q": ["abc\r\nj", "\nabc\n", "\n\n"], "source": "en", "target": "de", "api_key": KEY}
    )
    abc, j = offline(["abc", "j"])
    assert (status, answer) == (200, {"translatedText": [f"{abc}\r\n{j}", f"\n{abc}\n", "\n\n"]})


def test_html_is_masked_line_by_line(url: str) -> None:
    q = "<b>ab</b> c\nj"
    body = {"q": q, "source": "en", "target": "de", "format": "html", "api_key": KEY}
    status, answer = libre(url, body)
    masked = translate_masked(MODEL, ["<b>ab</b> c", "j"], SearchOptions(beam=5))
    assert (status, answer) == (200, {"translatedText": f"{masked[0][0]}\n{masked[1][0]}"})
    for tag in ("<b>", "</b>", "\n"):
        assert answer["translatedText"].count(tag) == 1


def test_alternatives_of_several_lines_join_each_lines_nbest(url: str) -> None:
    body = {"q": "abc\nj", "source": "en", "target": "de", "alternatives": 2, "api_key": KEY}
    status, answer = libre(url, body)
    (a0, a1, a2), (j0, j1, j2) = translate_nbest(
        MODEL, ["abc", "j"], SearchOptions(beam=5, nbest=3)
    )
    assert (status, answer) == (
        200,
        {"translatedText": f"{a0}\n{j0}", "alternatives": [f"{a1}\n{j1}", f"{a2}\n{j2}"]},
    )


def test_the_limits_count_lines_and_name_them(url: str) -> None:
    too_many = {"q": "a\nb\n\nc\nd\ne", "source": "en", "target": "de", "api_key": KEY}
    assert libre(url, too_many) == (
        400,
        {"error": "Invalid request: max_sources: 5 sources, above the limit of 4"},
    )
    too_long = {"q": ["j", "a\nabcdefghij abc"], "source": "en", "target": "de", "api_key": KEY}
    assert libre(url, too_long) == (
        400,
        {"error": "Invalid request: max_source_len: source 1 line 2 has 14 symbols, above the "
         "limit of 12"},
    )  # fmt: skip


@pytest.mark.parametrize(
    "texts",
    [
        ["a"],
        ["a\nb"],
        ["\n"],
        ["\r\n\r\n"],
        ["a\r\nb\n\nc\n"],
        ["", "x\ny", "\nz"],
        ["a\rb\u2028c"],
    ],
)
def test_split_and_join_lines_give_each_text_back(texts: list[str]) -> None:
    # Each line "translated" as itself: every text comes back byte for byte.
    split = split_lines(texts)
    assert "" not in split.lines and len(split.names) == len(split.lines)
    assert join_lines(split, [[line] for line in split.lines]) == [[text] for text in texts]


def test_join_lines_takes_a_lines_last_translation_where_it_has_fewer() -> None:
    split = split_lines(["a\nb\n\nc", "d"])
    assert split.lines == ["a", "b", "c", "d"]
    assert split.names == ["source 0 line 1", "source 0 line 2", "source 0 line 4", "source 1"]
    joined = join_lines(split, [["A1", "A2", "A3"], ["B1"], [], ["D1", "D2"]])
    assert joined == [["A1\nB1\n\n", "A2\nB1\n\n", "A3\nB1\n\n"], ["D1", "D2"]]


# -- keys on every translating route; /api/models shows no host's paths --------------------


def test_api_translate_and_the_explorers_requests_need_a_key(url: str) -> None:
    body = {"sources": ["abc"], "beam": 16, "nbest": 16}
    missing = httpx.post(f"{url}/api/translate", json=body, timeout=60)
    assert (missing.status_code, missing.json()) == (
        401,
        {"detail": "api key: this server needs one, as the header Authorization: Bearer KEY"},
    )
    assert missing.headers["www-authenticate"] == "Bearer"
    for header in (b"Bearer k2", b"Bearer \xff\xfe", b"Basic azE6", KEY.encode()):
        wrong = httpx.post(
            f"{url}/api/translate", json=body, headers={"Authorization": header}, timeout=60
        )
        assert wrong.status_code == 401, header
    small = {"sources": ["abc"], "beam": 3, "nbest": 3}  # beam 16 would only take longer
    right = httpx.post(
        f"{url}/api/translate", json=small, headers={"Authorization": f"Bearer {KEY}"}, timeout=60
    )
    assert right.status_code == 200
    texts = [h["text"] for h in right.json()["results"][0]["hypotheses"]]
    assert texts == translate_nbest(MODEL, ["abc"], SearchOptions(beam=3, nbest=3))[0]
    # The key is checked before the body: no field error for a keyless client.
    assert httpx.post(f"{url}/api/translate", json={}, timeout=60).status_code == 401
    schema = httpx.get(f"{url}/openapi.json", timeout=60).json()
    assert schema["paths"]["/api/translate"]["post"]["security"] == [{"HTTPBearer": []}]
    # Routes that translate nothing need no key.
    for path in ("/", "/api/models", "/health", "/languages", "/frontend/settings"):
        assert httpx.get(f"{url}{path}", timeout=60).status_code == 200, path
    status, _ = libre(url, {"q": "abc", "source": "en", "target": "de"})
    assert status == 403


def test_api_models_shows_what_a_client_needs_and_nothing_of_the_host(url: str) -> None:
    listed = httpx.get(f"{url}/api/models", timeout=60).json()
    assert listed == {
        "models": [
            {
                "name": "ende",
                "src_lang": "en",
                "tgt_lang": "de",
                "config": MODEL.config.to_json(),
                "src_vocab_size": len(SRC_SPACE),
                "tgt_vocab_size": len(MODEL.tgt_vocab),
                "decoding": SearchOptions(beam=5).to_json(),  # the model's decoding defaults
                # metrics.json's numbers only (NaN as null): no command, path or version
                "metrics": {"test_exact_match": 0.5, "test_bleu": None, "steps": 12},
            }
        ],
        "limits": {
            "max_sources": 4,
            "max_source_len": 12,
            "max_beam": 16,
            "max_nbest": 16,
            "max_prefix_len": 200,
            "max_output_len": 512,
            "max_body_bytes": 1_000_000,
            "max_glossary_terms": 1000,
        },
        "key_required": True,
    }
    text = json.dumps(listed)
    assert not any(word in text for word in ("/srv", "/home", "torch", "python", "3.11"))


# -- bad fields: 400 in LibreTranslate's shape, never 500 ----------------------------------


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"content": '{"q": "abc", "source": "en", "target": "de", "alternatives": "\\u00b2"}'},
         "Invalid request: alternatives must be an int >= 0, got '²'"),
        ({"data": {"q": "abc", "source": "en", "target": "de"}, "params": {"alternatives": "①"}},
         "Invalid request: alternatives must be an int >= 0, got '①'"),
        ({"content": '{"q": "abc", "source": "\\ud800", "target": "de"}'},
         "Invalid request: source is not valid Unicode (a lone surrogate at character 0)"),
        ({"content": '{"q": "abc", "source": "en", "target": "de", "format": "h\\udfff"}'},
         "Invalid request: format is not valid Unicode (a lone surrogate at character 1)"),
        ({"content": '{"q": "abc", "source": "en", "target": "de", "api_key": "\\ud800"}'},
         "Invalid request: api_key is not valid Unicode (a lone surrogate at character 0)"),
        ({"content": '{"q": ["j", "a\\nb\\ud800"], "source": "en", "target": "de"}'},
         "Invalid request: sources: source 1 is not valid Unicode (a lone surrogate at "
         "character 3)"),
    ],
)  # fmt: skip
def test_bad_fields_are_librestranslates_400_never_500(
    url: str, request_: dict[str, Any], message: str
) -> None:
    headers = {"Content-Type": "application/json"} if "content" in request_ else {}
    assert libre(url, headers=headers, **request_) == (400, {"error": message})


def test_decimal_digits_of_any_script_are_alternatives(url: str) -> None:
    body = {"q": "abc", "source": "en", "target": "de", "alternatives": " \u0662 ", "api_key": KEY}
    status, answer = libre(url, body)  # ARABIC-INDIC DIGIT TWO: int() reads it, as LibreTranslate
    assert status == 200 and len(answer["alternatives"]) == 2


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("model", "model: expected one of ende, got 'a\\ud800'"),
        (
            "placeholders",
            "placeholders: expected valid Unicode, got a lone surrogate at character 1",
        ),
        ("combine", "combine: expected valid Unicode, got a lone surrogate at character 1"),
    ],
)
def test_api_translate_answers_a_lone_surrogate_in_its_own_shape(
    url: str, field: str, message: str
) -> None:
    answer = httpx.post(
        f"{url}/api/translate",
        content=json.dumps({"sources": ["abc"], field: "a\ud800"}),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        timeout=60,
    )
    assert (answer.status_code, answer.json()) == (422, {"detail": message})


# -- /detect: LibreTranslate's error shape ----------------------------------------------------


def test_detect_is_librestranslates_error_naming_the_served_sources(url: str) -> None:
    status, body = error_of(lambda: LibreTranslateAPI(url, api_key=KEY).detect("abc"))
    assert (status, body) == (
        400,
        {"error": "this server detects no languages: give source, one of the languages it "
         "translates from (en; GET /languages)"},
    )  # fmt: skip


# -- which field wins, format's default, alternatives ------------------------------------------


def test_a_json_body_is_read_alone_and_the_query_string_wins_over_a_form(url: str) -> None:
    fields = {"q": "abc", "source": "en", "api_key": KEY}
    expected = {"translatedText": offline(["abc"])[0]}
    unsupported = {"error": "xx is not supported"}
    # JSON: the body alone; the query string is not read, even for a field the body lacks.
    assert libre(url, {**fields, "target": "de"}, params={"target": "xx"}) == (200, expected)
    assert libre(url, fields, params={"target": "de"}) == (
        400,
        {"error": "Invalid request: missing target parameter"},
    )
    # A form (urlencoded or multipart) and the query string: the query string's value wins,
    # as Werkzeug's request.values (args first) gives LibreTranslate; a name twice: its first.
    for form_target, query, result in [
        ("xx", {"target": "de"}, (200, expected)),
        ("de", {"target": "xx"}, (400, unsupported)),
        ("xx", [("target", "de"), ("target", "xx")], (200, expected)),
    ]:
        form = {**fields, "target": form_target}
        assert libre(url, data=form, params=query) == result
        multipart = {k: (None, v) for k, v in form.items()}
        assert libre(url, files=multipart, params=query) == result
    assert parse_request("", b"target=xx&target=de", {"q": "a", "source": "en"}).target == "xx"


@pytest.mark.parametrize("request_", [{"json": None}, {"json": ""}, {"form": ""}])
def test_format_empty_or_null_means_text(url: str, request_: dict[str, Any]) -> None:
    q = "<b>a</b>"
    fields = {"q": q, "source": "en", "target": "de", "api_key": KEY}
    as_text = offline([q])[0]
    as_html = translate_masked(MODEL, [q], SearchOptions(beam=5))[0][0]
    assert as_text != as_html  # the two formats give different outputs here
    if "json" in request_:
        answer = libre(url, {**fields, "format": request_["json"]})
    else:
        answer = libre(url, data={**fields, "format": request_["form"]})
    assert answer == (200, {"translatedText": as_text})


def test_alternatives_never_repeat_the_translation_nor_each_other() -> None:
    asked = LibreRequest(["a", "b"], True, "en", "de", "text", 3, None)
    outputs = [["x", "x", "y", "x", "y", "z", "w"], ["u"]]
    assert translate_answer(asked, outputs, "en") == {
        "translatedText": ["x", "u"],
        "alternatives": [["y", "z", "w"], []],
    }
    single = LibreRequest(["a"], False, "en", "de", "text", 1, None)
    assert translate_answer(single, [["x", "x", "y"]], "en") == {
        "translatedText": "x",
        "alternatives": ["y"],
    }


def test_alternatives_from_the_server_never_repeat_the_translation(url: str) -> None:
    body = {"q": ["abc", "j\nabc"], "source": "en", "target": "de", "api_key": KEY}
    status, answer = libre(url, {**body, "alternatives": 15})  # beam 16: repeats are likely
    assert status == 200
    for best, others in zip(answer["translatedText"], answer["alternatives"], strict=True):
        assert others and best not in others and len(set(others)) == len(others)


# -- a client that hangs up mid-body: one line in the log, no traceback --------------------


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize("path", ["/translate", "/api/translate"])
@pytest.mark.parametrize("chunked", [False, True])
def test_a_client_that_hangs_up_mid_body_is_one_line_in_the_log(
    url: str, path: str, chunked: bool
) -> None:
    records = Records()
    log = logging.getLogger("uvicorn.error")
    log.addHandler(records)
    host, port = url.removeprefix("http://").split(":")
    try:
        with socket.create_connection((host, int(port))) as client:
            body = b'5\r\n{"q":\r\n' if chunked else b'{"q": "ab'
            length = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: 1000"
            client.sendall(
                b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n\r\n%s"
                % (path.encode(), length, body)
            )
            peer = "{}:{}".format(*client.getsockname())
            time.sleep(0.1)
        for _ in range(100):
            if records.records:
                break
            time.sleep(0.05)
        time.sleep(0.1)  # anything logged after the line
    finally:
        log.removeHandler(records)
    lines = [(r.levelname, r.getMessage(), r.exc_info is None) for r in records.records]
    expected = f"POST {path}: the client hung up before its body was sent ({peer})"
    assert lines == [("WARNING", expected, True)]


# -- the explorer page with keys, in a browser ----------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing = "selenium is not installed (pip install -e '.[dev]')"
    if missing is None and (CHROMIUM is None or DRIVER is None):
        missing = "no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)"
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the browser test cannot run: {missing}")
        pytest.skip(missing)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, script: str) -> Any:
    for _ in range(600):
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never true in the page: {script}")


def test_the_explorer_asks_for_the_key_and_sends_it(url: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(url + "/")
    wait(browser, "return document.body.dataset.ready")
    box = browser.find_element(By.ID, "api-key")
    assert box.is_displayed()
    time.sleep(0.3)
    # Without a key the example is not sent (it would only be refused).
    assert browser.execute_script("return document.body.dataset.done") is None
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys("abc hij")
    for key, done in (("k2", "1"), (KEY, "2")):
        box.clear()
        box.send_keys(key)
        browser.find_element(By.ID, "translate").click()
        wait(browser, f"return document.body.dataset.done === '{done}'")
        if key != KEY:  # the server's message, in the panel and the status line
            message = "api key: not one of this server's keys"
            assert browser.find_element(By.CSS_SELECTOR, ".panel .error").text == message
            assert browser.find_element(By.ID, "status").text == f"ende: {message}"
    output = browser.find_element(By.CSS_SELECTOR, ".panel .output").text
    # empty boxes: the model's decoding defaults (beam 5 here)
    assert output == translate(MODEL, ["abc hij"], SearchOptions(beam=5))[0]
    assert browser.find_element(By.ID, "status").text == ""
