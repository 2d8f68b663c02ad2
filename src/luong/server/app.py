"""``luong serve``'s web application: a translation API with dynamic batching, and the
attention explorer page.

``create_app(models)`` builds a FastAPI app over loaded models (``ServedModel``: a name, a
``Translator``, the run's metrics). Its routes:

- ``POST /api/translate``: ``TranslateRequest`` in (``sources``, ``model``, a field per
  ``RequestOptions`` field: ``attention``, ``align``, ``placeholders``, and a field per
  ``SearchOptions`` field, made from them by ``request_model``), ``{"model", "results":
  [{"source", "source_tokens", "prefix_tokens", "hypotheses": [{"text", "score",
  "confidence", "tokens", "attention"?, "alignment"?, "searched_again"?}], "origin"?,
  "matches"?}]}`` out, one result per source, in order (``confidence``:
  ``luong.translation.confidence``). With a translation memory (the translator's, ``luong serve
  --tm``: ``Translator.with_resources``; a request's ``"memory": false`` turns it off),
  each result says its ``origin`` (``"memory"``: its one hypothesis is ``{"text"}``, not
  decoded; ``"model"``) and the memory's ``matches``
  (``luong.translation.records.memory_record``); LibreTranslate's ``/translate`` takes the
  memory's translations too. Requests that share their options are decoded together
  (``luong.service.batcher``) on a worker thread through
  ``Translator.translations``, the path every face takes, and their answers are written
  there too, so the event loop (``/health``) stays free while a batch decodes.
- ``GET /api/models``: what a client needs: each model's name, language pair, config
  (architecture and longest source), vocabulary sizes and its run's figures (numbers only);
  the limits; ``key_required``. No path, command line or version of the host.
- ``GET /health``: ``{"status": "ok", "models", "batcher"}``, the batcher's counters.
- ``POST /translate``, ``POST /detect``, ``GET /languages``, ``GET /frontend/settings``: the
  LibreTranslate API (``luong.server.libretranslate``: its requests, answers and errors), routed by
  each model's language pair (``Translator.src_lang``, ``tgt_lang``), each line of a text
  decoded apart through the same batcher and limits as ``/api/translate``.
- ``GET /``: the explorer (``luong/server/explorer/``, package data: no CDN); FastAPI's own
  ``/openapi.json`` and ``/docs``.

With ``api_keys``, every route that translates needs one of them: ``POST /translate`` as
its ``api_key`` (403 in LibreTranslate's shape without), ``POST /api/translate`` (and so
the explorer's page, which asks for it) as the header ``Authorization: Bearer KEY`` (401
``{"detail"}`` without). The other routes translate nothing and need none.

A request names no file: models are loaded by the command, before the app exists. Limits
(``ServeLimits``) bound the work one request can ask for: too many sources or a source too
long, a request's own glossary of more than ``max_glossary_terms`` terms (LibreTranslate's
route: 400, counted before a term is parsed), or a body above ``max_body_bytes``
(``BodyLimit``), is 413; a request's glossary is parsed and checked on a worker thread, so
that the event loop (``/health``) stays free; a beam, n-best, prefix or
output length above its bound is 422; each with ``{"detail": MESSAGE}`` naming the limit.
A decoding option that ``SearchOptions`` refuses (out of its bounds, against another
option, not a number) is 422 with its message, the one the command line gives. A body that
is not JSON, or a field of the wrong JSON type, is 422 with FastAPI's list of errors (each
``{"type", "loc", "msg"}``: the input is not echoed, so a NaN or a lone surrogate cannot
break the answer); text that is not UTF-8 is 400 (FastAPI's own answer). A client that hangs
up before its body is sent is one line in the log (``HangUps``). Shutting down
(uvicorn's graceful shutdown on SIGTERM) closes the batcher after the requests in flight
have their answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel

from luong.common.errors import LuongError
from luong.config.faces import ServeLimits
from luong.config.request import GlossaryPairs, RequestOptions
from luong.config.search import OptionError, SearchOptions
from luong.server.api_requests import (
    REQUEST_FIELDS,
    REQUEST_OPTIONS,
    invalid,
    key_check,
    request_model,
)
from luong.server.libretranslate import (
    PATHS,
    LibreError,
    check_key,
    detect_refusal,
    frontend_settings,
    language_list,
    parse_request,
    route,
    translate_answer,
)
from luong.server.middleware import BodyLimit, HangUps
from luong.service.answers import translation_answer
from luong.service.limits import LimitError, check_request
from luong.service.registry import BatchKey, ServedModel, TranslationService, model_list
from luong.service.texts import join_lines, split_lines, text_confidences
from luong.translation.translations import Translation
from luong.version import __version__

__all__ = [
    "EXPLORER_FILES",
    "ServeLimits",
    "ServedModel",
    "create_app",
]

EXPLORER_FILES: dict[str, str] = {
    "explorer.js": "text/javascript; charset=utf-8",
    "explorer.css": "text/css; charset=utf-8",
}
"""The explorer's files besides ``index.html``, served under ``/static/``."""


