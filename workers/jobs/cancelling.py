"""Cancelling a job or a batch, and what must follow when a queued job is cancelled outright.

One path for every caller (the API, the web console, the MCP server): a queued job that is
cancelled never reaches a worker, so the canceller does the after-finish work (metrics, webhook,
batch completion) that a worker would otherwise do.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.jobs.batches import BatchStore
from workers.jobs.finishing import Finisher
from workers.jobs.metrics import observe_job_finished
from workers.jobs.store import JobStore


@dataclass(frozen=True)
class CancelOutcome:
    """``outcome``: ``cancelled`` (it was queued; it never starts), ``requested`` (it is running and
    stops before its next action), ``session_closed`` (it had finished; its kept session is closed),
    ``finished`` (too late; ``state`` says how it ended) or ``missing``."""

    outcome: str
    state: str


async def cancel_job(store: JobStore, job_id: str) -> CancelOutcome:
    outcome, state = await store.cancel(job_id)
    if outcome == "cancelled":  # it never started: no worker will count or report it
        await Finisher(store).finished(job_id)
    return CancelOutcome(outcome, state)


async def cancel_batch(store: JobStore, batch_id: str) -> int:
    """Cancel every unfinished job of an existing batch; returns how many were queued (cancelled at once)."""
    cancelled = await BatchStore(store).cancel(batch_id)
    for _ in cancelled:
        observe_job_finished("cancelled")
    await Finisher(store).batch_settled(batch_id, cancelled)
    return len(cancelled)
