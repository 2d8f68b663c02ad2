"""A screenshot of the attention explorer (``luong serve``'s page) in headless Chromium.

    .venv/bin/python scripts/explorer_screenshot.py runs/dot runs/general runs/concat \\
        --out docs/explorer.png [--source "Monday, March 5, 1979"] [--prefix 1979-04] \\
        [--beam 3 --nbest 3]

Starts ``luong serve`` on the model folders at a free loopback port, opens the page in
Debian's ``chromium`` (driven by Selenium through ``chromedriver``), waits for the example's
translation, sets the page's ``beam`` and ``nbest`` controls, translates ``--source`` with
every model side by side, selects an output step (its bar chart) and hovers a heatmap cell
(its weight), and, with ``--prefix``, has the first model continue from that prefix; then
saves the whole page as a PNG. Needs ``apt-get install
chromium chromium-driver`` and the dev extra (selenium).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(driver: webdriver.Chrome, script: str) -> None:
    for _ in range(1200):
        if driver.execute_script(script):
            return
        time.sleep(0.05)
    raise SystemExit(f"the page never got there: {script}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", type=Path, help="model folders")
    parser.add_argument("--out", type=Path, default=Path("docs/explorer.png"))
    parser.add_argument("--source", default="Monday, March 5, 1979")
    parser.add_argument("--prefix", default="", help="the first model continues from this")
    parser.add_argument("--step", type=int, default=5, help="the output step selected (0-based)")
    parser.add_argument("--beam", type=int, default=3, help="the page's beam (default 3)")
    parser.add_argument("--nbest", type=int, default=3, help="the page's n-best (default 3)")
    parser.add_argument("--width", type=int, default=1680)
    args = parser.parse_args()
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        raise SystemExit(
            "needs chromium and chromedriver: apt-get install chromium chromium-driver"
        )

    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "luong", "serve", *map(str, args.models), "--port", str(port)]
    server = subprocess.Popen(command, env=env)
    base = f"http://127.0.0.1:{port}/"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={args.width},1000")
    driver = None
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "health", timeout=5)
                break
            except OSError:
                time.sleep(0.1)
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
        driver.get(base)
        wait(driver, "return document.body.dataset.done === '1'")  # the example's answer
        for name, value in (("beam", args.beam), ("nbest", args.nbest)):
            field = driver.find_element(By.ID, f"option-{name}")
            field.clear()
            field.send_keys(str(value))
        box = driver.find_element(By.ID, "source")
        box.clear()
        box.send_keys(args.source)
        driver.find_element(By.ID, "translate").click()
        wait(driver, "return document.body.dataset.done === '2'")
        panel = driver.find_elements(By.CSS_SELECTOR, ".panel")[0]
        if args.prefix:
            panel.find_element(By.CSS_SELECTOR, ".prefix").send_keys(args.prefix)
            panel.find_element(By.CSS_SELECTOR, ".continue").click()
            wait(driver, "return document.body.dataset.done === '3'")
        # The whole page in the window before the pointer moves: a resize or a scroll after the
        # hover would move the cell from under the pointer, and the readout would go blank.
        # The window's height counts the browser's frame (about 140 px headless): add it.
        height, frame = driver.execute_script(
            "return [Math.ceil(document.body.getBoundingClientRect().bottom),"
            " outerHeight - innerHeight]"
        )
        driver.set_window_size(args.width, height + frame)
        for each in driver.find_elements(By.CSS_SELECTOR, ".panel"):
            rows = each.find_elements(By.CSS_SELECTOR, ".heatmap tbody th")
            rows[min(args.step, len(rows) - 1)].click()
        cells = panel.find_elements(By.CSS_SELECTOR, f'.heatmap td.cell[data-step="{args.step}"]')
        best = max(cells, key=lambda c: float(c.get_attribute("data-weight") or 0))
        ActionChains(driver).move_to_element(best).perform()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(args.out))
        print(f"wrote {args.out}")
    finally:
        if driver is not None:
            driver.quit()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
