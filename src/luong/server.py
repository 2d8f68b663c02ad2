"""``luong serve``'s web application: a translation API with dynamic batching, and the
attention explorer page.

``create_app(models)`` builds a FastAPI app over loaded models (``ServedModel``: a name, a
``Translator``, the run's metrics). Its routes:

- ``POST /api/translate``: ``TranslateRequest`` in, ``{"model", "results": [{"source",
  "source_tokens", "hypotheses": [{"text", "score", "tokens", "attention"?}]}]}`` out, one
  result per source, in order. Requests that share their decoding options are decoded
  together (``luong.request_batcher``) on a worker thread, so the event loop (``/health``) stays
  free while a batch decodes.
- ``GET /api/models``: each model's name, config, vocabulary sizes and metrics.
- ``GET /health``: ``{"status": "ok", "models", "batcher"}``, the batcher's counters.
- ``GET /``: the explorer (``luong/explorer/``, package data: no CDN); FastAPI's own
  ``/openapi.json`` and ``/docs``.

A request names no file: models are loaded by the command, before the app exists. Limits
(``ServeLimits``) bound the work one request can ask for: too many sources or a source too
long, or a body above ``max_body_bytes`` (``BodyLimit``), is 413; a beam, n-best or prefix
above its bound is 422; each with ``{"detail": MESSAGE}`` naming the limit. A body that is
not JSON is 422, text that is not UTF-8 is 400 (FastAPI's own answers). Shutting down
(uvicorn's graceful shutdown on SIGTERM) closes the batcher after the requests in flight
have their answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from luong.request_batcher import Batcher
from luong.search import MAX_ALPHA, MAX_BETA, MAX_TEMPERATURE, Hypothesis, decode, source_symbols
from luong.translator import Translator, hypothesis_record, source_length
from luong.version import __version__

__all__ = [
    "EXPLORER_FILES",
    "BodyLimit",
    "DecodeOptions",
    "ServeLimits",
    "ServedModel",
    "TranslateRequest",
    "create_app",
]

EXPLORER_FILES: dict[str, str] = {
    "explorer.js": "text/javascript; charset=utf-8",
    "explorer.css": "text/css; charset=utf-8",
}
"""The explorer's files besides ``index.html``, served under ``/static/``."""


@dataclass(frozen=True)
class ServeLimits:
    """What one request may ask for."""

    max_sources: int = 64  # sources per request (413 above)
    max_source_len: int = 200  # symbols per source, at most the model's own (413 above)
    max_beam: int = 16  # beam size (422 above)
    max_nbest: int = 16  # outputs per source (422 above)
    max_prefix_len: int = 200  # characters of a prefix (422 above)
    max_body_bytes: int = 1_000_000  # the request body (413 above)

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{field.name}: expected an int >= 1, got {value!r}")


@dataclass(frozen=True)
class ServedModel:
    """A model the server decodes with: its name in requests, the translator, and the
    metrics of its run folder (``metrics.json``; None when there is none)."""

    name: str
    translator: Translator
    metrics: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: expected a non-empty str, got {self.name!r}")
        if not isinstance(self.translator, Translator):
            raise TypeError(
                f"translator: expected a Translator, got {type(self.translator).__name__}"
            )


