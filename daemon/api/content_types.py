"""CSRF by content type: ``/v1`` writes take JSON (or JSONL) bodies only.

A web page can POST cross-origin without asking first (no CORS preflight) only with a "simple"
content type: ``text/plain``, ``application/x-www-form-urlencoded`` or ``multipart/form-data``, or
none at all. Any page a job visits, or any page a user with the API on localhost opens, could
otherwise submit a batch. Requiring ``application/json`` or ``application/x-ndjson`` on every
``/v1`` POST, even a bodyless one (cancel, run), makes the browser ask first, and with CORS
off (``BROWSERD_CORS_ORIGINS`` unset) the answer is no.
"""

from __future__ import annotations

import email.message

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from daemon.api.errors import ErrorBody

ACCEPTED = frozenset({"application/json", "application/x-ndjson"})
WRITES = frozenset({"POST", "PUT", "PATCH"})  # DELETE is never a "simple" request: it is preflighted anyway
PREFIX = "/v1/"


def media_type(header: str | None) -> str:
    """``application/json; charset=utf-8`` -> ``application/json`` (empty when absent)."""
    if not header or not header.strip():
        return ""
    message = email.message.Message()
    message["content-type"] = header
    return message.get_content_type()


class RequireJsonBodies:
    """ASGI middleware: a ``/v1`` write whose Content-Type is not JSON or JSONL gets 415."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in WRITES and scope["path"].startswith(PREFIX):
            headers = dict(scope["headers"])
            raw = headers.get(b"content-type", b"").decode("latin-1")
            if media_type(raw) not in ACCEPTED:
                body = ErrorBody(error="unsupported_media_type", message=(
                    f"{scope['method']} {scope['path']} takes Content-Type application/json (or application/x-ndjson "
                    f"for JSONL batches), also when the body is empty; got {raw or 'none'!r}"))
                await JSONResponse(body.model_dump(exclude_none=True), status_code=415)(scope, receive, send)
                return
        await self.app(scope, receive, send)
