"""The attention explorer in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium) against ``luong serve`` on a free loopback port.

Two models: ``general`` (sources up to 64 symbols) and ``dot`` (up to 24), so one source can
be refused by one model and answered by the other. Without a browser the tests are skipped,
saying why; under ``CI=true`` a missing browser fails (``.ci/run`` installs it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import SRC_SPACE, small_model

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
EXAMPLE = "Monday, March 5, 1979"  # the page's own example, translated on arrival
HOVER_HINT = "hover a cell for its weight"
HANDLED = {"sources", "model", "attention", "prefix"}  # set by the page itself, not controls
NO_CONTROL = {"glossary"}  # a list of [source, target] pairs: no control of the page holds one
BAR_HEIGHT = 86  # px of a bar of weight 1 (explorer.js)


def browser_missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None or DRIVER is None:
        return "no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def refusal(server: str, body: dict[str, Any]) -> str:
    """The server's message for a request it refuses; FastAPI's list of field errors as
    ``field: message``, joined by "; "."""
    with pytest.raises(urllib.error.HTTPError) as info:
        post(server + "/api/translate", body)
    detail = json.loads(info.value.read())["detail"]
    if isinstance(detail, str):
        return detail
    return "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in detail)


def answer(server: str, source: str, model: str, **options: Any) -> Any:
    body = {"sources": [source], "model": model, "attention": True, **options}
    return post(server + "/api/translate", body)["results"][0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the browser test cannot run: {missing}")
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("models")
    small_model(seed=4, src=SRC_SPACE).save_pretrained(root / "general")
    small_model(seed=5, src=SRC_SPACE, attention="dot", max_src_len=24).save_pretrained(
        root / "dot"
    )
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "luong", "serve", str(root / "general"), str(root / "dot")]
    process = subprocess.Popen([*command, "--port", str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{base}/health", timeout=5)
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, script: str) -> Any:
    """Poll ``script`` (JavaScript returning a value) until it is truthy."""
    for _ in range(600):
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never true in the page: {script}")


def open_page(driver: Any, server: str) -> list[Any]:
    """Load the page, wait for the example's translation; the panels."""
    from selenium.webdriver.common.by import By

    driver.get(server + "/")
    wait(driver, "return document.body.dataset.ready")
    wait(driver, "return document.body.dataset.done === '1'")
    return list(driver.find_elements(By.CSS_SELECTOR, ".panel"))


def runs_done(driver: Any) -> int:
    return int(driver.execute_script("return Number(document.body.dataset.done || 0)"))


def translate(driver: Any, source: str | None = None) -> None:
    """Type ``source`` (when given), press Translate, wait for the answers."""
    from selenium.webdriver.common.by import By

    if source is not None:
        box = driver.find_element(By.ID, "source")
        box.clear()
        box.send_keys(source)
    done = runs_done(driver)
    driver.find_element(By.ID, "translate").click()
    wait(driver, f"return Number(document.body.dataset.done) > {done}")


def text_of(panel: Any, selector: str) -> str:
    """An element's text, shown or not."""
    from selenium.webdriver.common.by import By

    return str(panel.find_element(By.CSS_SELECTOR, selector).get_attribute("textContent"))


def status_lines(driver: Any) -> list[str]:
    return list(
        driver.execute_script(
            "return [...document.querySelectorAll('#status p')].map((p) => p.textContent)"
        )
    )


def nbest(panel: Any) -> list[tuple[str, str]]:
    """The n-best list as shown: (text, score) pairs."""
    from selenium.webdriver.common.by import By

    items = panel.find_elements(By.CSS_SELECTOR, ".nbest li")
    return [(text_of(li, ".text"), text_of(li, ".score")) for li in items]


def set_field(driver: Any, selector: str, value: str) -> None:
    from selenium.webdriver.common.by import By

    field = driver.find_element(By.CSS_SELECTOR, selector)
    field.clear()
    if value:
        field.send_keys(value)


