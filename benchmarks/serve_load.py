"""Serving under load: ``luong serve`` against offline decoding at the same batch size.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/serve_load.py runs/dates \\
        [--clients 1 8 64] [--per-request 1 8] [--requests 1000] [--max-batch 64] \\
        [--max-wait-ms 2] [--json FILE]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/serve_load.py runs/de \\
        --data ../shared/data/gettext-en-de/devtest.tsv --client libretranslate --clients 64

1. Offline: the dates test inputs (``load_task("dates", n_train=0, n_dev=0).test``), or the
   sources of ``--data`` (a TSV's first column, each once, in order), translated through
   ``luong.load(MODEL).translations`` at ``--max-batch`` sentences a call with the model's
   decoding defaults (what the server does with a request that sets no option; the
   translation preset's: beam 5, alpha 0.6), one thread: what ``luong translate --batch-size
   N`` does, without the process start and model load. Sentences per second (the median of
   3 runs), and the latency of one sentence alone (batch 1).
2. Served: ``luong serve MODEL --max-batch N --max-wait-ms M`` in a subprocess (one thread
   for torch); for each ``--clients`` count C, C clients in a closed loop (the next request
   when the answer came) until ``--requests`` are answered. ``--client raw``: coroutines of
   one event loop in this process, each on its own keep-alive connection, cheap in CPU,
   sending ``POST /api/translate`` with one source (``--per-request``: that many) at a time.
   ``--client libretranslate``: C threads, each with libretranslatepy's ``LibreTranslateAPI``
   (a real client of the LibreTranslate API, a new connection a request) sending one source
   to ``/translate`` (the model folder must record its language pair: ``luong pair DIR
   --src-lang en --tgt-lang de``). Sentences per second over the whole run, p50 and p99
   latency of a request, the requests a batch held on average (the server's ``/health``
   counters), and the answers that differ from offline decoding (``wrong``: 0 expected).

The load average of the machine (``os.getloadavg``) is printed with each figure: on a shared
machine other work takes cores, and the figures say so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import torch
from libretranslatepy import LibreTranslateAPI

import luong
from luong.tasks import load_task
from luong.translation.translator import Translator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def load_average() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def texts(translator: Translator, sources: list[str], batch: int) -> list[str]:
    """The outputs of the one path a request takes, with the model's decoding defaults."""
    return [t.texts[0] for t in translator.translations(sources, batch_size=batch)]


def offline(translator: Translator, sources: list[str], batch: int) -> dict[str, Any]:
    texts(translator, sources[: batch * 2], batch)  # warm-up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        outputs = texts(translator, sources, batch)
        times.append(time.perf_counter() - start)
    alone = []
    for source in sources[:200]:
        start = time.perf_counter()
        texts(translator, [source], 1)
        alone.append(time.perf_counter() - start)
    return {
        "sentences_per_s": len(sources) / statistics.median(times),
        "one_p50_ms": 1000 * percentile(alone, 50),
        "one_p99_ms": 1000 * percentile(alone, 99),
        "outputs": outputs,
        "load": load_average(),
    }


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def figures(
    port: int,
    before: dict[str, int],
    clients: int,
    requests: int,
    per_request: int,
    wall: float,
    latencies: list[float],
    wrong: int,
) -> dict[str, Any]:
    """A served run's row: throughput, latency percentiles, the requests a batch held since
    the server's ``/health`` counters read ``before``, and the answers unlike offline's."""
    after = get(f"http://127.0.0.1:{port}/health")["batcher"]
    batches = after["batches"] - before["batches"]
    return {
        "clients": clients,
        "per_request": per_request,
        "requests": requests,
        "sentences_per_s": requests * per_request / wall,
        "p50_ms": 1000 * percentile(latencies, 50),
        "p99_ms": 1000 * percentile(latencies, 99),
        "requests_per_batch": (after["requests"] - before["requests"]) / max(batches, 1),
        "wrong": wrong,
        "load": load_average(),
    }


def served(
    port: int,
    sources: list[str],
    expected: list[str],
    clients: int,
    requests: int,
    per_request: int = 1,
) -> dict[str, Any]:
    """C clients as coroutines of one event loop, each on its own keep-alive connection,
    speaking HTTP/1.1 over asyncio streams: a client costs little CPU, so the server gets
    the machine's cores, not the load generator."""
    before = get(f"http://127.0.0.1:{port}/health")["batcher"]
    groups = [[(k + j) % len(sources) for j in range(per_request)] for k in range(len(sources))]
    bodies = [json.dumps({"sources": [sources[i] for i in group]}).encode() for group in groups]
    heads = [
        f"POST /api/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        for body in bodies
    ]
    counter = iter(range(requests))
    latencies: list[float] = []
    wrong = 0

    async def client() -> None:
        nonlocal wrong
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in counter:
            k = i % len(sources)
            start = time.perf_counter()
            writer.write(heads[k] + bodies[k])
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            answer = json.loads(await reader.readexactly(length))
            latencies.append(time.perf_counter() - start)
            texts = [result["hypotheses"][0]["text"] for result in answer["results"]]
            wrong += sum(text != expected[i] for text, i in zip(texts, groups[k], strict=True))
        writer.close()

    async def run_all() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return time.perf_counter() - start

    wall = asyncio.run(run_all())
    return figures(port, before, clients, requests, per_request, wall, latencies, wrong)