def create_app(
    models: Sequence[ServedModel],
    *,
    max_batch: int = 64,
    max_wait_ms: float = 2.0,
    limits: ServeLimits | None = None,
    options: type[SearchOptions] = SearchOptions,
    api_keys: Collection[str] | None = None,
    glossary: GlossaryPairs = (),
) -> FastAPI:
    """The web application over ``models`` (the first is the default).

    Args:
        models: the models, with distinct names.
        max_batch: the most sources one decoding call takes (``Batcher``).
        max_wait_ms: how long the oldest waiting request waits for company, in ms.
        limits: what one request may ask for (default ``ServeLimits()``).
        options: the decoding options requests may give (``SearchOptions`` or a subclass:
            ``request_model`` makes the request's fields from it).
        api_keys: the keys of the translating routes: LibreTranslate's ``POST /translate``
            takes one as its ``api_key``, ``POST /api/translate`` (and so the explorer) as
            the header ``Authorization: Bearer KEY``; None: none needed.
        glossary: the default glossary of every request (``(source term, target term)``
            pairs, ``luong.memory.glossary``), which a request's ``glossary`` extends: its pairs
            first, so a source term both list takes the request's target; checked against
            each model's target vocabulary here.

    Returns:
        the app; ``app.state.batcher`` is its batcher (``stats`` counts merged calls).

    Raises:
        ValueError: no models, two with one name, a bad ``max_batch`` / ``max_wait_ms``,
            an empty ``api_keys``, an ensemble whose members record different pairs, or a
            glossary term that is malformed or a model's vocabulary cannot write.
        TypeError: a model is not a ``ServedModel``.
    """
    service = TranslationService.of(
        models,
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        limits=limits,
        options=options,
        api_keys=api_keys,
        glossary=glossary,
    )
    body_model = request_model(service.options)  # the request's fields, from the options

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        # Shutdown comes after the requests in flight have their answers; close drains.
        await asyncio.to_thread(service.batcher.close)

    app = FastAPI(
        title="luong",
        version=__version__,
        description="Luong-attention sequence-to-sequence models: translation and the "
        "attention explorer.",
        lifespan=lifespan,
    )
    app.state.batcher = service.batcher
    app.state.limits = service.limits
    app.add_middleware(BodyLimit, limit=service.limits.max_body_bytes, error_paths=PATHS)
    app.add_middleware(HangUps)  # outermost of the two: it sees BodyLimit's hang-ups too
    app.exception_handler(RequestValidationError)(invalid)
    _add_api_routes(app, service, body_model)
    _add_libretranslate_routes(app, service)
    _add_explorer_routes(app)
    return app


