"""The web console at ``/ui``: jobs with their live steps, batches, schedules, a submit form, settings.

Server-rendered (Jinja2) with a little JavaScript (vendored htmx for live counters and summaries,
an ``EventSource`` for a job's steps); no build step, no CDN. Mounted by the API (``mount``) and
guarded by the same token: see ``auth`` for the session cookie and CSRF rules. It imports the job
kernel and ``config`` only, never the agent or the browser layer.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from config import Settings
from daemon.console import access, pages
from daemon.console.auth import COOKIE_PATH, Gate
from daemon.console.rendering import HERE


def mount(app: FastAPI, settings: Settings) -> None:
    app.state.console_gate = Gate.for_token(settings.api_token)
    app.include_router(access.router)
    app.include_router(pages.router)
    app.mount(f"{COOKIE_PATH}/static", StaticFiles(directory=HERE / "static"), name="console-static")
    app.add_exception_handler(access.ConsoleRedirect, access.on_redirect)
    app.add_exception_handler(access.ConsoleRefused, access.on_refused)
    app.add_exception_handler(pages.NotFound, pages.on_not_found)
    app.add_exception_handler(pages.BadFilter, pages.on_bad_filter)
    app.add_exception_handler(pages.NotNow, pages.on_not_now)
    app.add_exception_handler(pages.BadInput, pages.on_bad_input)

    @app.get(COOKIE_PATH, include_in_schema=False)
    async def _ui_root() -> RedirectResponse:
        return RedirectResponse(f"{COOKIE_PATH}/", status_code=307)


__all__ = ["mount"]