class TranslateRequest(BaseModel):
    """The body of ``POST /api/translate``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sources: list[str] = Field(description="the texts to translate")
    model: str | None = Field(None, description="a model's name (default: the first loaded)")
    beam: int = Field(1, ge=1, description="beam size (1: greedy search)")
    nbest: int = Field(1, ge=1, description="outputs per source, at most beam (or draws)")
    alpha: float = Field(0.0, ge=0.0, le=MAX_ALPHA, description="length penalty weight")
    beta: float = Field(0.0, ge=0.0, le=MAX_BETA, description="coverage penalty weight")
    attention: bool = Field(False, description="return each output's attention [T][S]")
    prefix: str = Field("", description="target text every output starts with")
    sample: bool = Field(False, description="sample outputs instead of searching (beam 1)")
    temperature: float = Field(1.0, gt=0.0, le=MAX_TEMPERATURE, description="sampling")
    top_k: int | None = Field(None, ge=1, description="sample from the k most probable")
    seed: int | None = Field(None, ge=0, description="sampling seed (reproducible draws)")


@dataclass(frozen=True)
class DecodeOptions:
    """What the requests of one batch share: the model and the decoding options. A sampling
    request carries its own ``ticket``, so it is decoded alone and a seed reproduces it."""

    model: str
    beam: int
    nbest: int
    alpha: float
    beta: float
    prefix: str
    sample: bool
    temperature: float
    top_k: int | None
    seed: int | None
    ticket: int = 0


def create_app(
    models: Sequence[ServedModel],
    *,
    max_batch: int = 64,
    max_wait_ms: float = 2.0,
    limits: ServeLimits | None = None,
) -> FastAPI:
    """The web application over ``models`` (the first is the default).

    Args:
        models: the models, with distinct names.
        max_batch: the most sources one decoding call takes (``Batcher``).
        max_wait_ms: how long the oldest waiting request waits for company, in ms.
        limits: what one request may ask for (default ``ServeLimits()``).

    Returns:
        the app; ``app.state.batcher`` is its batcher (``stats`` counts merged calls).

    Raises:
        ValueError: no models, two with one name, or a bad ``max_batch`` / ``max_wait_ms``.
        TypeError: a model is not a ``ServedModel``.
    """
    models = list(models)
    if not models:
        raise ValueError("models: expected at least one model, got none")
    for served in models:
        if not isinstance(served, ServedModel):
            raise TypeError(f"models: expected ServedModel items, got {type(served).__name__}")
    by_name = {served.name: served for served in models}
    if len(by_name) != len(models):
        names = [served.name for served in models]
        twice = sorted({name for name in names if names.count(name) > 1})
        raise ValueError(f"models: expected distinct names, got {', '.join(twice)} twice")
    limits = limits if limits is not None else ServeLimits()
    if not isinstance(limits, ServeLimits):
        raise TypeError(f"limits: expected ServeLimits, got {type(limits).__name__}")
    if (
        isinstance(max_wait_ms, bool)
        or not isinstance(max_wait_ms, int | float)
        or not 0 <= max_wait_ms < float("inf")
    ):
        raise ValueError(f"max_wait_ms: expected a finite number >= 0, got {max_wait_ms!r}")

    def run(options: DecodeOptions, sources: list[str]) -> list[list[Hypothesis]]:
        model = by_name[options.model].translator.model
        return decode(
            model,
            sources,
            beam_size=options.beam,
            n_best=options.nbest,
            alpha=options.alpha,
            beta=options.beta,
            batch_size=max_batch,
            prefix=options.prefix,
            sample=options.sample,
            temperature=options.temperature,
            top_k=options.top_k,
            seed=options.seed,
        )

    batcher: Batcher[DecodeOptions, str, list[Hypothesis]] = Batcher(
        run, max_batch=max_batch, max_wait=max_wait_ms / 1000.0
    )
    tickets = itertools.count(1)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        # Shutdown comes after the requests in flight have their answers; close drains.
        await asyncio.to_thread(batcher.close)

    app = FastAPI(
        title="luong",
        version=__version__,
        description="Luong-attention sequence-to-sequence models: translation and the "
        "attention explorer.",
        lifespan=lifespan,
    )
    app.state.batcher = batcher
    app.state.limits = limits

    app.add_middleware(BodyLimit, limit=limits.max_body_bytes)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Answers while a batch decodes (decoding runs on the batcher's thread)."""
        return {
            "status": "ok",
            "models": list(by_name),
            "batcher": {**dataclasses.asdict(batcher.stats), "queued": batcher.queued},
        }

    @app.get("/api/models")
    async def list_models() -> dict[str, Any]:
        """Each model: name, config, vocabulary sizes, the metrics of its run folder."""
        return {
            "models": [
                {
                    "name": served.name,
                    "config": served.translator.config.to_json(),
                    "src_vocab_size": len(served.translator.src_vocab),
                    "tgt_vocab_size": len(served.translator.tgt_vocab),
                    "metrics": dict(served.metrics) if served.metrics is not None else None,
                }
                for served in models
            ],
            "limits": dataclasses.asdict(limits),
        }

    @app.post("/api/translate")
    async def translate(body: TranslateRequest) -> JSONResponse:
        """Translate ``sources``; one result per source, in order."""
        name = body.model if body.model is not None else models[0].name
        if name not in by_name:
            raise HTTPException(422, f"model: expected one of {', '.join(by_name)}, got {name!r}")
        served = by_name[name]
        _check_request(body, served, limits)
        options = DecodeOptions(
            name,
            body.beam,
            body.nbest,
            body.alpha,
            body.beta,
            body.prefix,
            body.sample,
            body.temperature,
            body.top_k,
            body.seed,
            next(tickets) if body.sample else 0,
        )
        try:
            future = batcher.submit(options, body.sources)
        except RuntimeError as error:  # closed: the server is shutting down
            raise HTTPException(503, str(error)) from error
        try:
            lists = await asyncio.wrap_future(future)
        except ValueError as error:  # an option the search refuses
            raise HTTPException(422, str(error)) from error
        model = served.translator.model
        prefix_tokens = model.tgt_vocab.tokenize(body.prefix)
        results = []
        for source, hyps in zip(body.sources, lists, strict=True):
            if not body.attention:  # no weights to turn into lists
                hyps = [dataclasses.replace(h, attention=h.attention[:, :0]) for h in hyps]
            records = [hypothesis_record(model, h, source) for h in hyps]
            if not body.attention:
                for record in records:
                    del record["attention"]
            results.append(
                {
                    "source": source,
                    "source_tokens": source_symbols(model, source),
                    "prefix_tokens": len(prefix_tokens),
                    "hypotheses": records,
                }
            )
        # A response made here skips FastAPI's generic encoder: less work per request.
        return JSONResponse({"model": name, "results": results})

    explorer = resources.files("luong") / "explorer"

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse((explorer / "index.html").read_text(encoding="utf-8"))

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in EXPLORER_FILES:  # a fixed list: no path reaches the file system
            raise HTTPException(404, f"no such file: {name}")
        return Response((explorer / name).read_bytes(), media_type=EXPLORER_FILES[name])

    return app