def _add_api_routes(app: FastAPI, service: TranslationService, body_model: type[BaseModel]) -> None:
    """luong's own API: ``/health``, ``/api/models``, ``POST /api/translate``."""
    by_name, batcher, limits = service.by_name, service.batcher, service.limits

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
        """What a client needs of each model, the limits, and whether a translating request
        needs a key (``luong.service.registry.model_list``)."""
        return model_list(service)

    async def translate(body: Any) -> Response:
        """Translate ``sources``; one result per source, in order."""
        name = body.model if body.model is not None else service.models[0].name
        if name not in by_name:
            raise HTTPException(422, f"model: expected one of {', '.join(by_name)}, got {name!r}")
        served = by_name[name]
        try:
            # the fields the request sent; the model's decoding defaults for the rest
            given = {f: getattr(body, f) for f in body.model_fields_set if f not in REQUEST_FIELDS}
            search = served.translator.options(given, service.options)
            request = RequestOptions(**{f: v for f, v in body if f in REQUEST_OPTIONS})
        except OptionError as error:
            raise HTTPException(422, str(error)) from None
        if len(request.glossary) > limits.max_glossary_terms:
            raise HTTPException(
                413,
                f"max_glossary_terms: the glossary has {len(request.glossary)} terms, above the "
                f"limit of {limits.max_glossary_terms}",
            )
        request = service.with_glossary(request)
        # the glossary is built and checked there: off the event loop, which /health needs
        await asyncio.to_thread(_check_request, body.sources, search, served, limits, request)
        ticket = next(service.tickets) if search.sample else 0
        try:
            future = batcher.submit(BatchKey(name, search, request, ticket), body.sources)
        except RuntimeError as error:  # closed: the server is shutting down
            raise HTTPException(503, str(error)) from error
        try:
            translations = await asyncio.wrap_future(future)
        except LuongError as error:  # what the search refuses (a prefix, NaN scores)
            raise HTTPException(422, str(error)) from error
        # Records and JSON of large answers take milliseconds: off the event loop.
        content = await asyncio.to_thread(_answer, name, served, translations, search, request)
        return Response(content, media_type="application/json")

    translate.__annotations__["body"] = body_model  # FastAPI reads the body's model here
    # With keys, the key is checked before the body's fields (FastAPI solves dependencies
    # first; only a body that is not JSON is refused before); the OpenAPI schema says so, and
    # /docs asks for the key.
    needs_key = [Depends(key_check(service.api_keys))] if service.api_keys is not None else []
    app.post("/api/translate", dependencies=needs_key)(translate)


