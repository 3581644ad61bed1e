"""The API client's batch and schedule calls (standard library only, like ``daemon.client``)."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

from daemon.client import STREAM_READ_TIMEOUT, ApiClient


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class OpsClient(ApiClient):
    def submit_batch(self, body: bytes) -> dict[str, Any]:
        """POST a batch body as is (JSON or JSONL)."""
        req = self._request("POST", "/v1/batches", headers={"Content-Type": "application/x-ndjson"})
        req.data = body
        with self._open(req, max(self.timeout, 120.0)) as resp:
            return json.loads(resp.read())

    def batch(self, batch_id: str) -> dict[str, Any]:
        return self.call("GET", f"/v1/batches/{_q(batch_id)}")

    def cancel_batch(self, batch_id: str) -> dict[str, Any]:
        return self.call("POST", f"/v1/batches/{_q(batch_id)}/cancel")

    def results(self, batch_id: str) -> Iterator[bytes]:
        """The batch's JSONL results, line by line (each ends with a newline)."""
        req = self._request("GET", f"/v1/batches/{_q(batch_id)}/results")
        with self._open(req, STREAM_READ_TIMEOUT) as resp:
            yield from resp

    def schedules(self) -> list[dict[str, Any]]:
        return self.call("GET", "/v1/schedules")

    def create_schedule(self, spec: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "/v1/schedules", spec)

    def schedule_action(self, schedule_id: str, action: str) -> Any:
        """pause | resume | run (POST), runs (GET), delete (DELETE)."""
        path = f"/v1/schedules/{_q(schedule_id)}"
        if action == "delete":
            return self.call("DELETE", path)
        if action == "runs":
            return self.call("GET", path + "/runs")
        return self.call("POST", f"{path}/{action}")
