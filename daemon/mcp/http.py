"""The MCP server on the API at ``/mcp`` (streamable HTTP), behind the API's bearer token or a tenant's key.

Stateless streamable HTTP: no MCP session lives in an API process, so any replica behind a load
balancer can answer any request, like the rest of the API. The tools call the API app in process
with the caller's own bearer value (``CALLER``), so a tenant's tool call sees what its key sees
through the API, and a key revoked mid-session fails at its next call. A tool call reaching the
API without a caller carries no token at all (refused), never the admin's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
import httpx
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from config import Settings
from config.api_hosts import AllowedHosts
from daemon.mcp.backend import Api
from daemon.mcp.server import build_server
from workers.jobs.tenants.principal import resolve
from workers.jobs.tenants.store import TenantStore

PATH = "/mcp"
CALLER: ContextVar[str] = ContextVar("browserd_mcp_caller", default="")  # the bearer value of this MCP request


class CallerTransport(httpx.AsyncBaseTransport):
    """The in-process transport, sending each call with the MCP request's own bearer value."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        given = CALLER.get()
        if given:
            request.headers["Authorization"] = f"Bearer {given}"
        else:
            request.headers.pop("Authorization", None)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class BearerGuard:
    """Lets a request through only with the admin token (when one is set) or a live tenant key."""

    def __init__(self, app: ASGIApp, settings: Settings, api_app: Any) -> None:
        self.app, self.settings, self.api_app = app, settings, api_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            scheme, _, given = headers.get(b"authorization", b"").decode(errors="replace").partition(" ")
            store = self.api_app.state.store
            who = await resolve(given if scheme.lower() == "bearer" else "", self.settings.api_token,
                                TenantStore(store.redis, store.keys))
            if who is None:
                body = {"error": "unauthorized", "message": "missing, wrong or revoked bearer token: send "
                        "'Authorization: Bearer <BROWSERD_API_TOKEN or a tenant key>'"}
                await JSONResponse(body, 401, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
            CALLER.set(given if scheme.lower() == "bearer" else "")
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
        hosts = AllowedHosts.from_settings(settings)
        transport = CallerTransport(httpx.ASGITransport(app=app))
        self.api = Api.in_process(transport, timeout=60.0, host=hosts.own)
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
    app.add_route(PATH, BearerGuard(endpoint.asgi, settings, app), include_in_schema=False)
    return endpoint
