"""``luong translate --prefix / --sample / --stream`` and ``luong serve`` as commands: the
outputs equal the library's, usage errors are one line, and SIGTERM lets a request in
flight finish before the server exits."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers import SRC_SPACE, assert_one_line_error, luong, small_model

from luong.cli import build_parser
from luong.cli.serve import model_names, server_config
from luong.config.search import SearchOptions
from luong.search import decode, hypothesis_text

SOURCES = ["abc de", "j", "hij a bc", "ff gg"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model")
    small_model(seed=4, src=SRC_SPACE).save_pretrained(path)
    return path


def lines(texts: list[str]) -> bytes:
    return "".join(t + "\n" for t in texts).encode()


def library_lines(folder: Path, options: SearchOptions | None = None) -> list[str]:
    model = small_model(seed=4, src=SRC_SPACE)
    return [
        "\t".join(hypothesis_text(model, h) for h in hyps)
        for hyps in decode(model, SOURCES, options)
    ]


def test_translate_prefix_and_sample_give_the_librarys_outputs(folder: Path) -> None:
    prefixed = luong(
        "translate",
        str(folder),
        "--prefix",
        "1-",
        "--beam",
        "3",
        "--nbest",
        "2",
        stdin=lines(SOURCES),
    )
    assert prefixed.returncode == 0, prefixed.stderr
    assert prefixed.stdout.decode().splitlines() == library_lines(
        folder, SearchOptions(prefix="1-", beam=3, nbest=2)
    )
    assert all(
        o.startswith("1-")
        for line in prefixed.stdout.decode().splitlines()
        for o in line.split("\t")
    )
    flags = ["--sample", "--seed", "3", "--nbest", "2", "--temperature", "0.9", "--top-k", "5"]
    sampled = luong("translate", str(folder), *flags, stdin=lines(SOURCES))
    again = luong("translate", str(folder), *flags, stdin=lines(SOURCES))
    assert sampled.returncode == 0, sampled.stderr
    assert sampled.stdout == again.stdout
    assert sampled.stdout.decode().splitlines() == library_lines(
        folder, SearchOptions(sample=True, seed=3, nbest=2, temperature=0.9, top_k=5)
    )


def test_stream_answers_each_line_before_the_next_is_written(folder: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "luong", "translate", str(folder), "--stream", "--beam", "2"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    outputs = []
    for source in SOURCES:  # the next line is written only after this one's output came
        process.stdin.write((source + "\n").encode())
        process.stdin.flush()
        outputs.append(process.stdout.readline().decode().rstrip("\n"))
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    assert outputs == library_lines(folder, SearchOptions(beam=2))


def test_stream_names_the_line_of_a_source_too_long(folder: Path) -> None:
    result = luong(
        "translate", str(folder), "--stream", "--max-src-len", "4", stdin=lines(["abc", "abcdefg"])
    )
    assert_one_line_error(result, "<stdin>:2: 7 symbols, above the maximum source length 4")
    model = small_model(seed=4, src=SRC_SPACE)
    first = hypothesis_text(model, decode(model, ["abc"])[0][0])
    assert result.stdout.decode().splitlines() == [first]  # line 1 was written before


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--sample", "--beam", "2"], "--beam: sampling draws one token a step, expected 1, got 2"),
        (
            ["--sample", "--temperature", "0"],
            "--temperature: expected a finite number > 0, got 0.0",
        ),
        (["--sample", "--top-k", "0"], "--top-k: expected an int >= 1, got 0"),
        (["--sample", "--seed", "-1"], "--seed: expected an int >= 0, got -1"),
        (["--top-k", "3"], "--top-k: only when sampling"),
        (["--seed", "3"], "--seed: only when sampling"),
        (["--temperature", "2"], "--temperature: only when sampling"),
        (
            ["--sample", "--temperature", "nan"],
            "--temperature: expected a finite number > 0, got nan",
        ),
        (["--sample", "--seed", str(2**64)], f"--seed: expected at most {2**64 - 1}, got {2**64}"),
        (["--nbest", "100000"], "--nbest: expected at most 1000, got 100000"),
        (["--prefix", "a" * 1001], "--prefix: expected at most 1000 characters, got 1001"),
        (["--max-len", "1000000000"], "--max-len: expected at most 10000, got 1000000000"),
    ],
)
def test_translate_usage_errors(folder: Path, flags: list[str], needle: str) -> None:
    assert_one_line_error(luong("translate", str(folder), *flags, stdin=b"abc\n"), needle)


def test_translate_prefix_outside_the_vocabulary_is_one_line(folder: Path) -> None:
    result = luong("translate", str(folder), "--prefix", "1x", stdin=b"abc\n")
    assert_one_line_error(
        result, "prefix: expected symbols of the target vocabulary, got unknown ['x']"
    )


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--port", "70000"], "--port: expected 0 to 65535, got 70000"),
        (["--max-batch", "0"], "--max-batch: expected >= 1, got 0"),
        (["--max-wait-ms", "-1"], "--max-wait-ms: expected 0 to 10000, got -1"),
        (["--max-sources", "0"], "--max-sources: expected >= 1, got 0"),
        (["--max-beam", "0"], "--max-beam: expected >= 1, got 0"),
    ],
)
def test_serve_usage_errors(folder: Path, flags: list[str], needle: str) -> None:
    assert_one_line_error(luong("serve", str(folder), *flags), needle)


def test_serve_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(luong("serve", str(tmp_path / "nothing")), "nothing")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=120) as answer:
        return json.loads(answer.read())


def wait_for(url: str, process: subprocess.Popen[bytes]) -> Any:
    for _ in range(600):
        if process.poll() is not None:
            raise AssertionError(
                f"the server exited: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            return get_json(url)
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"no answer from {url}")


def test_sigterm_finishes_the_request_in_flight_then_exits(folder: Path) -> None:
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # A request waits in the batcher for up to 10 s: SIGTERM comes while it waits.
    command = [
        sys.executable,
        "-m",
        "luong",
        "serve",
        str(folder),
        "--port",
        str(port),
        "--max-wait-ms",
        "10000",
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(f"{base}/health", process)["models"] == [folder.name]
        answers: list[Any] = []
        asking = threading.Thread(
            target=lambda: answers.append(get_json(f"{base}/api/translate", {"sources": SOURCES}))
        )
        asking.start()
        for _ in range(600):
            if get_json(f"{base}/health")["batcher"]["queued"] == 1:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        asking.join(timeout=120)
        status = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    texts = [r["hypotheses"][0]["text"] for r in answers[0]["results"]]
    assert texts == library_lines(folder)
    assert status in (0, 128 + signal.SIGTERM)
    err = process.stderr.read().decode() if process.stderr else ""
    assert "Traceback" not in err
    assert f"serving {folder.name} at http://127.0.0.1:{port}/" in err


def test_model_names_are_folder_names_or_paths_where_two_share_one(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "dates", tmp_path / "y" / "dates"
    assert model_names([tmp_path / "dot", tmp_path / "general"]) == ["dot", "general"]
    assert model_names([a, b, tmp_path / "dot"]) == [str(a), str(b), "dot"]


def test_serve_the_same_folder_twice_is_a_usage_error(folder: Path) -> None:
    assert_one_line_error(
        luong("serve", str(folder), str(folder)), "DIR: a model folder is given twice"
    )


def test_serve_on_a_busy_port_is_one_line_before_the_models_load(folder: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = luong("serve", str(folder), "--port", str(port))
    assert result.returncode == 1 and result.stdout == b""
    assert_one_line_error(
        result, f"port {port} on 127.0.0.1 is in use (another server?); choose another with --port"
    )
    assert b"serving" not in result.stderr  # no serving message before it


def test_serve_states_uvicorns_limits() -> None:
    args = build_parser().parse_args(["serve", "m", "--max-connections", "32"])
    config = server_config(object(), args)
    assert (config.limit_concurrency, config.h11_max_incomplete_event_size) == (32, 16384)
    assert (config.timeout_keep_alive, config.timeout_graceful_shutdown) == (5, 30)
    assert (config.host, config.port) == ("127.0.0.1", 8000)
    default = build_parser().parse_args(["serve", "m"])
    assert server_config(object(), default).limit_concurrency == 256


def test_translate_with_stdin_closed_is_one_line(folder: Path) -> None:
    for stream in ([], ["--stream"]):
        result = subprocess.run(
            [sys.executable, "-m", "luong", "translate", str(folder), *stream],
            capture_output=True,
            preexec_fn=lambda: os.close(0),
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            timeout=120,
        )
        assert result.returncode == 2 and result.stdout == b""
        assert_one_line_error(
            result, "<stdin>: closed; give the sources on stdin or with --input FILE"
        )


def test_an_output_that_cannot_be_written_names_stdout(folder: Path, tmp_path: Path) -> None:
    """A full disk (here: a file size limit) names the output, not only the errno."""
    out = tmp_path / "out.txt"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    with open(out, "wb") as sink:
        result = subprocess.run(
            [sys.executable, "-m", "luong", "translate", str(folder)],
            input=lines(SOURCES * 200),
            stdout=sink,
            stderr=subprocess.PIPE,
            preexec_fn=small_files,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            timeout=120,
        )
    assert result.returncode == 1
    assert_one_line_error(result, "luong: error: [Errno 27] <stdout>: File too large")
