"""The outbox: webhooks a final transition owes, recorded in the same Lua call as the transition.

A job's final transition (``lua.finalize``) writes ``P outbox`` entries for its own webhook and,
when it was the batch's last job, the batch's; nothing is lost if the process that made the
transition dies a moment later. Whoever comes next runs the outbox: the process that made the
transition (``Finisher``), a redelivered message of the finished job, or the reconciler
(``run_due``). Running an entry publishes its webhook task with the entry's **delivery id**, then
removes the entry; a crash in between publishes it twice, and ``DeliveryGuard`` in the webhook
task sends each delivery id once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

import redis

from workers.jobs.batches import BatchStore
from workers.jobs.keys import Keys
from workers.jobs.models import JobResult
from workers.jobs.queue import send_webhook
from workers.jobs.store import JobStore

log = logging.getLogger("browserd.outbox")

FIELDS = ("batch", "spec", "created_at", "started_at", "finished_at", "state", "category", "error", "result")
DUE_CHUNK = 200  # entries run per reconciler pass and round trip


@dataclass(frozen=True)
class Owed:
    """One webhook owed: ``kind`` (job | batch) and ``ref`` (its id) say what to report."""

    delivery_id: str
    url: str
    event: str
    kind: str
    ref: str


class Outbox:
    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.keys = store.keys
        self.redis = store.redis

    async def run(self, delivery_ids: list[str], result: JobResult | None = None) -> int:
        """Publish the entries among ``delivery_ids`` that are still owed; returns how many."""
        if not delivery_ids:
            return 0
        raw = await self.redis.hmget(self.keys.outbox, delivery_ids)
        sent = 0
        for delivery_id, entry in zip(delivery_ids, raw):
            if entry is None:
                continue
            owed = Owed(delivery_id=delivery_id, **json.loads(entry))
            payload = await self._payload(owed, result)
            if payload is not None:
                await asyncio.to_thread(send_webhook, owed.url, owed.event, payload, owed.delivery_id)
                sent += 1
            else:
                log.warning("webhook %s dropped: its %s %s expired", delivery_id, owed.kind, owed.ref)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hdel(self.keys.outbox, delivery_id)
                pipe.zrem(self.keys.outbox_due, delivery_id)
                await pipe.execute()
        return sent

    async def run_for_job(self, job_id: str, result: JobResult | None = None) -> int:
        """What the job's final transition owes: its webhook, and its batch's if it completed it."""
        batch, runs = await self.redis.hmget(self.keys.job(job_id), ["batch", "runs"])
        ids = [job_delivery(job_id, int(runs or 1))] + ([f"batch.finished:{batch}"] if batch else [])
        return await self.run(ids, result)

    async def run_due(self, older_than: float, now: float) -> int:
        """Entries owed for more than ``older_than`` seconds (their owner died or failed to publish)."""
        ids = await self.redis.zrangebyscore(self.keys.outbox_due, "-inf", now - older_than, start=0, num=DUE_CHUNK)
        return await self.run(ids)

    async def _payload(self, owed: Owed, result: JobResult | None) -> dict[str, Any] | None:
        if owed.kind == "batch":
            record = await BatchStore(self.store).get(owed.ref)
            return {"batch": record.model_dump(mode="json")} if record else None
        values = await self.redis.hmget(self.keys.job(owed.ref), FIELDS)
        raw = dict(zip(FIELDS, values))
        return {"job": job_payload(owed.ref, raw, result)} if raw["state"] else None


def job_delivery(job_id: str, run: int) -> str:
    """The delivery id of a job's ``job.finished`` webhook; each follow-up run has its own (as ``lua.finalize``)."""
    return f"job.finished:{job_id}" if run <= 1 else f"job.finished:{job_id}:run{run}"


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


class DeliveryGuard:
    """Sends each delivery id once (the webhook task's side of the outbox; blocking Redis calls).

    ``sent`` is marked after the receiver answered (kept ``ttl`` seconds); ``claim`` keeps two
    copies of one delivery from posting at the same moment.
    """

    def __init__(self, client: redis.Redis, keys: Keys, ttl: int) -> None:
        self.redis = client
        self.keys = keys
        self.ttl = ttl

    def sent(self, delivery_id: str) -> bool:
        return bool(self.redis.exists(self.keys.webhook_sent(delivery_id)))

    def claim(self, delivery_id: str, seconds: float) -> bool:
        return bool(self.redis.set(self.keys.webhook_trying(delivery_id), "1", nx=True, ex=max(1, int(seconds))))

    def done(self, delivery_id: str) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(self.keys.webhook_sent(delivery_id), "sent", ex=self.ttl)
            pipe.delete(self.keys.webhook_trying(delivery_id))
            pipe.execute()

    def release(self, delivery_id: str) -> None:
        self.redis.delete(self.keys.webhook_trying(delivery_id))
