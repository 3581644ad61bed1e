"""The API in process for tenancy tests: the admin's token, a clean Redis, no worker (submissions
queue and stay queued)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from fastapi.testclient import TestClient

from config import load_settings
from daemon.api import create_app

ADMIN = "tenancy-admin-token"


@contextmanager
def api_client(redis_url: str, **settings: Any) -> Iterator[TestClient]:
    redis.Redis.from_url(redis_url).flushall()
    options = {"api_token": ADMIN, "allowed_networks": "127.0.0.1/32", "allow_private_networks": False, **settings}
    app = create_app(load_settings(redis_url=redis_url, **options))
    with TestClient(app, base_url="http://127.0.0.1:8080", follow_redirects=False) as c:
        c.headers["Authorization"] = f"Bearer {ADMIN}"
        yield c


def tenant(api: TestClient, name: str, **limits: Any) -> dict[str, str]:
    """A new tenant (the admin's call) and the headers its key sends."""
    made = api.post("/v1/tenants", json={"name": name, "limits": limits})
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['key']}"}
