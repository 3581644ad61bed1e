"""The console's app in process for HTTP tests: its token, the origin its requests come from, a
client, and the login a person does through the form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from config import load_settings
from daemon.api import create_app

TOKEN = "console-test-token"
ORIGIN = "http://127.0.0.1:8080"


@contextmanager
def console_client(redis_url: str, **settings: Any) -> Iterator[TestClient]:
    app = create_app(load_settings(redis_url=redis_url, api_token=TOKEN, **settings))
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as c:
        yield c


def login(c: TestClient, next_page: str = "/ui/submit") -> str:
    """Log in through the form; returns the page's CSRF token."""
    assert c.post("/ui/login", data={"token": TOKEN, "next": next_page}).status_code == 303
    return re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/ui/submit").text).group(1)
