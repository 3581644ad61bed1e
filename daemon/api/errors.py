"""JSON errors a user can act on, and no stack traces on the wire.

Every error body is ``{"error": <code>, "message": <what to do>}``; validation errors add
``"fields": [{"field": "options.max_steps", "message": ...}]`` naming each bad field (and, when a
named bound refused it, ``"limit"``: an output schema's ``"branches"``).

HTTP status codes exist here only: the job kernel raises typed errors (``SpecError``,
``QueueUnavailable``, ``QuotaExceeded``) and ``install`` maps them to 422, 503 and 429 (with the
quota's name and ``Retry-After``).
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from config.messages import error_message
from workers.jobs.errors import QueueUnavailable, SpecError
from workers.jobs.specs.checks import field_name
from workers.jobs.tenants.models import QuotaExceeded

log = logging.getLogger("browserd.api")


class FieldError(BaseModel):
    field: str
    message: str
    limit: str | None = Field(None, description="The named bound that refused the field, when one did: an "
                              "output_schema's bytes, nodes, depth, ref, recursion or branches (docs/jobs.md).")


class ErrorBody(BaseModel):
    error: str
    message: str
    fields: list[FieldError] | None = None
    quota: str | None = Field(None, description="429 quota_exceeded: the tenant's quota that refused the request "
                              "(running, queued, batch_size, jobs_per_day, sessions).")
    retry_after: float | None = Field(None, description="429: seconds until the quota frees (also the Retry-After "
                                      "header); absent when it never frees for this request (batch_size).")


class ApiError(Exception):
    """An error with an HTTP status, a short code and a message for the user."""

    def __init__(self, status: int, code: str, message: str, *, fields: list[FieldError] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.fields, self.headers = status, code, message, fields, headers


def invalid(field: str, message: str) -> ApiError:
    return ApiError(422, "invalid_request", f"{field}: {message}", fields=[FieldError(field=field, message=message)])


def _json(status: int, body: ErrorBody, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, headers=headers)


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _json(exc.status, ErrorBody(error=exc.code, message=exc.message, fields=exc.fields), exc.headers)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    fields = []
    for err in exc.errors():
        msg = error_message(err)
        if err.get("type") == "json_invalid":
            msg = "the body is not valid JSON: " + str(err.get("ctx", {}).get("error", msg))
        fields.append(FieldError(field=field_name(err.get("loc", ())), message=msg))
    summary = "; ".join(f"{f.field}: {f.message}" for f in fields[:5])
    return _json(422, ErrorBody(error="invalid_request", message=summary or "invalid request", fields=fields))


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    if exc.status_code == 404 and message == "Not Found":
        message = "no such endpoint; see /docs for the API"
    return _json(exc.status_code, ErrorBody(error=codes.get(exc.status_code, "http_error"), message=message),
                 getattr(exc, "headers", None))


def from_spec_error(exc: SpecError) -> ApiError:
    """A refused spec at the HTTP edge: 422, each bad field named."""
    fields = [FieldError(field=p.field, message=p.message, limit=p.limit) for p in exc.problems]
    return ApiError(422, "invalid_request", exc.summary, fields=fields)


async def _spec_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SpecError)
    return await _api_error(request, from_spec_error(exc))


async def _quota_exceeded(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, QuotaExceeded)
    headers = {"Retry-After": str(math.ceil(exc.retry_after))} if exc.retry_after is not None else None
    return _json(429, ErrorBody(error="quota_exceeded", message=str(exc), quota=exc.quota.value,
                                retry_after=math.ceil(exc.retry_after) if exc.retry_after is not None else None),
                 headers)


async def _queue_unavailable(_: Request, exc: Exception) -> JSONResponse:
    log.error("broker unavailable: %s", exc)
    return _json(503, ErrorBody(error="unavailable", message="the work could not be queued (the broker is "
                                "unreachable) and was cancelled; check Redis and BROWSERD_REDIS_URL, then submit again"))


async def _redis_down(_: Request, exc: Exception) -> JSONResponse:
    log.error("redis unavailable: %s", exc)
    return _json(503, ErrorBody(error="unavailable", message="the job store (Redis) is unreachable; check that "
                                "Redis is running and BROWSERD_REDIS_URL points at it, then retry"))


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    ref = uuid.uuid4().hex[:12]
    log.error("unhandled error (ref %s)", ref, exc_info=exc)
    return _json(500, ErrorBody(error="internal", message=f"internal error (ref {ref}); the server log has details"))


async def send_error(send: Callable[[dict[str, Any]], Awaitable[None]], error: ApiError) -> None:
    """Answer ``error`` from ASGI middleware (before the app and its handlers run), closing the connection."""
    body = json.dumps({"error": error.code, "message": error.message}).encode()
    await send({"type": "http.response.start", "status": error.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def install(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(SpecError, _spec_error)
    app.add_exception_handler(QueueUnavailable, _queue_unavailable)
    app.add_exception_handler(QuotaExceeded, _quota_exceeded)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RedisConnectionError, _redis_down)
    app.add_exception_handler(RedisTimeoutError, _redis_down)
    app.add_exception_handler(Exception, _unexpected)
