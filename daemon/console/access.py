"""The console's login, logout and the two dependencies every page uses: ``Viewer`` (a signed-in
browser) and ``Actor`` (a signed-in browser making a same-origin POST with its CSRF token).

Both carry who signed in (``Session.who``): the admin token's session sees everything; a tenant
key's sees only its tenant's jobs, batches and schedules (``pages``), and its key is resolved again
on every request, so revoking or rotating it ends the session at once."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData, UploadFile

from daemon.console.auth import (
    COOKIE,
    COOKIE_PATH,
    CSRF_FIELD,
    CSRF_HEADER,
    SESSION_SECONDS,
    Gate,
    SessionCookie,
    safe_next,
    same_origin,
)
from daemon.console.rendering import render
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES, MAX_INPUT_FILES
from workers.jobs.tenants.principal import ADMIN, Principal
from workers.jobs.tenants.store import TenantStore, key_id_of, looks_like_key

MAX_FORM_BYTES = 1_000_000
MULTIPART = "multipart/form-data"
MAX_FIELDS = 200  # a multipart form's text fields at most (the submit form has about 20)
MAX_UPLOAD_BYTES = MAX_FORM_BYTES + MAX_INPUT_FILES * (MAX_INPUT_FILE_BYTES + 4096)  # a form and its files' parts
LOGIN_REFUSED = "That token is not the API token, nor a live tenant key."


class ConsoleRedirect(Exception):
    """Answer with a redirect (to the login form, or to the same page without ``?token=``)."""

    def __init__(self, location: str, cookie: str | None = None, status: int = 303) -> None:
        super().__init__(location)
        self.location, self.cookie, self.status = location, cookie, status


class ConsoleRefused(Exception):
    """A POST without a valid CSRF token, or from another origin: 403."""


def gate_of(request: Request) -> Gate:
    return request.app.state.console_gate


@dataclass(frozen=True)
class Session:
    cookie: str | None
    csrf: str
    who: Principal = ADMIN


def _tenants(request: Request) -> TenantStore:
    store = request.app.state.store
    return TenantStore(store.redis, store.keys)


async def signed_cookie(request: Request, token: str) -> str | None:
    """The session cookie a token signs in to: the admin token's, or a live tenant key's; None: refused."""
    gate = gate_of(request)
    if looks_like_key(token):
        if gate.open or await _tenants(request).resolve(token) is None:  # no admin token: no tenants either
            return None
        return gate.new_session(key_id=key_id_of(token))
    return gate.new_session() if gate.check_token(token) else None


async def viewer(request: Request) -> Session:
    gate = gate_of(request)
    token = request.query_params.get("token")
    if token is not None:  # exchange the link's token for the cookie; the token leaves the URL at once
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        clean = request.url.path + (f"?{rest}" if rest else "")
        cookie = None if gate.open else await signed_cookie(request, token)
        if not gate.open and cookie is None:
            raise ConsoleRedirect(f"{COOKIE_PATH}/login?" + urlencode({"next": clean, "failed": "1"}))
        raise ConsoleRedirect(clean, cookie=cookie)
    cookie = request.cookies.get(COOKIE)
    who: Principal | None = ADMIN
    if not gate.open:
        who = await _signed_in(request, gate.session_of(cookie))
    if who is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise ConsoleRedirect(f"{COOKIE_PATH}/login?" + urlencode({"next": target}))
    request.state.console_tenant = who.tenant  # the pages' header: a tenant's own links, its name
    return Session(cookie, gate.csrf_for(cookie), who)


async def _signed_in(request: Request, session: SessionCookie | None) -> Principal | None:
    """Who a valid cookie whose session has not signed out belongs to (a tenant's key: still live)."""
    if session is None:
        return None
    store = request.app.state.store
    if await store.redis.exists(store.keys.console_logout(session.session_id)):
        return None
    if not session.key_id:
        return ADMIN
    tenant = await _tenants(request).by_key_id(session.key_id)
    return Principal(tenant.name, tenant.limits) if tenant is not None else None


async def form_fields(request: Request) -> dict[str, list[str]]:
    """The POSTed form (``application/x-www-form-urlencoded``, what the console's forms send; the
    submit form with files is ``multipart/form-data``: its text fields here, its files in
    ``form_files``)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind == MULTIPART:
        form = await _multipart(request)
        return {name: [v for v in form.getlist(name) if isinstance(v, str)] for name in form.keys()}
    if kind not in ("", "application/x-www-form-urlencoded"):
        raise ConsoleRefused(f"the console takes form posts, not {kind}")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise ConsoleRefused("the form is too large")
    return parse_qs(body.decode(errors="replace"), keep_blank_values=True)


async def _multipart(request: Request) -> FormData:
    """A multipart form, bounded before it is read: its declared length (a browser always sends one) at
    most the text of a form and ``MAX_INPUT_FILES`` files of ``MAX_INPUT_FILE_BYTES``; starlette caches
    it, so the CSRF check and the page read it once."""
    declared = request.headers.get("content-length", "")
    if not declared.isdigit():
        raise ConsoleRefused("a form with files must say its length (Content-Length)")
    if int(declared) > MAX_UPLOAD_BYTES:
        raise ConsoleRefused(f"the form is too large: its files may hold at most {MAX_INPUT_FILE_BYTES >> 20} MiB "
                             f"each, {MAX_INPUT_FILES} files")
    return await request.form(max_files=MAX_INPUT_FILES, max_fields=MAX_FIELDS)


async def form_files(request: Request) -> list[UploadFile]:
    """The files of a multipart form (none for a plain form post)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != MULTIPART:
        return []
    form = await _multipart(request)
    return [v for name in form.keys() for v in form.getlist(name) if isinstance(v, UploadFile) and v.filename]


async def actor(request: Request, session: Annotated[Session, Depends(viewer)]) -> Session:
    if not same_origin(request):
        raise ConsoleRefused("cross-origin requests are refused")
    given = request.headers.get(CSRF_HEADER) or (await form_fields(request)).get(CSRF_FIELD, [""])[0]
    if not gate_of(request).csrf_ok(session.cookie, given):
        raise ConsoleRefused("the form's CSRF token is missing or stale; reload the page and try again")
    return session


Viewer = Annotated[Session, Depends(viewer)]
Actor = Annotated[Session, Depends(actor)]

router = APIRouter(prefix=COOKIE_PATH, include_in_schema=False)


def set_session(response: Response, request: Request, cookie: str) -> None:
    response.set_cookie(COOKIE, cookie, max_age=SESSION_SECONDS, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, next: str | None = None, failed: str | None = None) -> Response:  # noqa: A002
    if gate_of(request).open:
        return RedirectResponse(safe_next(next), status_code=303)
    error = LOGIN_REFUSED if failed else None
    return render(request, "login.html", {"next": safe_next(next), "error": error}, status=401 if failed else 200)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    if not same_origin(request):
        raise ConsoleRefused("cross-origin requests are refused")
    fields = await form_fields(request)
    target = safe_next((fields.get("next") or [""])[0])
    gate = gate_of(request)
    cookie = None if gate.open else await signed_cookie(request, (fields.get("token") or [""])[0])
    if not gate.open and cookie is None:
        return render(request, "login.html", {"next": target, "error": LOGIN_REFUSED}, status=401)
    response = RedirectResponse(target, status_code=303)
    if cookie is not None:
        set_session(response, request, cookie)
    return response


@router.post("/logout")
async def logout(request: Request, session: Actor) -> Response:
    """Sign out: the browser drops its cookie, and the session is recorded as signed out until the cookie
    would have expired, so a copy of the cookie (kept by another tab, a proxy log, malware) stops working too."""
    signed = gate_of(request).session_of(session.cookie)
    if signed is not None:
        store = request.app.state.store
        remaining = max(1, signed.expires - int(time.time()) + 1)
        await store.redis.set(store.keys.console_logout(signed.session_id), "1", ex=remaining)
    response = RedirectResponse(f"{COOKIE_PATH}/login", status_code=303)
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")
    return response


async def on_redirect(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ConsoleRedirect)
    if request.headers.get("hx-request") and exc.cookie is None:  # htmx swaps fragments: send the page away
        return Response(status_code=401, headers={"HX-Redirect": exc.location})
    response = RedirectResponse(exc.location, status_code=exc.status)
    if exc.cookie:
        set_session(response, request, exc.cookie)
    return response


async def on_refused(request: Request, exc: Exception) -> Response:
    return render(request, "error.html", {"title": "Refused", "message": str(exc)}, status=403)
