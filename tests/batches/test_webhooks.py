"""Webhooks: delivered after a failed attempt (Celery retry with backoff), signed (Standard Webhooks),
never to a private address the operator did not open, and never redirected."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.batches.conftest import WEBHOOK_SECRET
from tests.batches.helpers import quick_script, submit_batch, wait_completed
from tests.queue.stack import Stack, wait_until
from tests.support.servers import StaticServer
from workers.webhooks import EVENT_HEADER, ID_HEADER, SIGNATURE_HEADER, verify


class Receiver:
    """Answers 503 to the first POST of each event, 200 after; keeps every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    event = self.headers[EVENT_HEADER]
                    first = not any(h[EVENT_HEADER] == event for h, _ in receiver.requests)
                    receiver.requests.append((dict(self.headers), body))
                self.send_response(503 if first else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def delivered(self, event: str) -> list[dict[str, Any]]:
        with self.lock:
            return [{"headers": h, "body": b} for h, b in self.requests if h[EVENT_HEADER] == event]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield r
    finally:
        r.httpd.shutdown()
        r.httpd.server_close()
        with contextlib.suppress(RuntimeError):
            thread.join(5)


def test_job_and_batch_webhooks_are_retried_and_signed(ops: Stack, site: StaticServer, receiver: Receiver) -> None:
    spec = {"script": quick_script(site.url("/cdp/basic.html"), 1), "webhook_url": receiver.url}
    status, record = submit_batch(ops, {"jobs": [spec, {"script": quick_script(site.url("/cdp/basic.html"), 2)}],
                                        "webhook_url": receiver.url})
    assert status == 201
    wait_completed(ops, record["id"], timeout=120)
    for event in ("job.finished", "batch.finished"):
        wait_until(lambda e=event: len(receiver.delivered(e)) >= 2, 60, f"{event} to be retried and delivered")

    job_posts = receiver.delivered("job.finished")
    assert len(job_posts) == 2  # one failed attempt (503), one delivery; only the first job had a webhook
    for post in job_posts + receiver.delivered("batch.finished"):
        headers, body = post["headers"], post["body"]
        assert headers[SIGNATURE_HEADER].startswith("v1,")
        assert verify(WEBHOOK_SECRET, headers, body)
        assert not verify("another-secret", headers, body)
        assert json.loads(body)["delivery_id"] == headers[ID_HEADER]
    # a retry is the same delivery: receivers dedupe on its id
    assert job_posts[0]["headers"][ID_HEADER] == job_posts[1]["headers"][ID_HEADER]
    job = json.loads(job_posts[-1]["body"])
    assert job["event"] == "job.finished"
    assert job["job"]["status"] == "succeeded" and job["job"]["final_answer"] == "item 1"
    assert job["job"]["batch"] == record["id"]
    done = json.loads(receiver.delivered("batch.finished")[-1]["body"])
    assert done["batch"]["id"] == record["id"] and done["batch"]["counts"]["succeeded"] == 2
    assert done["batch"]["state"] == "completed"


class Redirector:
    """Answers every POST with 302 to its own /internal; records every request (method, path)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        redirector = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                redirector.seen.append((self.command, self.path))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(302 if self.path == "/hook" else 200)
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/internal")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _any  # noqa: N815

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"


def test_a_redirect_is_a_failed_delivery_not_a_get_elsewhere(ops: Stack, site: StaticServer) -> None:
    redirector = Redirector()
    thread = threading.Thread(target=redirector.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        job = ops.submit({"script": quick_script(site.url("/cdp/basic.html"), 1), "webhook_url": redirector.url})
        ops.wait_state(job["id"], {"succeeded"}, timeout=120)
        wait_until(lambda: redirector.seen, 60, "the webhook POST")
        wait_until(lambda: "answered a redirect (HTTP 302)" in "".join(w.log(200_000) for w in ops.workers), 30,
                   "the worker to log the refused redirect")
        assert redirector.seen == [("POST", "/hook")]  # no GET /internal, and no retry
    finally:
        redirector.httpd.shutdown()
        redirector.httpd.server_close()


@pytest.mark.parametrize("url", [
    "http://127.0.0.2:9/hook", "http://[::1]:9/hook",
    "http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/", "http://0.0.0.0:9/",
    "http://[::ffff:127.0.0.2]:9/", "http://[fd00::1]/",
])
def test_private_receivers_are_refused_at_submission(ops: Stack, url: str) -> None:
    """Judged on the literal address, so nothing is ever sent (127.0.0.1/32 alone is open here, so
    localhost names are tried in test_webhook_rules)."""
    status, err = ops.call("POST", "/v1/jobs", {"script": [{"done": {"text": "x"}}], "webhook_url": url})
    assert status == 422 and [f["field"] for f in err["fields"]] == ["webhook_url"], err
    assert "BROWSERD_WEBHOOK_ALLOWED_NETWORKS" in err["message"]
    status, err = ops.call("POST", "/v1/batches", {"jobs": [{"script": [{"done": {"text": "x"}}]}], "webhook_url": url})
    assert status == 422 and [f["field"] for f in err["fields"]] == ["webhook_url"], err
