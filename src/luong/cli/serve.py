"""``luong serve``: the translation API and the attention explorer over model folders."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import socket
from pathlib import Path
from typing import Any

import uvicorn

from luong.cli.common import (
    UsageError,
    check_memory_flags,
    device_options,
    log_to_stderr,
    say,
)
from luong.common.files import read_json, read_text_lines
from luong.common.folder_files import METRICS
from luong.config.faces import ServeLimits
from luong.server.app import create_app
from luong.service.registry import ServedModel
from luong.translation.translator import Translator, load

__all__ = ["main", "model_names", "read_api_keys", "server_config"]


def server_config(app: Any, args: argparse.Namespace) -> uvicorn.Config:
    """uvicorn's settings for ``app``, its limits stated: at most ``--max-connections``
    connections and requests at once (503 above), request headers of at most 16 KiB (h11's
    limit: 400 above), an idle keep-alive connection closed after 5 s, 30 s for the requests
    in flight at shutdown. uvicorn has no deadline for a request's headers: a client that
    sends them a byte at a time holds its connection, so it counts against
    ``--max-connections``; a public server wants a proxy with a header timeout in front
    (nginx's ``client_header_timeout``, docs/serving.md)."""
    return uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        limit_concurrency=args.max_connections,
        h11_max_incomplete_event_size=16 * 1024,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=30,
    )


def check_port(host: str, port: int) -> None:
    """Bind ``host:port`` for a moment, so that a port in use is one clear line before the
    models are loaded (uvicorn would say ``[Errno 98]`` after the serving message).

    Raises:
        OSError: the port is in use, or the address is not this machine's.
    """
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise OSError(
                error.errno,
                f"port {port} on {host} is in use (another server?); choose another with --port",
            ) from None
        raise OSError(error.errno, f"cannot listen on {host}:{port}: {error.strerror}") from None


def model_names(folders: list[Path]) -> list[str]:
    """A name per folder: its base name, or the path as given where two share one."""
    bases = [folder.resolve().name or str(folder) for folder in folders]
    return [
        base if bases.count(base) == 1 else str(folder)
        for base, folder in zip(bases, folders, strict=True)
    ]


def _check(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port: expected 0 to 65535, got {args.port}")
    if args.max_batch < 1:
        raise UsageError(f"--max-batch: expected >= 1, got {args.max_batch}")
    if not 0 <= args.max_wait_ms <= 10_000:
        raise UsageError(f"--max-wait-ms: expected 0 to 10000, got {args.max_wait_ms:g}")
    if args.max_sources < 1:
        raise UsageError(f"--max-sources: expected >= 1, got {args.max_sources}")
    if args.max_beam < 1:
        raise UsageError(f"--max-beam: expected >= 1, got {args.max_beam}")
    if args.max_connections < 1:
        raise UsageError(f"--max-connections: expected >= 1, got {args.max_connections}")
    if len(set(model_names(args.models))) != len(args.models):
        raise UsageError("DIR: a model folder is given twice")
    check_memory_flags(args)


def main(args: argparse.Namespace) -> int:
    _check(args)
    api_keys = read_api_keys(args.api_keys) if args.api_keys is not None else None
    check_port(args.host, args.port)
    log_to_stderr(quiet=True)  # the loader's warnings: a stopped run's checkpoint, bf16
    translators = [load(folder, **device_options(args)) for folder in args.models]
    if args.glossary_file is not None:
        _one_target(translators)
    models = []
    for name, folder, translator in zip(
        model_names(args.models), args.models, translators, strict=True
    ):
        metrics = read_json(folder / METRICS) if (folder / METRICS).is_file() else None
        # each model's memory and glossary read in its own pair (a TMX file's units)
        translator = translator.with_resources(
            args.tm or (), args.glossary_file, tm_threshold=args.tm_threshold
        )
        models.append(ServedModel(name, translator, metrics))
    terms = _glossary(models) if args.glossary_file is not None else ()
    limits = ServeLimits(
        max_sources=args.max_sources,
        max_beam=args.max_beam,
        max_nbest=args.max_beam,
    )
    app = create_app(
        models,
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        limits=limits,
        api_keys=api_keys,
        glossary=terms,
    )
    if all(None in (m.translator.src_lang, m.translator.tgt_lang) for m in models):
        say(
            "warning: no model records its language pair, so the LibreTranslate API has "
            "nothing to route to; record one with luong pair DIR --src-lang .. --tgt-lang .."
        )
    if not _loopback(args.host):
        say(f"warning: listening on {args.host}, reachable from other machines")
    say(
        f"serving {', '.join(m.name for m in models)} at http://{args.host}:{args.port}/ "
        "(Ctrl-C or SIGTERM stops, after the requests in flight)"
    )
    # uvicorn handles SIGINT and SIGTERM itself while it runs: it stops taking connections,
    # lets the requests in flight finish, then the app's shutdown drains the batcher.
    uvicorn.Server(server_config(app, args)).run()
    return 0


def _one_target(translators: list[Translator]) -> None:
    """Raise unless the models translate into one target language (or record none): a
    glossary is for one."""
    targets = {t.tgt_lang for t in translators} - {None}
    if len(targets) > 1:
        raise UsageError(
            f"--glossary: the models translate into {', '.join(sorted(map(str, targets)))}; "
            "a glossary is for one target language: serve them apart"
        )


def _glossary(models: list[ServedModel]) -> tuple[tuple[str, str], ...]:
    """``--glossary FILE``'s pairs as the first model that records its pair read them
    (``with_resources``: a TBX file in its pair, each target term checked against its
    vocabulary; every model read and checked its own): the default glossary of every
    request."""
    recorded = [m.translator for m in models if m.translator.tgt_lang is not None]
    glossary = (recorded or [models[0].translator])[0].glossary
    assert glossary is not None  # read by with_resources
    return glossary.pairs()


def read_api_keys(path: Path) -> frozenset[str]:
    """The keys of ``--api-keys FILE``: one a line, spaces around it, blank lines and
    comments (a line whose first character but spaces is ``#``) left out, so that a comment
    never works as a key.

    Raises:
        UsageError: no such file, or no key in it.
    """
    if path.is_dir():
        raise UsageError(f"--api-keys: {path}: a folder, expected a file of keys (one a line)")
    if not path.is_file():
        raise UsageError(f"--api-keys: {path}: no such file")
    lines = (line.strip() for line in read_text_lines(path))
    keys = frozenset(line for line in lines if line and not line.startswith("#"))
    if not keys:
        raise UsageError(f"--api-keys: {path} holds no key (one a line)")
    return keys


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
