"""The server's part of the decoding battery (scripts/decoding_battery.sh): a `luong serve`
over two models, asked through real clients, each answer written to a file of OUT, so that
two commits' answers can be compared byte for byte (diff -r).

    python scripts/server_battery.py DATES TRANSLATION DATES_SOURCES DEVTEST_SOURCES OUT

DATES: a dates run folder; TRANSLATION: a subword model that records its language pair
(en-de: luong pair DIR --src-lang en --tgt-lang de), for LibreTranslate's /translate; the
sources: one a line. `POST /api/translate` is asked with httpx (the client the tests use),
LibreTranslate's `/translate` with libretranslatepy (text) and httpx (html, which
libretranslatepy cannot ask for), both one sentence and batches. The server is the `luong`
on PATH (or $LUONG), started on a free port and stopped at the end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from libretranslatepy import LibreTranslateAPI


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(url: str, server: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server stopped: {server.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit("the server did not come up")


def main() -> int:
    if len(sys.argv) != 6:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    dates, translation, dates_file, devtest_file, out_name = sys.argv[1:]
    out = Path(out_name)
    out.mkdir(parents=True, exist_ok=True)
    dates_sources = Path(dates_file).read_text(encoding="utf-8").splitlines()[:60]
    devtest = Path(devtest_file).read_text(encoding="utf-8").splitlines()[:40]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    luong = os.environ.get("LUONG", "luong")
    command = [luong, "serve", dates, translation, "--port", str(port), "--max-beam", "8"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until_up(url, server)
        dates_name, tr_name = Path(dates).resolve().name, Path(translation).resolve().name
        asks = {
            "api_d_greedy": {"model": dates_name, "sources": dates_sources},
            "api_d_beam5": {
                "model": dates_name,
                "sources": dates_sources,
                "beam": 5,
                "nbest": 3,
                "alpha": 0.6,
                "beta": 0.2,
                "attention": True,
            },
            "api_d_align_prefix": {
                "model": dates_name,
                "sources": dates_sources[:20],
                "beam": 3,
                "prefix": "19",
                "align": True,
            },
            "api_d_sample": {
                "model": dates_name,
                "sources": dates_sources[:20],
                "sample": True,
                "nbest": 2,
                "seed": 5,
            },
            "api_tr_beam5": {"model": tr_name, "sources": devtest, "beam": 5, "alpha": 0.6},
            "api_tr_unk": {
                "model": tr_name,
                "sources": devtest[:10],
                "replace_unk": True,
                "attention": True,
            },
        }
        with httpx.Client(timeout=600) as client:
            for name, body in asks.items():
                answer = client.post(url + "/api/translate", json=body)
                (out / f"{name}.json").write_bytes(
                    f"{answer.status_code}\n".encode() + answer.content
                )
            html = [
                "Open <b>%s</b> in the <i>file</i> manager",
                "<a href='x'>Save</a> the file?",
            ]
            html_body = {"q": html, "source": "en", "target": "de", "format": "html"}
            answer = client.post(url + "/translate", json=html_body)
            (out / "libre_html.json").write_bytes(answer.content)
            batch = {"q": devtest[:15], "source": "en", "target": "de", "alternatives": 2}
            answer = client.post(url + "/translate", json=batch)
            (out / "libre_batch.json").write_bytes(answer.content)
        libre = LibreTranslateAPI(url + "/")
        texts = [libre.translate(text, "en", "de") for text in devtest[:10]]
        (out / "libre_client.json").write_text(json.dumps(texts, ensure_ascii=False) + "\n")
    finally:
        server.terminate()
        server.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
