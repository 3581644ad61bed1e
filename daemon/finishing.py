"""What follows a job's final transition: metrics, its webhook, and its batch's completion.

Called by whoever made the transition (the worker that finished or lost a job, the API that
cancelled a queued one), and only when that transition won, so each job is counted once and its
webhook queued once. Nothing here may fail the job: errors are logged and swallowed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from daemon import metrics
from daemon.batches import BatchStore
from daemon.store import JobStore
from workers.models import JobResult

log = logging.getLogger("browserd.finishing")

FIELDS = ("batch", "spec", "created_at", "started_at", "finished_at", "state", "category", "error", "result")


class Finisher:
    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.batches = BatchStore(store)

    async def finished(self, job_id: str, result: JobResult | None = None) -> None:
        """After a job reached its final state (``result`` when the caller has it at hand)."""
        try:
            await self._finished(job_id, result)
        except Exception:
            log.exception("after-finish work for job %s failed", job_id)

    async def _finished(self, job_id: str, result: JobResult | None) -> None:
        values = await self.store.redis.hmget(self.store.keys.job(job_id), FIELDS)
        raw = dict(zip(FIELDS, values))
        if not raw["state"]:
            return
        _observe(raw)
        spec = json.loads(raw["spec"] or "{}")
        if spec.get("webhook_url"):
            await send(spec["webhook_url"], "job.finished", {"job": job_payload(job_id, raw, result)})
        if raw["batch"]:
            await self.batch_progressed(raw["batch"])

    async def batch_progressed(self, batch_id: str) -> None:
        """If the batch just completed, send its webhook (once: ``complete_if_done`` decides)."""
        if not await self.batches.complete_if_done(batch_id):
            return
        record = await self.batches.get(batch_id)
        if record is not None and record.webhook_url:
            await send(record.webhook_url, "batch.finished", {"batch": record.model_dump(mode="json")})


def _observe(raw: dict[str, Any]) -> None:
    started, created, finished = (float(raw[k]) if raw[k] else None for k in ("started_at", "created_at", "finished_at"))
    duration = finished - started if finished and started else None
    wait = started - created if started and created else None
    metrics.observe_job_finished(raw["state"], raw["category"] or None, duration=duration, queue_wait=wait)


def job_payload(job_id: str, raw: dict[str, Any], result: JobResult | None) -> dict[str, Any]:
    parsed = result.model_dump(mode="json") if result else json.loads(raw["result"] or "{}")
    return {
        "id": job_id,
        "status": raw["state"],
        "category": raw["category"] or None,
        "error": raw["error"] or None,
        "final_answer": parsed.get("final_answer"),
        "data": parsed.get("data"),
        "batch": raw["batch"] or None,
    }


async def send(url: str, event: str, payload: dict[str, Any]) -> None:
    from workers.webhooks import send_webhook

    await asyncio.to_thread(send_webhook, url, event, payload)
