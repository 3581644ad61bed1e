"""Jinja2 templates of the console (autoescaped: job specs, answers and page text are untrusted)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from workers.jobs.artifacts.names import is_screenshot

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _when(value: datetime | None) -> str:
    if value is None:
        return "–"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _ago(value: datetime | None) -> str:
    if value is None:
        return "–"
    seconds = (datetime.now(UTC) - value).total_seconds()
    future = seconds < 0
    seconds = abs(seconds)
    amount = f"{seconds:.0f}s" if seconds < 120 else (f"{seconds / 60:.0f} min" if seconds < 7200
                                                       else f"{seconds / 3600:.1f} h")
    return f"in {amount}" if future else f"{amount} ago"


templates.env.filters.update(pretty=_pretty, when=_when, ago=_ago)
templates.env.tests.update(screenshot=is_screenshot)  # {% if name is screenshot %}: a step's, of any run


def render(request: Request, name: str, context: dict[str, Any], *, csrf: str = "", status: int = 200) -> HTMLResponse:
    headers = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
               "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
               "script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"}
    return templates.TemplateResponse(request, name, {"csrf": csrf, **context}, status_code=status, headers=headers)
