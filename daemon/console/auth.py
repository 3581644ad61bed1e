"""Who may use the console, and proof that a state-changing request comes from the console itself.

The console takes the API's bearer token (``BROWSERD_API_TOKEN``) or a tenant's key once, from its
login form or a ``?token=`` link, and answers with a session cookie: ``<expiry>.<session id>.<HMAC(token,
expiry, id)>`` (a tenant key's: ``<expiry>.<session id>.<key id>.<HMAC(token, expiry, id, key id)>``, so
its pages show only the tenant's objects, and it ends when the key is revoked or rotated),
HttpOnly, SameSite=Strict, scoped to ``/ui``. The cookie never holds the token, expires on its own,
stops working the moment the token changes, and stops working when its session signs out (the id
is then recorded in Redis until the cookie would have expired: ``access.logout``). The token is never put back into a URL: a ``?token=`` link is
answered with a redirect to the same page without it.

Every POST must carry a CSRF token (a hidden form field, or the ``X-CSRF-Token`` header htmx sends)
derived from the session, and must not come from another origin (``Origin`` and ``Sec-Fetch-Site``
are checked when the browser sends them). With no API token set, the console is open like the API,
and its CSRF tokens are keyed by a secret made when the process starts.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request
from pydantic import SecretStr

COOKIE = "browserd_console"
COOKIE_PATH = "/ui"
SESSION_SECONDS = 12 * 3600
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"


def token_matches(expected: SecretStr, given: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.get_secret_value().encode())


def _sign(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SessionCookie:
    """A signed-in browser's session: its id (what signing out revokes), when its cookie expires, and
    the tenant key it signed in with (its public key id; '' for the admin token), which every request
    resolves again, so a revoked or rotated key's console session ends at once."""

    session_id: str
    expires: int
    key_id: str = ""


@dataclass(frozen=True)
class Gate:
    """The console's sessions and CSRF tokens for one API token (or none: the console is open)."""

    token: SecretStr | None
    process_key: bytes

    @classmethod
    def for_token(cls, token: SecretStr | None) -> Gate:
        return cls(token, secrets.token_bytes(32))

    @property
    def open(self) -> bool:
        return self.token is None

    @property
    def _key(self) -> bytes:
        if self.token is None:
            return self.process_key
        return hashlib.sha256(b"browserd-console:" + self.token.get_secret_value().encode()).digest()

    def check_token(self, given: str) -> bool:
        return self.token is not None and token_matches(self.token, given)

    def new_session(self, now: float | None = None, key_id: str = "") -> str:
        """A session cookie: the admin's, or (``key_id``) a tenant key's."""
        expires = int((now or time.time()) + SESSION_SECONDS)
        session_id = secrets.token_hex(16)
        if key_id:
            signed = _sign(self._key, f"session:{expires}:{session_id}:{key_id}")
            return f"{expires}.{session_id}.{key_id}.{signed}"
        return f"{expires}.{session_id}.{_sign(self._key, f'session:{expires}:{session_id}')}"

    def session_of(self, cookie: str | None, now: float | None = None) -> SessionCookie | None:
        """The cookie's session when its signature holds and it has not expired (revocation is checked
        by the caller, in Redis)."""
        parts = (cookie or "").split(".")
        if len(parts) == 3:
            (expires, session_id, signature), key_id = parts, ""
            message = f"session:{expires}:{session_id}"
        elif len(parts) == 4 and parts[2]:
            expires, session_id, key_id, signature = parts
            message = f"session:{expires}:{session_id}:{key_id}"
        else:
            return None
        if not expires.isdigit() or int(expires) < (now or time.time()) or not session_id:
            return None
        if not hmac.compare_digest(signature, _sign(self._key, message)):
            return None
        return SessionCookie(session_id, int(expires), key_id)

    def session_ok(self, cookie: str | None, now: float | None = None) -> bool:
        return self.open or self.session_of(cookie, now) is not None

    def csrf_for(self, cookie: str | None) -> str:
        return _sign(self._key, f"csrf:{cookie or ''}")

    def csrf_ok(self, cookie: str | None, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given or "", self.csrf_for(cookie))


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site or origin."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:  # not a browser, or an old one: the CSRF token still has to match
        return True
    parts = urlsplit(origin)
    return parts.netloc == request.headers.get("host") and parts.scheme in ("http", "https")


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a console path only, never another site."""
    if target and target.startswith(COOKIE_PATH + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return COOKIE_PATH + "/"
