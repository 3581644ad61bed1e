"""``/v1/sessions``: interactive browser sessions for an external agent, served by workers.

The API holds no browser and no session: it writes the record, hands the session to a worker on
the ``sessions`` queue and relays each command through Redis (``workers.jobs.sessions.store``), so any
API replica can answer for any session. Refusals: 404 for a session that is not open (never was,
closed, idle past its timeout, worker gone), 400 ``action_failed`` with the action's own message,
403 ``url_blocked`` for a URL the egress policy refuses, 422 for bad arguments, 429 at
``BROWSERD_SESSION_MAX_OPEN``, 504 when the worker does not answer.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from config import Settings
from daemon.api.deps import ERRORS, Caller, Store, caller
from daemon.api.errors import ApiError, ErrorBody
from workers.jobs.sessions.errors import (
    SessionCommandFailed,
    SessionError,
    SessionLimitReached,
    SessionNotFound,
    SessionUnresponsive,
)
from workers.jobs.sessions.models import (
    ClickArgs,
    Command,
    CommandResult,
    NavigateArgs,
    ReplyCode,
    ScrollArgs,
    SelectArgs,
    SessionList,
    SessionOptions,
    SessionRecord,
    SessionReply,
    SessionView,
    StateArgs,
    TabList,
    TypeArgs,
)
from workers.jobs.sessions.store import SessionStore, open_session
from workers.jobs.tenants.ceilings import tenant_ceiling

FAILED_STATUS = {ReplyCode.url_blocked: 403, ReplyCode.action_failed: 400, ReplyCode.start_failed: 400,
                 ReplyCode.invalid: 422}

router = APIRouter(prefix="/v1/sessions", dependencies=[Depends(caller)], responses={
    **ERRORS,
    400: {"model": ErrorBody, "description": "The command failed on the page; the message is the action's."},
    403: {"model": ErrorBody, "description": "The URL is refused by the egress policy."},
    404: {"model": ErrorBody, "description": "No open session with this id."},
    429: {"model": ErrorBody, "description": "BROWSERD_SESSION_MAX_OPEN sessions are open."},
    504: {"model": ErrorBody, "description": "The session's worker did not answer in time."},
})


def sessions_of(store: Store) -> SessionStore:
    return SessionStore(store.redis, store.keys)


Sessions = Annotated[SessionStore, Depends(sessions_of)]


async def owned(session_id: str, sessions: Sessions, who: Caller) -> str:
    """The session id, if the caller may use it: another tenant's session answers 404 exactly like
    one that is not open."""
    record = await sessions.get(session_id)
    if record is None or not who.sees(record.tenant):
        raise as_api_error(SessionNotFound(session_id))
    return session_id


OwnedSession = Annotated[str, Depends(owned)]


def as_api_error(exc: SessionError) -> ApiError:
    """A session error at the HTTP edge."""
    if isinstance(exc, SessionNotFound):
        return ApiError(404, "not_found", str(exc))
    if isinstance(exc, SessionLimitReached):
        return ApiError(429, "too_many_sessions", str(exc))
    if isinstance(exc, SessionUnresponsive):
        return ApiError(504, "session_unresponsive", str(exc))
    if isinstance(exc, SessionCommandFailed):
        return ApiError(FAILED_STATUS.get(exc.code, 400), exc.code.value, exc.message)
    return ApiError(500, "internal", str(exc))


async def _command(sessions: SessionStore, session_id: str, name: Command, args: Any = None) -> SessionReply:
    body = args.model_dump(mode="json", exclude_none=True) if args is not None else {}
    try:
        return await sessions.request(session_id, name, body)
    except SessionError as exc:
        raise as_api_error(exc) from None


def _result(session_id: OwnedSession, reply: SessionReply) -> CommandResult:
    return CommandResult(session_id=session_id, result=reply.result, url=reply.url)


@router.post("", status_code=201, response_model=SessionRecord)
async def create_session(options: SessionOptions, request: Request, sessions: Sessions, who: Caller) -> SessionRecord:
    """Open a session: a worker leases a browser context (under the session's egress rule) and opens
    ``start_url``; answers once the page is open. It closes itself after ``idle_timeout`` seconds
    without a command. A tenant's session is its own, its networks within its ceiling."""
    settings: Settings = request.app.state.settings
    try:
        return await open_session(sessions, options, settings, ceiling=tenant_ceiling(who, settings),
                                  tenant=who.tenant)
    except SessionError as exc:
        raise as_api_error(exc) from None


@router.get("", response_model=SessionList)
async def list_sessions(sessions: Sessions, who: Caller,
                        tenant: Annotated[str | None, Query(description="admin only: one tenant's sessions")] = None,
                        ) -> SessionList:
    """The open sessions, oldest first (a tenant's own only)."""
    return SessionList(sessions=await sessions.list(who.owner_filter(tenant)))


@router.get("/{session_id}", response_model=SessionRecord)
async def get_session(session_id: OwnedSession, sessions: Sessions) -> SessionRecord:
    try:
        return await sessions.require(session_id)
    except SessionNotFound as exc:
        raise as_api_error(exc) from None


@router.delete("/{session_id}", response_model=CommandResult)
async def close_session(session_id: OwnedSession, sessions: Sessions) -> CommandResult:
    """Close the session: its browser context (cookies, storage, tabs) is disposed."""
    return _result(session_id, await _command(sessions, session_id, "close"))


@router.post("/{session_id}/navigate", response_model=CommandResult)
async def navigate(session_id: OwnedSession, args: NavigateArgs, sessions: Sessions) -> CommandResult:
    """Open a URL in the current tab."""
    return _result(session_id, await _command(sessions, session_id, "navigate", args))


@router.get("/{session_id}/state", response_model=SessionView)
async def get_state(session_id: OwnedSession, sessions: Sessions,
                    text: Annotated[bool, Query(description="also the page's readable text")] = False) -> SessionView:
    """The page as the navigator sees it: tabs and the element index (``[n]``), wrapped as untrusted."""
    reply = await _command(sessions, session_id, "state", StateArgs(text=text))
    return SessionView(session_id=session_id, **reply.data)


@router.post("/{session_id}/click", response_model=CommandResult)
async def click(session_id: OwnedSession, args: ClickArgs, sessions: Sessions) -> CommandResult:
    """Click the element with this index (from the last state)."""
    return _result(session_id, await _command(sessions, session_id, "click", args))


@router.post("/{session_id}/type", response_model=CommandResult)
async def type_text(session_id: OwnedSession, args: TypeArgs, sessions: Sessions) -> CommandResult:
    """Type text into the field with this index, replacing its content."""
    return _result(session_id, await _command(sessions, session_id, "type", args))


@router.post("/{session_id}/select", response_model=CommandResult)
async def select(session_id: OwnedSession, args: SelectArgs, sessions: Sessions) -> CommandResult:
    """Select an option (by its text or value) in the dropdown with this index."""
    return _result(session_id, await _command(sessions, session_id, "select", args))


@router.post("/{session_id}/scroll", response_model=CommandResult)
async def scroll(session_id: OwnedSession, args: ScrollArgs, sessions: Sessions) -> CommandResult:
    """Scroll one screen up or down, or to a text."""
    return _result(session_id, await _command(sessions, session_id, "scroll", args))


@router.get("/{session_id}/screenshot", response_class=Response,
            responses={200: {"content": {"image/jpeg": {}}, "description": "A JPEG of the current tab."}})
async def screenshot(session_id: OwnedSession, sessions: Sessions) -> Response:
    """A JPEG of the current tab's viewport."""
    reply = await _command(sessions, session_id, "screenshot")
    return Response(base64.b64decode(reply.data["jpeg"]), media_type="image/jpeg",
                    headers={"Cache-Control": "no-store"})


@router.get("/{session_id}/tabs", response_model=TabList)
async def tabs(session_id: OwnedSession, sessions: Sessions) -> TabList:
    """The session's open tabs (titles and URLs are the pages' own: untrusted)."""
    reply = await _command(sessions, session_id, "tabs")
    return TabList(session_id=session_id, **reply.data)


__all__ = ["router"]
