"""Request metrics and the access log of the HTTP API: an ASGI middleware counting, timing and
logging every answered request.

Each request writes one line at INFO on ``browserd.api.access`` (issue 25, item 8), 401, 404 and
422 included, with structured fields: ``method``, ``route`` (the template, as in the metrics),
``status``, ``duration_ms``, ``tenant`` (once the bearer resolved: a tenant's name or
``operator``; never a key or token) and the ids the route names (``job_id``, ``batch_id``, ...).
Neither the path as sent nor its query string nor any header is written.

Labels stay bounded whatever clients send: the route is the matched route's template
(``/v1/jobs/{job_id}``, never the id; ``unmatched`` when no route matched), the method one of the
standard ones (else ``other``), the status its class (``2xx``...). Latency is measured to the
response headers, so an event stream counts its start, not the hours it stays open.

Install with ``app.add_middleware(RequestMetrics)``; the numbers are ``workers.jobs.metrics``'s
``browserd_api_requests_total`` and ``browserd_api_request_duration_seconds``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from config import bind
from workers.jobs.metrics import UNMATCHED_ROUTE, observe_api_request
from workers.jobs.tenants.models import OPERATOR_TENANT

access = logging.getLogger("browserd.api.access")

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
                _answered(scope, status, time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            if status is None:  # an exception escaped before any answer: the server answers 500
                _answered(scope, 500, time.perf_counter() - started)


def _answered(scope: Scope, status: int, seconds: float) -> None:
    route = _route(scope)
    observe_api_request(route, scope["method"], status, seconds)
    fields: dict[str, Any] = {"method": scope["method"], "route": route or UNMATCHED_ROUTE, "status": status,
                              "duration_ms": round(seconds * 1000, 1)}
    principal = (scope.get("state") or {}).get("principal")
    if principal is not None:
        fields["tenant"] = getattr(principal, "tenant", None) or OPERATOR_TENANT
    fields.update({name: str(value) for name, value in (scope.get("path_params") or {}).items()
                   if name.endswith("_id")})
    with bind(**fields):
        access.info("%s %s %s %.1fms", fields["method"], fields["route"], status, fields["duration_ms"])


def _route(scope: Scope) -> str | None:
    """The template of the route Starlette's router matched (it records the route in the scope)."""
    route = scope.get("route")
    return getattr(route, "path", None) if route is not None else None
