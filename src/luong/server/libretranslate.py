"""The LibreTranslate API's side of ``luong serve``: what its clients send and read, apart
from decoding (``luong.server.app`` decodes, through the batcher and the limits of
``/api/translate``).

LibreTranslate (https://libretranslate.com/docs) is the HTTP API that translation tools speak
(Weblate, Translate Toolkit, searxng, ``libretranslatepy``, ``deep-translator``, ...):

- ``POST /translate``: ``q`` (a text, or in a JSON body a list of texts), ``source``,
  ``target`` (language codes; ``source`` may be ``"auto"``), ``format`` (``text`` or
  ``html``; empty or null: text), ``alternatives`` (N: that many other translations per
  text) and ``api_key``; in a JSON body, a form body (``application/x-www-form-urlencoded``
  or ``multipart/form-data``) or the query string (``deep-translator`` sends them there).
  Where a field comes twice, LibreTranslate's rule holds: a JSON body is read alone (the
  query string is not read), and of a form body and the query string the query string's
  value wins (Werkzeug's ``request.values``: the query first). Each line of a text is
  translated apart and the line breaks are kept (``luong.service.texts``: argos-
  translate's paragraphs, which LibreTranslate translates). Answer
  ``{"translatedText": T}`` (T a string, or a list for a list), with ``"alternatives"`` (a
  list of strings per text, none equal to the text's translation nor to another) when
  asked, and ``"detectedLanguage"`` for ``"auto"``. Two fields of luong's own beside
  LibreTranslate's: the request's ``glossary`` (a list of ``[source term, target term]``
  pairs in a JSON body, or, in any body, a TSV text: a term a line, a tab between source and
  target; ``luong.memory.glossary``: where a text holds a term, its translation holds the target
  term), and the answer's ``confidence``: the model's confidence in each translation, in
  [0, 1] as ``/api/translate``'s (``luong.translation.confidence``: the geometric mean of its
  tokens' probabilities, over all of a text's lines; null for an empty text), a number, or a list
  for a list. LibreTranslate's own answer has no such field; its clients read
  ``translatedText`` and leave it.
- ``GET /languages``: ``[{"code", "name", "targets"}]``, a language per code the served
  models read or write, its name in English (babel), the targets it is translated into.
- ``GET /frontend/settings``: the settings LibreTranslate's own page and some clients read.
- ``POST /detect``: there is no language detector, so it answers 400 in LibreTranslate's
  shape, naming the source languages served (``detect_refusal``).

Errors are ``{"error": MESSAGE}`` with LibreTranslate's status codes and, where it has one,
its message: 400 for a bad request (``Invalid request: missing q parameter``, ``xx is not
supported``, a limit, a field that is not valid Unicode: a lone surrogate), 403 for a
missing or wrong key (``Invalid API key``), 413 for a body above the server's
``max_body_bytes``, 500 when decoding fails (``Cannot translate text: ...``).

Each served model translates one pair, its folder's ``src_lang`` -> ``tgt_lang``; a pair is
routed to the first model given for it. There is no language detector: ``source: "auto"``
is taken for the one source language that the served models read for ``target``.
"""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qsl

from luong.common.errors import LuongError
from luong.common.languages import language_name
from luong.config.search import MAX_BEAM
from luong.service.request_glossary import check_unicode, request_glossary

__all__ = [
    "FORMATS",
    "LibreError",
    "LibreRequest",
    "PATHS",
    "check_key",
    "detect_refusal",
    "frontend_settings",
    "is_known_key",
    "language_list",
    "parse_request",
    "route",
    "translate_answer",
]

FORMATS = ("text", "html")
"""The ``format`` values of ``POST /translate``."""

PATHS = ("/translate", "/detect", "/languages", "/frontend/settings")
"""The API's paths: their errors are ``{"error": MESSAGE}``, a body too large too."""

Pairs = Mapping[tuple[str, str], str]
"""(source code, target code) -> the name of the model that translates it."""


