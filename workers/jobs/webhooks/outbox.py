"""The outbox: webhooks a final transition owes, recorded in the same Lua call as the transition.

A job's final transition (``finalize`` in ``job_prelude.lua``) writes ``P outbox`` entries for its own webhook and,
when it was the batch's last job, the batch's; nothing is lost if the process that made the
transition dies a moment later. Whoever comes next runs the outbox: the process that made the
transition (``Finisher``), a redelivered message of the finished job, or the reconciler
(``run_due``). Running an entry publishes its webhook task with the entry's **delivery id**, then
removes the entry; a crash in between publishes it twice, and the webhook task's ``DeliveryGuard``
(``guard``) sends each delivery id once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from workers.jobs.batches.store import BatchStore
from workers.jobs.model.result import JobResult
from workers.jobs.queue.publish import send_webhook
from workers.jobs.schedules.change_store import CHANGES_KIND, ChangeFeed
from workers.jobs.store.codec import JobEnd
from workers.jobs.store.human import HUMAN_KIND
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.outbox")

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
        [end] = await self.store.ends([job_id])
        runs, batch = (end.runs, end.batch) if end is not None else (1, None)
        ids = [job_delivery(job_id, runs)] + ([batch_delivery(batch)] if batch else [])
        return await self.run(ids, result)

    async def run_due(self, older_than: float, now: float) -> int:
        """Entries owed for more than ``older_than`` seconds (their owner died or failed to publish)."""
        ids = await self.redis.zrangebyscore(self.keys.outbox_due, "-inf", now - older_than, start=0, num=DUE_CHUNK)
        return await self.run(ids)

    async def _payload(self, owed: Owed, result: JobResult | None) -> dict[str, Any] | None:
        if owed.kind == "batch":
            record = await BatchStore(self.store).get(owed.ref)
            return {"batch": record.model_dump(mode="json")} if record else None
        if owed.kind == CHANGES_KIND:
            schedule_id, _, run = owed.ref.partition(":")
            changes = await ChangeFeed(self.store).entry(schedule_id, run)
            return {"changes": changes.model_dump(mode="json")} if changes else None
        if owed.kind == HUMAN_KIND:
            return await self._waiting(owed.ref)
        [end] = await self.store.ends([owed.ref], with_result=result is None)
        return {"job": job_payload(end, result)} if end is not None else None


    async def _waiting(self, job_id: str) -> dict[str, Any] | None:
        """The ``job.waiting_for_human`` webhook's body: the job, why it waits and until when (a job
        handed back or finished before the webhook went out is still reported: the receiver sees
        ``waiting_for_human`` null)."""
        record = await self.store.get(job_id)
        if record is None:
            return None
        until = record.human_until.isoformat() if record.human_until else None
        return {"job": {"id": record.id, "status": record.state.value, "waiting_for_human": record.waiting_for_human,
                        "human_until": until, "tenant": record.tenant, "labels": record.labels}}


def job_delivery(job_id: str, run: int) -> str:
    """The delivery id of a job's ``job.finished`` webhook; each follow-up run has its own (as ``finalize``
    in ``job_prelude.lua``)."""
    return f"job.finished:{job_id}" if run <= 1 else f"job.finished:{job_id}:run{run}"


def batch_delivery(batch_id: str, finish: int = 1) -> str:
    """The delivery id of a batch's ``batch.finished`` webhook; a batch reopened by a crawl's resume
    finishes again, with a delivery of its own (as ``complete_batch`` in ``job_prelude.lua``)."""
    return f"batch.finished:{batch_id}" if finish <= 1 else f"batch.finished:{batch_id}:finish{finish}"


def job_payload(end: JobEnd, result: JobResult | None) -> dict[str, Any]:
    """The ``job.finished`` webhook's body; the final answer and data from ``result`` when the process
    has it at hand, else from the record (``end`` read with its result)."""
    if result is not None:
        parsed = result.model_dump(mode="json", include={"final_answer", "data"})
        final_answer, data, cost = parsed.get("final_answer"), parsed.get("data"), result.cost_usd
    else:
        final_answer, data, cost = end.head.final_answer, end.head.data, end.head.cost_usd
    return {
        "id": end.job_id,
        "status": end.state.value,
        "category": end.category.value if end.category else None,
        "error": end.error,
        "final_answer": final_answer,
        "data": data,
        "cost_usd": cost,
        "batch": end.batch,
    }
