"""The MCP server on the API at ``/mcp`` (streamable HTTP), behind the API's bearer token.

Stateless streamable HTTP: no MCP session lives in an API process, so any replica behind a load
balancer can answer any request, like the rest of the API. The tools call the API app in process.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from config import Settings
from config.api_hosts import AllowedHosts
from daemon.mcp.backend import Api
from daemon.mcp.server import build_server

PATH = "/mcp"


class BearerGuard:
    """Lets a request through only with ``Authorization: Bearer <BROWSERD_API_TOKEN>`` (when one is set)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        expected = self.settings.api_token
        if scope["type"] == "http" and expected is not None:
            headers = dict(scope.get("headers") or [])
            scheme, _, given = headers.get(b"authorization", b"").decode(errors="replace").partition(" ")
            right = hmac.compare_digest(given.encode(), expected.get_secret_value().encode())
            if scheme.lower() != "bearer" or not right:
                body = {"error": "unauthorized",
                        "message": "missing or wrong bearer token: send 'Authorization: Bearer <BROWSERD_API_TOKEN>'"}
                await JSONResponse(body, 401, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        await self.app(scope, receive, send)


def transport_security(hosts: AllowedHosts) -> TransportSecuritySettings:
    """The SDK's own Host and Origin check, from the API's list (the API's guard already refused any other
    Host; this adds the SDK's Origin check, with the same names)."""
    patterns = hosts.patterns()
    origins = [f"{scheme}://{pattern}" for pattern in patterns for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=hosts.enforced, allowed_hosts=patterns,
                                     allowed_origins=origins)


class McpEndpoint:
    """The ``/mcp`` route and the session manager the API's lifespan must run."""

    def __init__(self, app: Any, settings: Settings) -> None:
        token = settings.api_token.get_secret_value() if settings.api_token else None
        hosts = AllowedHosts.from_settings(settings)
        self.api = Api.in_process(app, token, timeout=60.0, host=hosts.own)
        self.server = build_server(self.api)
        self.asgi = self.server.streamable_http_app(streamable_http_path=PATH, stateless_http=True,
                                                    transport_security=transport_security(hosts))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            try:
                yield
            finally:
                await self.api.aclose()


def mount(app: Any, settings: Settings) -> McpEndpoint:
    endpoint = McpEndpoint(app, settings)
    app.add_route(PATH, BearerGuard(endpoint.asgi, settings), include_in_schema=False)
    return endpoint
