"""What a request to luong's own API (``POST /api/translate``, ``luong.server.app``) is: its
body, a field per option (``request_model``), the key it carries (``key_check``), and the answer to
a body that does not fit (``invalid``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, create_model

from luong.config.request import GlossaryPairs, RequestOptions
from luong.config.search import SearchOptions, option_specs
from luong.server.libretranslate import is_known_key

__all__ = [
    "BEARER",
    "JSON_KINDS",
    "REQUEST_FIELDS",
    "REQUEST_OPTIONS",
    "TranslateRequest",
    "invalid",
    "key_check",
    "request_model",
]

JSON_KINDS: dict[Any, Any] = {
    GlossaryPairs: list[Annotated[list[str], Field(min_length=2, max_length=2)]],
}
"""The JSON type of a request field whose Python type is not JSON's own: a glossary's
pairs are a list of two-string lists (``[["printer", "Drucker"]]``), made a tuple of pairs
by ``RequestOptions``."""


def request_model(options: type[SearchOptions] = SearchOptions) -> type[BaseModel]:
    """The body of ``POST /api/translate``: ``sources`` and ``model``, then a field per
    ``RequestOptions`` field (``attention``, ``align``, ``placeholders``) and per field of
    ``options`` (``SearchOptions`` or a subclass), each with its type, default and help text,
    and its bounds in the JSON schema (``minimum``, ``maximum``, ``exclusiveMinimum``,
    ``enum``, ``maxLength``) for clients to read. The bounds are checked by the options
    classes themselves, with their messages, not by the model."""
    fields: dict[str, Any] = {
        "sources": (list[str], Field(description="the texts to translate")),
        "model": (
            str | None,
            Field(None, description="a model's name (default: the first loaded)"),
        ),
    }
    for cls in (RequestOptions, options):
        for f, kind, spec in option_specs(cls):
            bounds = {
                "minimum": spec.low,
                "exclusiveMinimum": spec.above,
                "maximum": spec.high,
                "enum": list(spec.choices) if spec.choices is not None else None,
                "maxLength": spec.max_chars,
            }
            schema: dict[str, Any] = {k: v for k, v in bounds.items() if v is not None}
            default: Any = f.default
            fields[f.name] = (
                JSON_KINDS.get(kind, kind),
                Field(default, description=spec.help, json_schema_extra=schema or None),
            )
    return create_model(
        "TranslateRequest", __config__=ConfigDict(extra="forbid", strict=True), **fields
    )


TranslateRequest = request_model()
"""The body of ``POST /api/translate`` for ``SearchOptions``."""

REQUEST_OPTIONS = tuple(f.name for f, _, _ in option_specs(RequestOptions))
"""The fields of a request that are ``RequestOptions``' (``attention``, ``align``, ...)."""

REQUEST_FIELDS = ("sources", "model", *REQUEST_OPTIONS)
"""The fields of a request that are not decoding options."""


BEARER = HTTPBearer(auto_error=False, description="one of the keys of luong serve --api-keys")
"""The header ``Authorization: Bearer KEY`` of ``POST /api/translate`` (None when absent)."""


def key_check(api_keys: frozenset[str]) -> Any:
    """The dependency that lets a request of luong's own API through with one of
    ``api_keys`` as the header ``Authorization: Bearer KEY``; 401 (RFC 6750) otherwise."""

    async def check(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
    ) -> None:
        if credentials is None:
            message = "api key: this server needs one, as the header Authorization: Bearer KEY"
        # Starlette reads headers as latin-1: encoding back gives the bytes as sent.
        elif not is_known_key(api_keys, credentials.credentials.encode("latin-1")):
            message = "api key: not one of this server's keys"
        else:
            return
        raise HTTPException(401, message, headers={"WWW-Authenticate": "Bearer"})

    return check


async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
    """FastAPI's list of errors without the inputs, which may not be JSON (NaN, a lone
    surrogate) and need not come back to the client."""
    errors = [
        {"type": e.get("type"), "loc": list(e.get("loc", ())), "msg": str(e.get("msg"))}
        for e in error.errors()
    ]
    return JSONResponse({"detail": errors}, status_code=422)
