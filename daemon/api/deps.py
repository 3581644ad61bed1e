"""What every ``/v1`` router depends on: the bearer token check, the job store, the error table."""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from daemon.api.errors import ApiError, ErrorBody
from workers.jobs.store.jobs import JobStore

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    404: {"model": ErrorBody, "description": "No such job."},
    422: {"model": ErrorBody, "description": "Invalid request; `fields` names each bad field."},
}

bearer = HTTPBearer(auto_error=False, description="The value of BROWSERD_API_TOKEN.")


def require_token(request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
    expected = request.app.state.settings.api_token
    if expected is None:
        return
    given = creds.credentials if creds else ""
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        raise ApiError(
            401, "unauthorized", "missing or wrong bearer token: send 'Authorization: Bearer <BROWSERD_API_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


def store_of(request: Request) -> JobStore:
    return request.app.state.store


Store = Annotated[JobStore, Depends(store_of)]