def _add_libretranslate_routes(app: FastAPI, service: TranslationService) -> None:
    """The LibreTranslate API (``luong.server.libretranslate``): ``POST /translate``,
    ``/detect``, ``/languages``, ``/frontend/settings``, routed by language pair."""
    pairs, api_keys, limits = service.pairs, service.api_keys, service.limits

    @app.post("/translate", tags=["LibreTranslate"])
    async def libre_translate(request: Request) -> Response:
        """LibreTranslate's ``/translate`` (``luong.server.libretranslate``); errors in its
        shape."""
        try:
            body = await request.body()
            # off the event loop: a request's glossary is parsed there (at most
            # max_glossary_terms terms), and /health answers meanwhile
            asked = await asyncio.to_thread(
                parse_request,
                request.headers.get("content-type", ""),
                body,
                request.query_params.multi_items(),
                limits.max_glossary_terms,
            )
            check_key(api_keys, asked.api_key)
            name, source = route(pairs, asked.source, asked.target)
            served = service.by_name[name]
            n = asked.alternatives + 1
            if n > limits.max_beam:  # said in the client's own field, not as a beam
                raise LibreError(
                    400,
                    f"Invalid request: alternatives: {asked.alternatives}, above the limit of "
                    f"{limits.max_beam - 1} (max_beam {limits.max_beam}: the translation and "
                    "its alternatives)",
                )
            # html: every tag (and placeholder) masked before decoding and put back after at
            # the output word the attention aligns to it (RequestOptions.placeholders "mask"),
            # so each tag comes through exactly as often as it was sent.
            wanted = RequestOptions(
                placeholders="mask" if asked.format == "html" else "off", glossary=asked.glossary
            )
            wanted = service.with_glossary(wanted)
            # Each line is a source of its own (the limits count lines), its break kept.
            split = split_lines(asked.texts)
            try:
                # the model's decoding defaults (its beam capped by max_beam), a beam of at
                # least N + 1 for N alternatives
                beam = max(n, min(served.translator.search.beam, limits.max_beam))
                search = served.translator.options({"beam": beam, "nbest": n}, service.options)
                await asyncio.to_thread(
                    check_request,
                    split.lines,
                    search,
                    served.translator,
                    limits,
                    wanted,
                    split.names,
                )
            except OptionError as error:
                raise LibreError(400, f"Invalid request: {error}") from None
            except LimitError as error:  # a limit, as /api/translate words it
                raise LibreError(400, f"Invalid request: {error}") from None
            try:
                future = service.batcher.submit(BatchKey(name, search, wanted), split.lines)
            except RuntimeError as error:  # closed: the server is shutting down
                raise LibreError(503, str(error)) from None
            try:
                translations = await asyncio.wrap_future(future)
            except LuongError as error:
                raise LibreError(500, f"Cannot translate text: {error}") from None
            outputs = join_lines(split, [translation.texts for translation in translations])
            confidences = text_confidences(split, translations)  # all of a text's lines
            return JSONResponse(translate_answer(asked, outputs, source, confidences))
        except LibreError as error:
            return JSONResponse({"error": error.message}, status_code=error.status)

    @app.post("/detect", tags=["LibreTranslate"])
    async def libre_detect() -> JSONResponse:
        """LibreTranslate's ``/detect``: this server detects no languages, so a 400 in
        LibreTranslate's shape that names the source languages it serves."""
        error = detect_refusal(pairs)
        return JSONResponse({"error": error.message}, status_code=error.status)

    @app.get("/languages", tags=["LibreTranslate"])
    async def libre_languages() -> list[dict[str, Any]]:
        """LibreTranslate's ``/languages``: the served pairs, by source language."""
        return language_list(pairs)

    @app.get("/frontend/settings", tags=["LibreTranslate"])
    async def libre_settings() -> dict[str, Any]:
        """LibreTranslate's ``/frontend/settings``, the fields its clients read."""
        return frontend_settings(pairs, api_keys)


def _add_explorer_routes(app: FastAPI) -> None:
    """The attention explorer: its page at ``/`` and its files under ``/static/``."""
    explorer = resources.files("luong.server") / "explorer"

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse((explorer / "index.html").read_text(encoding="utf-8"))

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in EXPLORER_FILES:  # a fixed list: no path reaches the file system
            raise HTTPException(404, f"no such file: {name}")
        return Response((explorer / name).read_bytes(), media_type=EXPLORER_FILES[name])


def _answer(
    name: str,
    served: ServedModel,
    translations: list[Translation],
    search: SearchOptions,
    request: RequestOptions,
) -> bytes:
    """The JSON of ``POST /api/translate``'s answer (``luong.service.answers``;
    ``allow_nan=False``: records write null for what is not finite)."""
    answer = translation_answer(name, served.translator, translations, search, request)
    return json.dumps(answer, ensure_ascii=False, allow_nan=False).encode("utf-8")


def _check_request(
    sources: list[str],
    search: SearchOptions,
    served: ServedModel,
    limits: ServeLimits,
    request: RequestOptions,
    names: Sequence[str] | None = None,
) -> None:
    """``luong.service.limits.check_request``, its ``LimitError`` as the HTTP error that
    names the limit: 413 for a request too large, 422 for one invalid."""
    try:
        check_request(sources, search, served.translator, limits, request, names)
    except LimitError as error:
        raise HTTPException(413 if error.too_large else 422, str(error)) from None
