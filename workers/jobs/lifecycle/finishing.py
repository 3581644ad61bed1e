"""What follows a job's final transition: metrics, and running the outbox that transition filled.

The transition itself (``finalize`` in ``job_prelude.lua``) already completed the job's batch and
recorded the webhooks owed, atomically; so what is left here is safe to lose: metrics (observed by
the process whose transition won, once), and publishing the outbox, which the next delivery of the
job or the reconciler does again if this process dies first. Nothing here may fail the job: errors are
logged and swallowed.
"""

from __future__ import annotations

import logging

import workers.jobs.metrics as metrics
from workers.jobs.batches.store import BatchStore
from workers.jobs.model.result import JobResult
from workers.jobs.schedules.change_store import ChangeFeed
from workers.jobs.store.codec import JobEnd
from workers.jobs.store.jobs import JobStore
from workers.jobs.webhooks.outbox import Outbox, batch_delivery

log = logging.getLogger("browserd.finishing")


class Finisher:
    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.outbox = Outbox(store)

    async def finished(self, job_id: str, result: JobResult | None = None) -> None:
        """After this process's transition finished the job (``result`` when it has it at hand)."""
        end: JobEnd | None = None
        try:
            [end] = await self.store.ends([job_id])
            if end is not None:
                _observe(end)
        except Exception:
            log.exception("metrics of finished job %s not observed", job_id)
            end = None
        if end is not None and end.batch:
            await self.batch_counted(end.batch)
        await self.settle(job_id, result)

    async def settle(self, job_id: str, result: JobResult | None = None) -> None:
        """Publish what the job's final transition owes, if that was not done yet (any process may)."""
        try:
            await self.outbox.run_for_job(job_id, result)
        except Exception as exc:  # the reconciler publishes it later
            log.warning("webhooks of job %s left in the outbox: %s: %s", job_id, type(exc).__name__, exc)

    async def batch_settled(self, batch_id: str, job_ids: list[str]) -> None:
        """After cancelling a batch: the webhooks its jobs' transitions owe, and the batch's."""
        await self.batch_counted(batch_id)
        try:
            await self.outbox.run([f"job.finished:{j}" for j in job_ids] + [batch_delivery(batch_id)])
        except Exception as exc:
            log.warning("webhooks of batch %s left in the outbox: %s: %s", batch_id, type(exc).__name__, exc)

    async def batch_counted(self, batch_id: str) -> None:
        """Count a completed batch in ``browserd_batches_completed_total`` once: the Lua transition
        completed it, and the first process to see that claims the count (``HSETNX counted``); that
        process also records a scheduled run's changes."""
        try:
            finish = await BatchStore(self.store).claim_completion_count(batch_id)
            if not finish:
                return
            metrics.observe_batch_completed()
        except Exception:
            log.exception("completion of batch %s not counted", batch_id)
            return
        if finish > 1:  # a resumed crawl finished again: its webhook's delivery is not the one callers name
            await self.settle_batch(batch_id, finish)
        await self.changes(batch_id)

    async def settle_batch(self, batch_id: str, finish: int) -> None:
        try:
            await self.outbox.run([batch_delivery(batch_id, finish)])
        except Exception as exc:  # the reconciler publishes it later
            log.warning("webhook of batch %s left in the outbox: %s: %s", batch_id, type(exc).__name__, exc)

    async def changes(self, batch_id: str) -> None:
        """A schedule's run completed: compare it with the previous run (the change feed), and send
        its ``items.changed`` webhook when something changed."""
        try:
            delivery = await ChangeFeed(self.store).record(batch_id)
            if delivery is not None:
                await self.outbox.run([delivery])
        except Exception:
            log.exception("changes of run %s not recorded", batch_id)


def _observe(end: JobEnd) -> None:
    started, created, finished = end.started_at, end.created_at, end.finished_at
    duration = finished - started if finished and started else None
    wait = started - created if started and created else None
    metrics.observe_job_finished(end.state, end.category, duration=duration, queue_wait=wait, tenant=end.tenant)
