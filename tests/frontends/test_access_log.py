"""The API's access log (issue 25, item 8): one INFO line per request, 401, 404 and 422 included,
with structured fields (method, route template, status, duration, tenant, the route's ids) and never
the token. It used to write none unless BROWSERD_LOG_LEVEL was DEBUG (uvicorn's own access log)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from config import load_settings, setup_logging
from daemon.api import create_app

TOKEN = "access-log-admin-token-7f3e"


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    app = create_app(load_settings(redis_url=redis_url, api_token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def json_logs() -> Iterator[Any]:
    """browserd's JSON log lines, as a deployment with BROWSERD_LOG_JSON writes them (to stderr;
    here into a buffer): ``lines()`` returns those written since its last call."""
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    setup_logging("INFO", json_lines=True)
    stream = io.StringIO()
    root.handlers[0].setStream(stream)  # type: ignore[attr-defined]

    def lines() -> list[dict[str, Any]]:
        text = stream.getvalue()
        stream.seek(0)
        stream.truncate()
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    try:
        yield lines
    finally:
        root.handlers[:], root.level = saved, level


def access(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line["logger"] == "browserd.api.access"]


def test_every_request_writes_one_structured_line_without_the_token(api: TestClient, json_logs: Any) -> None:
    json_logs()
    job = "0" * 32
    assert api.get(f"/v1/jobs/{job}").status_code == 401
    assert api.get(f"/v1/jobs/{job}?token={TOKEN}", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404
    assert api.post("/v1/jobs", json={"task": ""}, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 422
    assert api.get("/no/such/route").status_code == 404
    written = json_logs()
    lines = access(written)
    assert [(line["method"], line["route"], line["status"]) for line in lines] == [
        ("GET", "/v1/jobs/{job_id}", 401),
        ("GET", "/v1/jobs/{job_id}", 404),
        ("POST", "/v1/jobs", 422),
        ("GET", "unmatched", 404),
    ]
    assert all(line["level"] == "info" and line["duration_ms"] >= 0 for line in lines)
    assert lines[0]["job_id"] == job and "tenant" not in lines[0]  # no bearer: nobody to name
    assert lines[1]["job_id"] == job and lines[1]["tenant"] == "operator"
    assert lines[2]["tenant"] == "operator" and "job_id" not in lines[2]
    server = [line for line in written if not line["logger"].startswith("httpx")]  # not the test's own client
    assert TOKEN not in json.dumps(server)  # neither the header nor the query string is written