def test_first_page_shows_the_example_translated(server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    panels = open_page(browser, server)
    assert [p.get_attribute("data-model") for p in panels] == ["general", "dot"]
    assert browser.find_element(By.ID, "source").get_attribute("value") == EXAMPLE
    for panel in panels:
        expected = answer(server, EXAMPLE, str(panel.get_attribute("data-model")))
        best = expected["hypotheses"][0]
        assert text_of(panel, ".output") == best["text"]
        cells = panel.find_elements(By.CSS_SELECTOR, ".heatmap td.cell")
        assert len(cells) == len(expected["source_tokens"]) * len(best["tokens"])


def test_translate_heatmap_hover_and_prefix(server: str, browser: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    panels = open_page(browser, server)
    source = "abc de"
    translate(browser, source)
    for panel in panels:  # side by side: each model's own answer
        expected = answer(server, source, str(panel.get_attribute("data-model")))
        best = expected["hypotheses"][0]
        assert panel.find_element(By.CSS_SELECTOR, ".output").text == best["text"]
        cells = panel.find_elements(By.CSS_SELECTOR, ".heatmap td.cell")
        assert len(cells) == len(expected["source_tokens"]) * len(best["tokens"])
        assert len(panel.find_elements(By.CSS_SELECTOR, ".heatmap .bar")) == len(
            expected["source_tokens"]
        )
        steps = panel.find_elements(By.CSS_SELECTOR, ".heatmap tbody td.step")
        assert [s.text for s in steps] == [str(t + 1) for t in range(len(best["tokens"]))]
    panel = panels[0]
    t, s = 1, 2
    cell = panel.find_element(By.CSS_SELECTOR, f'td.cell[data-step="{t}"][data-source="{s}"]')
    ActionChains(browser).move_to_element(cell).perform()
    best = answer(server, source, "general")["hypotheses"][0]
    shown = {" ": "\u2423"}
    token, symbol = shown.get(best["tokens"][t], best["tokens"][t]), shown.get(source[s], source[s])
    expected_hover = f"step {t + 1}, {token} \u2190 {symbol}: {best['attention'][t][s]:.3f}"
    assert text_of(panel, ".hover") == expected_hover

    # Another sentence, the pointer still on the heatmap: no weight of the old one stays.
    other = "hij"
    done = runs_done(browser)
    browser.execute_script(
        "document.getElementById('source').value = arguments[0];"
        "document.getElementById('form').requestSubmit()",
        other,
    )
    wait(browser, f"return Number(document.body.dataset.done) > {done}")
    result = answer(server, other, "general")
    new, symbols = result["hypotheses"][0], result["source_tokens"]
    possible = {HOVER_HINT}
    if t < len(new["tokens"]) and s < len(symbols):  # the pointer may rest on a new cell
        token, symbol = shown.get(new["tokens"][t], new["tokens"][t]), symbols[s]
        possible.add(f"step {t + 1}, {token} \u2190 {symbol}: {new['attention'][t][s]:.3f}")
    assert text_of(panel, ".hover") in possible

    # The user edits the start of the output; the model continues from there.
    translate(browser, source)
    prefix = panel.find_element(By.CSS_SELECTOR, ".prefix")
    prefix.send_keys("12-")
    done = runs_done(browser)
    panel.find_element(By.CSS_SELECTOR, ".continue").click()
    wait(browser, f"return Number(document.body.dataset.done) > {done}")
    continued = answer(server, source, "general", prefix="12-")["hypotheses"][0]
    output = panel.find_element(By.CSS_SELECTOR, ".output").text
    assert output == continued["text"] and output.startswith("12-")
    cells = panel.find_elements(By.CSS_SELECTOR, ".heatmap td.cell")
    assert len(cells) == (len(source) + 1) * len(continued["tokens"])
    assert len(panel.find_elements(By.CSS_SELECTOR, ".heatmap tr.forced")) == 3


def test_each_bar_stands_under_its_column(server: str, browser: Any) -> None:
    """The bar of source symbol s is centred under heatmap column s (within half a pixel),
    and its height is the selected step's weight."""
    from selenium.webdriver.common.by import By

    panels = open_page(browser, server)
    source = "abc de fgh"
    translate(browser, source)
    centre = "const r = arguments[0].getBoundingClientRect(); return r.left + r.width / 2;"
    for panel in panels:
        best = answer(server, source, str(panel.get_attribute("data-model")))["hypotheses"][0]
        t = 1
        panel.find_elements(By.CSS_SELECTOR, ".heatmap tbody th")[t].click()
        cells = panel.find_elements(By.CSS_SELECTOR, f'.heatmap td.cell[data-step="{t}"]')
        bars = panel.find_elements(By.CSS_SELECTOR, ".heatmap .bar")
        assert len(bars) == len(cells) == len(source) + 1  # the source's symbols and its EOS
        for cell, bar in zip(cells, bars, strict=True):
            assert (
                abs(browser.execute_script(centre, bar) - browser.execute_script(centre, cell))
                < 0.5
            )
        heights = [round(bar.rect["height"]) for bar in bars]
        assert heights == [round(w * BAR_HEIGHT) for w in best["attention"][t]]


def test_an_error_clears_the_panel_and_every_models_error_is_shown(
    server: str, browser: Any
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    panels = open_page(browser, server)
    general, dot = panels
    translate(browser, "abc de")
    ActionChains(browser).move_to_element(dot.find_element(By.CSS_SELECTOR, "td.cell")).perform()
    assert text_of(dot, ".hover") != HOVER_HINT

    def cleared(panel: Any, message: str) -> None:
        assert text_of(panel, ".error") == message
        assert text_of(panel, ".output") == ""
        assert text_of(panel, ".hover") == HOVER_HINT
        for selector in (".nbest li", ".heatmap td.cell", ".heatmap .bar"):
            assert panel.find_elements(By.CSS_SELECTOR, selector) == []

    # 30 symbols: above dot's 24, within general's 64. dot is cleared, general answers.
    medium = "abcdefghij" * 3
    translate(browser, medium)
    dot_message = refusal(server, {"sources": [medium], "model": "dot"})
    assert dot_message == "max_source_len: source 0 has 30 symbols, above the limit of 24"
    cleared(dot, dot_message)
    assert text_of(general, ".error") == ""
    assert text_of(general, ".output") == answer(server, medium, "general")["hypotheses"][0]["text"]
    assert status_lines(browser) == [f"dot: {dot_message}"]

    # 70 symbols: both refuse, and both messages are shown.
    long = "abcdefghij" * 7
    translate(browser, long)
    messages = {m: refusal(server, {"sources": [long], "model": m}) for m in ("general", "dot")}
    cleared(general, messages["general"])
    cleared(dot, messages["dot"])
    assert status_lines(browser) == [f"general: {messages['general']}", f"dot: {messages['dot']}"]

    # An option every model refuses: one line naming both.
    set_field(browser, "#option-temperature", "0")
    translate(browser, "abc de")
    message = refusal(server, {"sources": ["abc de"], "temperature": 0.0})
    assert message == "temperature: expected a finite number > 0, got 0.0"
    cleared(general, message)
    cleared(dot, message)
    assert status_lines(browser) == [f"general, dot: {message}"]

    set_field(browser, "#option-temperature", "1")
    translate(browser)  # and back: both drawn, no error left
    for panel in panels:
        best = answer(server, "abc de", str(panel.get_attribute("data-model")))["hypotheses"][0]
        assert text_of(panel, ".error") == ""
        assert text_of(panel, ".output") == best["text"]
    assert status_lines(browser) == []


RECORD_REQUESTS = """
window.requests = [];
const real = window.fetch;
window.fetch = (url, init) => {
  if (url === "/api/translate") window.requests.push(JSON.parse(init.body));
  return real(url, init);
};
"""


def test_option_controls_come_from_the_schema(server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, server)
    with urllib.request.urlopen(server + "/openapi.json", timeout=60) as schema_answer:
        schema = json.loads(schema_answer.read())["components"]["schemas"]["TranslateRequest"]
    names = [name for name in schema["properties"] if name not in HANDLED | NO_CONTROL]
    assert {"beam", "nbest", "alpha", "beta", "sample", "temperature", "top_k", "seed"} <= set(
        names
    )
    controls = browser.find_elements(By.CSS_SELECTOR, "#options [data-option]")
    assert [c.get_attribute("data-option") for c in controls] == names
    for control in controls:
        name = str(control.get_attribute("data-option"))
        label = browser.execute_script("return arguments[0].labels[0].textContent", control)
        assert label == name.replace("_", "-")
        assert str(control.get_attribute("title")).startswith(
            schema["properties"][name]["description"]
        )
    kinds = {c.get_attribute("data-option"): c.get_attribute("type") for c in controls}
    assert (kinds["beta"], kinds["temperature"], kinds["sample"]) == (
        "number",
        "number",
        "checkbox",
    )

    # Only what differs from the schema's defaults is sent; the answer is the API's.
    source = "abc de"
    browser.execute_script(RECORD_REQUESTS)
    set_field(browser, "#option-beam", "3")
    set_field(browser, "#option-nbest", "3")
    set_field(browser, "#option-beta", "1")
    translate(browser, source)
    sent = {"sources": [source], "attention": True, "beam": 3, "nbest": 3, "beta": 1}
    requests = browser.execute_script("return window.requests")
    assert requests == [{**sent, "model": "general"}, {**sent, "model": "dot"}]
    general = browser.find_elements(By.CSS_SELECTOR, ".panel")[0]
    with_beta = answer(server, source, "general", beam=3, nbest=3, beta=1.0)["hypotheses"]
    without = answer(server, source, "general", beam=3, nbest=3)["hypotheses"]
    assert [h["score"] for h in with_beta] != [h["score"] for h in without]  # beta did something
    assert nbest(general) == [(h["text"], f"{h['score']:.4f}") for h in with_beta]

    # Sampling with a temperature and a seed: the same draws as the API's.
    set_field(browser, "#option-beam", "1")
    set_field(browser, "#option-nbest", "2")
    set_field(browser, "#option-beta", "")
    browser.find_element(By.CSS_SELECTOR, "#option-sample").click()
    set_field(browser, "#option-temperature", "2")
    set_field(browser, "#option-seed", "7")
    browser.execute_script("window.requests = []")
    translate(browser)
    sent = {
        "sources": [source],
        "attention": True,
        "nbest": 2,
        "sample": True,
        "temperature": 2,
        "seed": 7,
    }
    assert browser.execute_script("return window.requests")[0] == {**sent, "model": "general"}
    drawn = answer(server, source, "general", nbest=2, sample=True, temperature=2.0, seed=7)
    assert nbest(general) == [(h["text"], f"{h['score']:.4f}") for h in drawn["hypotheses"]]

    # A seed JavaScript cannot send exactly is refused in the page, naming the option.
    set_field(browser, "#option-seed", str(2**64))
    browser.execute_script("window.requests = []")
    browser.find_element(By.ID, "translate").click()
    wait(browser, "return document.querySelector('#status p')")
    assert status_lines(browser) == [
        f"seed: expected an integer of at most {2**53 - 1} in this page, got {2**64}"
    ]
    assert browser.execute_script("return window.requests") == []


HOLD_REQUESTS = """
window.held = [];
const real = window.fetch;
window.fetch = (url, init) => url !== "/api/translate" ? real(url, init)
  : new Promise((resolve) => window.held.push(() => resolve(real(url, init))));
"""


def test_busy_indicator_and_length_counter(server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    panels = open_page(browser, server)
    busy = browser.find_element(By.ID, "busy")
    assert not busy.is_displayed()
    browser.execute_script(HOLD_REQUESTS)  # answers wait until the test lets them through
    done = runs_done(browser)
    browser.find_element(By.ID, "translate").click()
    wait(browser, "return window.held.length === 2")
    assert busy.is_displayed() and busy.text == "translating\u2026"
    assert [p.get_attribute("aria-busy") for p in panels] == ["true", "true"]
    browser.execute_script("window.held.splice(0).forEach((go) => go())")
    wait(browser, f"return Number(document.body.dataset.done) > {done}")
    assert not busy.is_displayed()
    assert [p.get_attribute("aria-busy") for p in panels] == [None, None]

    counter = browser.find_element(By.ID, "length")
    set_field(browser, "#source", "abc de")
    assert counter.text == "6/24"  # dot's max_src_len, the smallest of the shown models
    browser.find_element(By.CSS_SELECTOR, '#models input[value="dot"]').click()
    assert counter.text == "6/64"
    set_field(browser, "#source", "a" * 65)
    assert counter.text == "65/64" and "over" in str(counter.get_attribute("class"))
