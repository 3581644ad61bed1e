"""Cancelling a job or a batch, and what must follow when a queued job is cancelled outright.

One path for every caller (the API, the web console, the MCP server): a queued job that is
cancelled never reaches a worker, so the canceller does the after-finish work (metrics, webhook,
batch completion) that a worker would otherwise do.
"""

from __future__ import annotations

import asyncio

from workers.jobs.batches.store import BatchStore
from workers.jobs.lifecycle.finishing import Finisher
from workers.jobs.metrics import observe_job_finished
from workers.jobs.model.status import JobStatus
from workers.jobs.queue.results import mark_revoked
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.outcomes import CancelOutcome, CancelResult


async def cancel_job(store: JobStore, job_id: str) -> CancelResult:
    """Cancel one job: ``cancelled`` (it was queued; it never starts), ``requested`` (it is running and
    stops before its next action), ``session_closed`` (it had finished; its kept session is closed),
    ``finished`` (too late; ``state`` says how it ended) or ``missing``."""
    done = await store.cancel(job_id)
    if done.outcome is CancelOutcome.cancelled:  # it never started: no worker will count or report it
        await Finisher(store).finished(job_id)
        await asyncio.to_thread(mark_revoked, [job_id], "cancelled while queued")  # Celery's view: REVOKED
    return done


async def cancel_batch(store: JobStore, batch_id: str, tenant: str | None = None) -> int:
    """Cancel every unfinished job of an existing batch (``tenant``'s: its metrics say so); returns
    how many were queued (cancelled at once)."""
    cancelled = await BatchStore(store).cancel(batch_id)
    await settle_cancelled(store, batch_id, cancelled, tenant)
    return len(cancelled)


async def settle_cancelled(store: JobStore, batch_id: str, cancelled: list[str], tenant: str | None = None) -> None:
    """After ``BatchStore.cancel``: count the queued jobs it cancelled outright, send what their
    transitions owe, tell Celery (a crawl's cancel keeps its frontier in between)."""
    for _ in cancelled:
        observe_job_finished(JobStatus.cancelled, tenant=tenant)
    await Finisher(store).batch_settled(batch_id, cancelled)
    await asyncio.to_thread(mark_revoked, cancelled, "cancelled while queued")
