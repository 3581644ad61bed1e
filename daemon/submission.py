"""Submitting a whole batch: records in pipelined Lua calls, then every message in one bulk publish.

Shared by ``POST /v1/batches``, a schedule's runs (``workers.scheduled``) and ``bench.batch``.
"""

from __future__ import annotations

import asyncio
import logging

from config import Settings
from daemon.batches import BatchRecord, BatchStore
from daemon.store import JobStore
from workers.models import JobSpec

log = logging.getLogger("browserd.batches")


class QueueUnavailable(Exception):
    """The job records were written but their messages could not be published (the batch was cancelled)."""


async def submit_batch(store: JobStore, specs: list[JobSpec], settings: Settings, *,
                       schedule_id: str | None = None, webhook_url: str | None = None) -> BatchRecord:
    """Queue checked specs as one batch; returns its record (already counting its queued jobs)."""
    from daemon.api import max_steps_of
    from workers.bulk import Outgoing, encode_jobs, publish_encoded

    batches = BatchStore(store)
    steps = [max_steps_of(spec, settings) for spec in specs]
    batch_id, job_ids, created = await batches.create(specs, steps, schedule_id=schedule_id, webhook_url=webhook_url)
    outgoing = [
        Outgoing(job_id, spec.priority, spec.timeout or settings.job_timeout)
        for job_id, spec, new in zip(job_ids, specs, created)
        if new
    ]
    encoded = await asyncio.to_thread(encode_jobs, outgoing)
    try:
        await publish_encoded(store.redis, encoded)
    except Exception as exc:
        log.error("could not queue batch %s: %s", batch_id, exc)
        await batches.cancel(batch_id)
        raise QueueUnavailable(str(exc)) from exc
    record = await batches.get(batch_id)
    assert record is not None
    return record
