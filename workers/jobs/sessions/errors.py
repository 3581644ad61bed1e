"""The interactive sessions' errors: typed, with the session's id; the API maps them to statuses."""

from __future__ import annotations

from workers.jobs.errors import JobsError
from workers.jobs.sessions.models import ReplyCode


class SessionError(JobsError):
    """Base of the interactive sessions' errors (``sessions``)."""


class SessionNotFound(SessionError):
    """No open session with this id: never opened, closed, idle too long, or its worker is gone."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no open session with id {session_id!r} (it was closed, stayed idle past its idle "
                         "timeout, or its worker stopped); open a new one")


class SessionLimitReached(SessionError):
    """``BROWSERD_SESSION_MAX_OPEN`` sessions are open already."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"{limit} sessions are open already (BROWSERD_SESSION_MAX_OPEN); close one first")


class SessionUnresponsive(SessionError):
    """The session's worker did not answer in time (it is busy, overloaded, or no worker took the session)."""

    def __init__(self, session_id: str, what: str, seconds: float) -> None:
        self.session_id, self.seconds = session_id, seconds
        super().__init__(f"session {session_id}: {what} got no answer within {seconds:g}s")


class SessionCommandFailed(SessionError):
    """A command ran on the page and failed; ``code`` is ``action_failed``, ``url_blocked``, ``start_failed``
    or ``invalid``, the message the action's own (what the navigator would read)."""

    def __init__(self, code: ReplyCode, message: str) -> None:
        self.code, self.message = code, message
        super().__init__(message)
