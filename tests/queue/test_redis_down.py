"""With Redis stopped, a real ``browserd serve`` answers 503 at once: a submit and the readiness
probe must not ride out a Redis restart the way a worker does (issue 29: ~16 s for ``POST /v1/jobs``,
no answer within 10 s for ``/readyz``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.queue.stack import TOKEN, stack

pytestmark = pytest.mark.e2e

# A client's patience: far above the API's bound (about 2 s) so a loaded machine passes, below the
# old behaviour (16 s and more) so it fails there.
PATIENCE = 8.0


def ask(url: str, *, body: object = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    req.add_header("Content-Type", "application/json")
    req.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=PATIENCE) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_submit_and_readyz_answer_503_when_redis_is_stopped() -> None:
    with stack() as s:
        s.redis_server.halt()
        status, err = ask(s.url + "/v1/jobs", body={"task": "look", "start_url": "https://example.com/"})
        assert status == 503 and err["error"] == "unavailable" and "BROWSERD_REDIS_URL" in err["message"]
        status, err = ask(s.url + "/readyz")
        assert status == 503 and err["error"] == "not_ready" and "Redis is unreachable" in err["message"]