class LibreError(Exception):
    """An error answered in LibreTranslate's shape: ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class LibreRequest:
    """A ``POST /translate`` request, read and checked (``parse_request``)."""

    texts: list[str]  # the texts to translate: q, or q's items
    batch: bool  # q was a list: the answer is a list
    source: str
    target: str
    format: str  # "text" or "html"
    alternatives: int  # other translations per text, >= 0
    api_key: str | None
    glossary: tuple[tuple[str, str], ...] = ()  # luong's own: (source term, target term)


def parse_request(
    content_type: str,
    body: bytes,
    query: Mapping[str, str] | Sequence[tuple[str, str]],
    max_glossary_terms: int | None = None,
) -> LibreRequest:
    """Read a ``POST /translate`` request as LibreTranslate does: a JSON body alone when the
    content type says JSON; otherwise the query string's fields over the form body's (a
    field in both takes the query string's value, as Werkzeug's ``request.values`` gives
    it). A name given twice in the query string or the form takes its first value.

    Args:
        content_type: the request's ``Content-Type`` header ("" when none).
        body: the request's body.
        query: the query string's parameters: a mapping, or its (name, value) pairs in order.
        max_glossary_terms: the most terms the request's ``glossary`` may have (counted
            before any is parsed: its pairs, or its TSV text's lines); None: no bound.

    Raises:
        LibreError: 400: a body that cannot be read, a missing ``q``, ``source`` or
            ``target``, a ``q`` that is neither a text nor a list of texts, a text or a
            field that is not valid Unicode (a lone surrogate, which JSON can spell), an
            unknown ``format``, an ``alternatives`` that is not an int >= 0, a ``glossary``
            that is neither pairs nor TSV text, holds a bad term, or more terms than
            ``max_glossary_terms``.
    """
    kind = content_type.split(";")[0].strip().lower()
    fields: dict[str, Any]
    if kind == "application/json":
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise LibreError(400, "Invalid request: the body is not JSON") from None
        if not isinstance(data, dict):
            raise LibreError(400, "Invalid JSON format")
        fields = data
    else:
        fields = _form(kind, content_type, body)
        pairs = query.items() if isinstance(query, Mapping) else query
        given: dict[str, str] = {}
        for name, value in pairs:
            given.setdefault(name, value)
        fields.update(given)
    q = fields.get("q")
    if not q:
        raise LibreError(400, "Invalid request: missing q parameter")
    batch = isinstance(q, list)
    texts = q if batch else [q]
    if not all(isinstance(text, str) for text in texts):
        raise LibreError(400, "Invalid request: q must be a text or a list of texts")
    for i, text in enumerate(texts):
        _check_unicode(f"sources: source {i}", text)
    if kind != "application/json":
        # A form's line breaks may be CRLF; LibreTranslate reads them as LF.
        texts = ["\n".join(text.splitlines()) for text in texts]
    for name in ("source", "target"):
        if not fields.get(name):
            raise LibreError(400, f"Invalid request: missing {name} parameter")
        if not isinstance(fields[name], str):
            raise LibreError(400, f"Invalid request: {name} must be a language code")
    for name in ("source", "target", "format", "api_key", "alternatives"):
        if isinstance(fields.get(name), str):
            _check_unicode(name, fields[name])
    text_format = fields.get("format") or "text"  # empty or null: text, as LibreTranslate
    if text_format not in FORMATS:
        raise LibreError(400, f"{str(text_format)[:40]} format is not supported")
    alternatives = _alternatives(fields.get("alternatives"))
    try:
        glossary = request_glossary(fields.get("glossary"), max_glossary_terms)
    except LuongError as error:
        raise LibreError(400, f"Invalid request: {error}") from None
    key = fields.get("api_key")
    return LibreRequest(
        texts=list(texts),
        batch=batch,
        source=fields["source"],
        target=fields["target"],
        format=text_format,
        alternatives=alternatives,
        api_key=key if isinstance(key, str) and key else None,
        glossary=glossary,
    )


def _alternatives(value: object) -> int:
    if value is None or value == "":
        return 0
    # Decimal digits only: what int() reads ("²" and "①" are digits to isdigit, not to int).
    if isinstance(value, str) and value.strip().isdecimal():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LibreError(
            400, f"Invalid request: alternatives must be an int >= 0, got {value!r:.40}"
        )
    if value >= MAX_BEAM:  # the n-best list holds the translation and its alternatives
        raise LibreError(
            400, f"Invalid request: alternatives must be at most {MAX_BEAM - 1}, got {value}"
        )
    return value


def _form(kind: str, content_type: str, body: bytes) -> dict[str, str]:
    """The fields of a form body (the first value of each), read by the standard library:
    ``urllib.parse`` for ``application/x-www-form-urlencoded``, ``email`` for
    ``multipart/form-data`` (RFC 7578 is MIME)."""
    if not body:
        return {}
    try:
        if kind == "multipart/form-data":
            header = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1")
            message = BytesParser(policy=HTTP).parsebytes(header + body)
            if not message.is_multipart():
                raise LuongError("not a multipart body")
            fields: dict[str, str] = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                if isinstance(name, str) and isinstance(payload, bytes):
                    fields.setdefault(name, payload.decode("utf-8"))
            return fields
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeError, ValueError, LookupError):
        raise LibreError(400, "Invalid request: the form body cannot be read") from None
    fields = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields


def check_key(api_keys: Collection[str] | None, key: str | None) -> None:
    """Let a request through when no keys are set (``api_keys`` None), or when ``key`` is
    one of them (``is_known_key``).

    Raises:
        LibreError: 403, the key missing or not one of ``api_keys``.
    """
    if api_keys is None:
        return
    if key is None:
        raise LibreError(403, "Invalid API key: this server needs an api_key")
    if not is_known_key(api_keys, key.encode("utf-8", "surrogatepass")):
        raise LibreError(403, "Invalid API key")


def is_known_key(api_keys: Collection[str], key: bytes) -> bool:
    """Whether ``key`` (its bytes, as sent) is one of ``api_keys`` (their UTF-8), each
    compared in constant time: the one comparison of a key, for both APIs of the server."""
    return any(hmac.compare_digest(key, known.encode("utf-8")) for known in api_keys)


def route(pairs: Pairs, source: str, target: str) -> tuple[str, str]:
    """The model for ``source`` -> ``target`` and the source language (``"auto"``
    resolved: the one source language read for ``target``).

    Raises:
        LibreError: 400, in LibreTranslate's words: ``xx is not supported`` (a code no
            served model reads or writes), ``German (de) is not available as a target
            language from English (en)``, or ``"auto"`` with no or several sources for
            ``target``.
    """
    codes = {code for pair in pairs for code in pair}
    if source == "auto":
        sources = sorted({src for src, tgt in pairs if tgt == target})
        if len(sources) != 1:
            found = f"several ({', '.join(sources)})" if sources else "none"
            raise LibreError(
                400,
                f"auto: this server detects no languages; it takes auto for the one source "
                f"language served for {target[:40]}, found {found}: give source",
            )
        source = sources[0]
    for code in (source, target):
        if code not in codes:
            raise LibreError(400, f"{code[:40]} is not supported")
    if (source, target) not in pairs:
        raise LibreError(
            400,
            f"{language_name(target)} ({target}) is not available as a target language from "
            f"{language_name(source)} ({source})",
        )
    return pairs[(source, target)], source


def language_list(pairs: Pairs) -> list[dict[str, Any]]:
    """``GET /languages``: every code the pairs read or write, sorted, with its English name
    and the codes it is translated into."""
    codes = sorted({code for pair in pairs for code in pair})
    return [
        {
            "code": code,
            "name": language_name(code),
            "targets": sorted({tgt for src, tgt in pairs if src == code}),
        }
        for code in codes
    ]


def frontend_settings(pairs: Pairs, api_keys: Collection[str] | None) -> dict[str, Any]:
    """``GET /frontend/settings``: the fields clients read. There is no character limit
    (``charLimit`` -1: the limits are in symbols, ``/api/models``' ``limits``), no
    suggestions and no file translation; the default language pair is the first served."""
    first = next(iter(pairs), None)
    language = (
        {
            side: {"code": code, "name": language_name(code)}
            for side, code in zip(("source", "target"), first, strict=True)
        }
        if first is not None
        else None
    )
    return {
        "charLimit": -1,
        "frontendTimeout": 500,
        "apiKeys": api_keys is not None,
        "keyRequired": api_keys is not None,
        "suggestions": False,
        "filesTranslation": False,
        "supportedFilesFormat": [],
        "language": language,
    }


def translate_answer(
    request: LibreRequest,
    outputs: Sequence[Sequence[str]],
    source: str,
    confidences: Sequence[float | None] | None = None,
) -> dict[str, Any]:
    """The answer to ``request``: ``outputs`` holds each text's translations, best first
    (one, or ``alternatives + 1`` from an n-best list). ``alternatives`` are the others,
    each text once and none equal to the best. ``confidences``: the best translation's of
    each text (None for none), written as ``"confidence"`` rounded to 6 decimals, null for
    None or a number that is not finite."""
    best = [texts[0] if texts else "" for texts in outputs]
    answer: dict[str, Any] = {"translatedText": best if request.batch else best[0]}
    if confidences is not None:
        if len(confidences) != len(best):
            raise LuongError(f"confidences: expected {len(best)}, got {len(confidences)}")
        shown = [round(c, 6) if c is not None and math.isfinite(c) else None for c in confidences]
        answer["confidence"] = shown if request.batch else shown[0]
    if request.alternatives:
        others = [
            [text for text in dict.fromkeys(texts[1:]) if text != first][: request.alternatives]
            for first, texts in zip(best, outputs, strict=True)
        ]
        answer["alternatives"] = others if request.batch else others[0]
    if request.source == "auto":
        detected = {"confidence": 100.0, "language": source}
        answer["detectedLanguage"] = [detected] * len(best) if request.batch else detected
    return answer


def _check_unicode(name: str, text: str) -> None:
    """``check_unicode``, its refusal in LibreTranslate's shape (400)."""
    try:
        check_unicode(name, text)
    except LuongError as error:
        raise LibreError(400, f"Invalid request: {error}") from None


def detect_refusal(pairs: Pairs) -> LibreError:
    """The answer to ``POST /detect``: this server has no language detector; the error names
    the source languages it serves, one of which a client gives as ``source``."""
    sources = sorted({src for src, _ in pairs})
    served = ", ".join(sources) if sources else "none"
    return LibreError(
        400,
        f"this server detects no languages: give source, one of the languages it "
        f"translates from ({served}; GET /languages)",
    )
