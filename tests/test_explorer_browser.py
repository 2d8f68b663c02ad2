"""The attention explorer in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium) against ``luong serve`` on a free loopback port.

Without a browser the test is skipped, saying why; under ``CI=true`` a missing browser fails
(``.ci/run`` installs it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import SRC_SPACE, small_model

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the browser test cannot run: {missing}")
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("models")
    small_model(seed=4, src=SRC_SPACE).save_pretrained(root / "general")
    small_model(seed=5, src=SRC_SPACE, attention="dot").save_pretrained(root / "dot")
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


def test_translate_heatmap_hover_and_prefix(server: str, browser: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    browser.get(server + "/")
    wait(browser, "return document.body.dataset.ready")
    panels = browser.find_elements(By.CSS_SELECTOR, ".panel")
    assert [p.get_attribute("data-model") for p in panels] == ["general", "dot"]
    source = "abc de"
    box = browser.find_element(By.ID, "source")
    box.clear()
    box.send_keys(source)
    browser.find_element(By.ID, "translate").click()
    wait(browser, "return document.body.dataset.done === '1'")
    for panel in panels:  # side by side: each model's own answer
        name = panel.get_attribute("data-model")
        expected = post(
            server + "/api/translate", {"sources": [source], "model": name, "attention": True}
        )["results"][0]
        best = expected["hypotheses"][0]
        assert panel.find_element(By.CSS_SELECTOR, ".output").text == best["text"]
        cells = panel.find_elements(By.CSS_SELECTOR, ".heatmap td.cell")
        assert len(cells) == len(expected["source_tokens"]) * len(best["tokens"])
        assert len(panel.find_elements(By.CSS_SELECTOR, ".bars .bar")) == len(
            expected["source_tokens"]
        )
    panel = panels[0]
    t, s = 1, 2
    cell = panel.find_element(By.CSS_SELECTOR, f'td.cell[data-step="{t}"][data-source="{s}"]')
    ActionChains(browser).move_to_element(cell).perform()
    weight = best_of(server, source, "general")["attention"][t][s]
    tokens = best_of(server, source, "general")["tokens"]
    shown = {" ": "\u2423"}
    expected_hover = (
        f"{shown.get(tokens[t], tokens[t])} \u2190 {shown.get(source[s], source[s])}: {weight:.3f}"
    )
    assert panel.find_element(By.CSS_SELECTOR, ".hover").text == expected_hover

    # The user edits the start of the output; the model continues from there.
    prefix = panel.find_element(By.CSS_SELECTOR, ".prefix")
    prefix.send_keys("12-")
    panel.find_element(By.CSS_SELECTOR, ".continue").click()
    wait(browser, "return document.body.dataset.done === '2'")
    continued = best_of(server, source, "general", prefix="12-")
    output = panel.find_element(By.CSS_SELECTOR, ".output").text
    assert output == continued["text"] and output.startswith("12-")
    cells = panel.find_elements(By.CSS_SELECTOR, ".heatmap td.cell")
    assert len(cells) == (len(source) + 1) * len(continued["tokens"])
    assert len(panel.find_elements(By.CSS_SELECTOR, ".heatmap tr.forced")) == 3


def best_of(server: str, source: str, model: str, prefix: str = "") -> Any:
    body = {"sources": [source], "model": model, "attention": True, "prefix": prefix}
    return post(server + "/api/translate", body)["results"][0]["hypotheses"][0]
