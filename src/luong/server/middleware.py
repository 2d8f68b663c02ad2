"""The ASGI middlewares of ``luong serve``'s app (``luong.server.app``): a body above the
limit refused before it is read (``BodyLimit``), and a client that hangs up before its body is
sent logged in a line (``HangUps``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOG", "BodyLimit", "HangUps"]

LOG = logging.getLogger("uvicorn.error")
"""The server's log: uvicorn's own (``luong serve`` runs the app under uvicorn)."""


class HangUps:
    """ASGI middleware: a client that hangs up before it has sent its request's body is one
    line in the server's log (``POST /translate: the client hung up before its body was
    sent (HOST:PORT)``), not a traceback: the route that was reading the body stops
    (starlette's ``ClientDisconnect``) and nothing is answered, there being no one to
    answer. The routes whose body FastAPI reads answer 400 to no one, and log the same
    line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = False  # the whole body has come
        hung_up = False

        async def watched() -> Message:
            nonlocal sent, hung_up
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                sent = True
            elif message["type"] == "http.disconnect" and not sent:
                hung_up = True
            return message

        try:
            await self.app(scope, watched, send)
        except ClientDisconnect:
            if not hung_up:
                raise
        if hung_up:
            client = scope.get("client")
            peer = f" ({client[0]}:{client[1]})" if client else ""
            LOG.warning(
                "%s %s: the client hung up before its body was sent%s",
                scope.get("method"),
                scope.get("path"),
                peer,
            )


class BodyLimit:
    """ASGI middleware: a request body above ``limit`` bytes gets 413 with a JSON message
    naming the limit, ``{"detail": MESSAGE}`` as FastAPI's errors, ``{"error": MESSAGE}`` on
    ``error_paths`` (LibreTranslate's shape, which its clients read). A declared
    Content-Length is checked before anything is read; a body sent without one (chunked) is
    read up to the limit first, then handed on."""

    def __init__(self, app: ASGIApp, limit: int, error_paths: Sequence[str] = ()) -> None:
        self.app = app
        self.limit = limit
        self.error_paths = frozenset(error_paths)

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
        key = "error" if scope.get("path") in self.error_paths else "detail"
        await JSONResponse({key: message}, status_code=413)(scope, receive, send)
