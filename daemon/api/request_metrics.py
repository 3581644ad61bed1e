"""Request metrics for the HTTP API: an ASGI middleware counting and timing every answered request.

Labels stay bounded whatever clients send: the route is the matched route's template
(``/v1/jobs/{job_id}``, never the id; ``unmatched`` when no route matched), the method one of the
standard ones (else ``other``), the status its class (``2xx``...). Latency is measured to the
response headers, so an event stream counts its start, not the hours it stays open.

Install with ``app.add_middleware(RequestMetrics)``; the numbers are ``workers.jobs.metrics``'s
``browserd_api_requests_total`` and ``browserd_api_request_duration_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from workers.jobs.metrics import observe_api_request

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start" and status is None:
                status = int(message["status"])
                observe_api_request(_route(scope), scope["method"], status, time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            if status is None:  # an exception escaped before any answer: the server answers 500
                observe_api_request(_route(scope), scope["method"], 500, time.perf_counter() - started)


def _route(scope: Scope) -> str | None:
    """The template of the route Starlette's router matched (it records the route in the scope)."""
    route = scope.get("route")
    return getattr(route, "path", None) if route is not None else None