def served_libretranslate(
    port: int,
    sources: list[str],
    expected: list[str],
    clients: int,
    requests: int,
    pair: tuple[str, str],
) -> dict[str, Any]:
    """C threads, each a libretranslatepy ``LibreTranslateAPI`` translating one source a
    request on ``/translate`` (a new connection each time, as that client does)."""
    before = get(f"http://127.0.0.1:{port}/health")["batcher"]
    api = LibreTranslateAPI(f"http://127.0.0.1:{port}")
    counter = iter(range(requests))
    lock = threading.Lock()
    latencies: list[float] = []
    wrong = [0]

    def client() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            k = i % len(sources)
            start = time.perf_counter()
            text = api.translate(sources[k], source=pair[0], target=pair[1], timeout=600)
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                wrong[0] += text != expected[k]

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    return figures(port, before, clients, requests, 1, wall, latencies, wrong[0])


def read_sources(data: Path | None, n: int) -> list[str]:
    """The sources of a TSV's first column, each once in order (``--data``), or ``n`` dates."""
    if data is None:
        return [source for source, _ in load_task("dates", n_train=0, n_dev=0, n_test=n).test]
    lines = data.read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(line.split("\t")[0] for line in lines if line.strip()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model folder, e.g. runs/dates or runs/de")
    parser.add_argument("--data", type=Path, help="a TSV whose sources to send (default: dates)")
    parser.add_argument(
        "--client",
        choices=("raw", "libretranslate"),
        default="raw",
        help="asyncio clients on /api/translate, or libretranslatepy threads on /translate",
    )
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--requests", type=int, default=1000, help="answered per client count")
    parser.add_argument("--n", type=int, default=2000, help="distinct test dates (default 2000)")
    parser.add_argument(
        "--per-request",
        type=int,
        nargs="+",
        default=[1],
        help="dates in one request: each client count is run with each (default 1)",
    )
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--max-wait-ms", type=float, default=2.0)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)

    translator = luong.load(args.model)
    sources = read_sources(args.data, args.n)
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
        f"{torch.__version__}, one torch thread, {len(sources)} sources, {translator.search}; "
        f"load average before: {load_average()}"
    )
    base = offline(translator, sources, args.max_batch)
    print(
        f"offline decode, batch {args.max_batch}: {base['sentences_per_s']:.0f} sentences/s; "
        f"one alone: p50 {base['one_p50_ms']:.1f} ms, p99 {base['one_p99_ms']:.1f} ms "
        f"(load {base['load']})"
    )

    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable, "-m", "luong", "serve", args.model, "--port", str(port),
        "--max-batch", str(args.max_batch), "--max-wait-ms", str(args.max_wait_ms),
    ]  # fmt: skip
    server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    rows = []
    try:
        for _ in range(300):
            try:
                get(f"http://127.0.0.1:{port}/health")
                break
            except OSError:
                time.sleep(0.1)
        served(port, sources, base["outputs"], 4, 200)  # warm-up
        print(
            "| clients | sources/request | sentences/s | % of offline | p50 ms | p99 ms | "
            "requests/batch | wrong | load average |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for per_request in args.per_request:
            for clients in args.clients:
                if args.client == "libretranslate":
                    pair = (translator.src_lang or "en", translator.tgt_lang or "de")
                    row = served_libretranslate(
                        port, sources, base["outputs"], clients, args.requests, pair
                    )
                else:
                    row = served(
                        port, sources, base["outputs"], clients, args.requests, per_request
                    )
                row["of_offline"] = row["sentences_per_s"] / base["sentences_per_s"]
                rows.append(row)
                print(
                    f"| {clients} | {per_request} | {row['sentences_per_s']:.0f} | "
                    f"{100 * row['of_offline']:.0f} % | {row['p50_ms']:.1f} | "
                    f"{row['p99_ms']:.1f} | {row['requests_per_batch']:.1f} | {row['wrong']} | "
                    f"{row['load']} |",
                    flush=True,
                )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    if args.json:
        del base["outputs"]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {"offline": base, "served": rows, "args": vars(args)}, f, indent=2, default=str
            )


if __name__ == "__main__":
    main()
