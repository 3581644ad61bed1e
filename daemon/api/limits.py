"""The request body limit (``BROWSERD_MAX_REQUEST_BYTES``), enforced while the body is read.

A body that declares a larger ``Content-Length`` is refused before a byte of it is read; one that
does not (chunked) is counted as it arrives and refused the moment it passes the limit, so the API
never holds more than the limit of any request in memory, and nothing is parsed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from daemon.api.errors import ApiError, send_error

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def too_large(limit: int) -> ApiError:
    return ApiError(413, "too_large", f"the request body is larger than {limit} bytes (BROWSERD_MAX_REQUEST_BYTES); "
                    "split a large batch into several")


class BodyLimit:
    """ASGI middleware: 413 for a body over ``limit`` bytes (raised inside ``receive`` once it
    passes, so the app's own error handler answers, with the usual JSON error body)."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await send_error(send, too_large(self.limit))
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise too_large(self.limit)
            return message

        await self.app(scope, counted, send)