class BodyLimit:
    """ASGI middleware: a request body above ``limit`` bytes gets 413 with a JSON message
    naming the limit. A declared Content-Length is checked before anything is read; a body
    sent without one (chunked) is read up to the limit first, then handed on."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = None
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit():
                declared = int(value)
        if declared is not None:
            if declared > self.limit:
                await self._refuse(declared, scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await self._refuse(seen, scope, receive, send, more=True)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(
        self, size: int, scope: Scope, receive: Receive, send: Send, more: bool = False
    ) -> None:
        bytes_ = f"more than {self.limit}" if more else str(size)
        message = f"max_body_bytes: the body is {bytes_} bytes, above the limit of {self.limit}"
        await JSONResponse({"detail": message}, status_code=413)(scope, receive, send)


def _check_request(body: TranslateRequest, served: ServedModel, limits: ServeLimits) -> None:
    """The limits, as HTTP errors that name them."""
    if len(body.sources) > limits.max_sources:
        raise HTTPException(
            413,
            f"max_sources: {len(body.sources)} sources, above the limit of {limits.max_sources}",
        )
    own = served.translator.config.max_src_len
    longest = min(limits.max_source_len, own)
    vocab = served.translator.src_vocab
    for i, source in enumerate(body.sources):
        length = source_length(vocab, source)
        if length > longest:
            raise HTTPException(
                413,
                f"max_source_len: source {i} has {length} symbols, above the limit of {longest}",
            )
    if body.beam > limits.max_beam:
        raise HTTPException(
            422, f"max_beam: beam {body.beam}, above the limit of {limits.max_beam}"
        )
    if body.nbest > limits.max_nbest:
        raise HTTPException(
            422, f"max_nbest: nbest {body.nbest}, above the limit of {limits.max_nbest}"
        )
    if not body.sample and body.nbest > body.beam:
        raise HTTPException(422, f"nbest: expected at most beam = {body.beam}, got {body.nbest}")
    if body.sample and body.beam != 1:
        raise HTTPException(
            422, f"beam: sampling draws one token a step, expected 1, got {body.beam}"
        )
    if len(body.prefix) > limits.max_prefix_len:
        raise HTTPException(
            422,
            f"max_prefix_len: the prefix has {len(body.prefix)} characters, above the limit "
            f"of {limits.max_prefix_len}",
        )
    unknown = served.translator.tgt_vocab.unknown(body.prefix)
    if unknown:
        raise HTTPException(
            422, f"prefix: expected symbols of the target vocabulary, got unknown {unknown[:5]}"
        )
