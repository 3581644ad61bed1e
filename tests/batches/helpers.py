"""Calls the batch tests share: submit, wait for completion, read results, scrape metrics."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.queue.stack import TOKEN, Stack, wait_until


def submit_batch(s: Stack, body: Any, *, jsonl: bool = False) -> tuple[int, Any]:
    if jsonl:
        raw = ("\n".join(json.dumps(x) for x in body) + "\n").encode()
        return s.call("POST", "/v1/batches", raw=raw)
    return s.call("POST", "/v1/batches", body)


def batch(s: Stack, batch_id: str, kind: str = "batches") -> dict[str, Any]:
    """The record at ``/v1/{kind}/{id}`` (a batch, or a crawl: ``kind="crawls"``)."""
    status, record = s.call("GET", f"/v1/{kind}/{batch_id}")
    assert status == 200, (status, record)
    return record


def wait_completed(s: Stack, batch_id: str, timeout: float = 300, kind: str = "batches") -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        record = batch(s, batch_id, kind)
        return record if record["state"] == "completed" else None

    return wait_until(done, timeout, f"{kind} {batch_id} to complete", interval=0.5)


def results(s: Stack, batch_id: str, kind: str = "batches") -> list[dict[str, Any]]:
    req = urllib.request.Request(f"{s.url}/v1/{kind}/{batch_id}/results", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.headers["Content-Type"].startswith("application/x-ndjson")
        return [json.loads(line) for line in resp.read().decode().splitlines()]


def quick_script(url: str, n: int, waits: int = 0) -> list[dict[str, Any]]:
    return [{"go_to_url": {"url": url}}, *[{"wait": {"seconds": 1}}] * waits, {"done": {"text": f"item {n}"}}]


def worker_metrics_url(s: Stack) -> str:
    """The worker's metrics endpoint, from the port it reports in its heartbeat record."""
    keys = s.redis.keys("browserd:worker:*")
    ports = [s.redis.hget(k, "metrics_port") for k in keys]
    port = next(p for p in ports if p)
    return f"http://127.0.0.1:{port}/metrics"
