"""The API's DNS-rebinding guard: a request whose ``Host`` the API does not answer gets 421.

Outermost middleware, so it covers every route alike (``/v1``, the console at ``/ui``, ``/mcp``,
the OpenAPI docs); the list and when it is checked are ``config.api_hosts.AllowedHosts``. 421 Misdirected
Request says "this server is not the one that name is for", which is what a rebound name is.
``OPEN_PATHS``, the routes that never take a token either, answer any ``Host``: a kubelet probe or a
Prometheus scrape asks by the pod's address, and a rebound page learns nothing there that any
process able to reach the port could not read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from config.api_hosts import AllowedHosts
from daemon.api.errors import ApiError, send_error

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
Message = dict[str, Any]
App = Callable[[dict[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class HostGuard:
    """ASGI middleware: refuse an HTTP or WebSocket request whose ``Host`` is not allowed."""

    def __init__(self, app: App, allowed: AllowedHosts) -> None:
        self.app, self.allowed = app, allowed

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("path") not in OPEN_PATHS:
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not self.allowed.allows(host):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send_error(send, ApiError(421, "misdirected", self.allowed.refusal(host)))
                return
        await self.app(scope, receive, send)
