"""API request metrics (the ASGI middleware) and webhook delivery metrics, after real requests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY, generate_latest

from daemon.api.request_metrics import RequestMetrics
from tests.ops.exposition import Samples, parse, value


def now() -> Samples:
    return parse(generate_latest(REGISTRY).decode())


def grew(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def small_api() -> FastAPI:
    app = FastAPI()
    app.add_middleware(RequestMetrics)

    @app.get("/v1/things/{thing_id}")
    async def thing(thing_id: str) -> dict[str, str]:
        return {"id": thing_id}

    @app.post("/v1/boom")
    async def boom() -> None:
        raise RuntimeError("unhandled")

    return app


async def test_requests_are_counted_by_route_template_method_and_status_class() -> None:
    before = now()
    transport = httpx.ASGITransport(app=small_api(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        for n in range(3):
            assert (await client.get(f"/v1/things/{n}")).status_code == 200
        assert (await client.get("/no/such/path/123")).status_code == 404
        assert (await client.post("/v1/boom")).status_code == 500
        assert (await client.request("BREW", "/v1/things/1")).status_code == 405
    after = now()
    requests = "browserd_api_requests_total"
    assert grew(before, after, requests, route="/v1/things/{thing_id}", method="GET", status="2xx") == 3
    assert grew(before, after, requests, route="unmatched", method="GET", status="4xx") == 1
    assert grew(before, after, requests, route="/v1/boom", method="POST", status="5xx") == 1
    assert grew(before, after, requests, route="/v1/things/{thing_id}", method="other", status="4xx") == 1
    assert grew(before, after, "browserd_api_request_duration_seconds_count",
                route="/v1/things/{thing_id}", method="GET") == 3
    # no id, no path, no made-up method ever becomes a label value
    labels = {v for (n, ls), _ in after.items() if n.startswith("browserd_api_") for _, v in ls}
    assert not any(x in labels for x in ("0", "1", "2", "/no/such/path/123", "BREW"))


class _Receiver(BaseHTTPRequestHandler):
    answers: list[int] = []

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.answers.pop(0) if self.answers else 200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Receiver", (_Receiver,), {"answers": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    server.shutdown()
    server.server_close()


def test_webhook_attempts_are_counted_by_outcome(receiver: tuple[str, type[_Receiver]],
                                                 monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """The real task, run eagerly (Celery retries at once, without the backoff's wait)."""
    from config import get_settings
    from workers.jobs.webhooks.retries import retry_delays
    from workers.webhooks import deliver_webhook

    monkeypatch.setenv("BROWSERD_WEBHOOK_ALLOWED_NETWORKS", "127.0.0.1/32")  # the receiver is on loopback
    get_settings.cache_clear()
    request.addfinalizer(get_settings.cache_clear)  # the next test reads its own environment
    url, handler = receiver
    deliveries = "browserd_webhook_deliveries_total"
    before = now()
    handler.answers = [503, 429]  # two failed attempts, then a delivery
    assert deliver_webhook.apply((url, "job.finished", {"job": {"id": "x"}})).get() == 200
    handler.answers = [410]  # refused: final, not retried
    assert deliver_webhook.apply((url, "job.finished", {})).get() == 410
    after = now()
    assert grew(before, after, deliveries, outcome="retrying") == 2
    assert grew(before, after, deliveries, outcome="delivered") == 1
    assert grew(before, after, deliveries, outcome="refused") == 1
    assert grew(before, after, "browserd_webhook_delivery_seconds_count") == 4

    retries = len(retry_delays(get_settings().webhook_retry_seconds))
    handler.answers = [500] * (retries + 1)  # every attempt fails: the last one gives up
    result = deliver_webhook.apply((url, "job.finished", {}))
    assert result.failed()
    final = now()
    assert grew(after, final, deliveries, outcome="retrying") == retries
    assert grew(after, final, deliveries, outcome="given_up") == 1
