"""``browserd.run_schedule``: what beat sends when a schedule is due; it starts one run (a batch)."""

from __future__ import annotations

import asyncio
import logging

from config import get_settings
from workers.jobs.queue.app import app
from workers.jobs.queue.names import RUN_SCHEDULE
from workers.jobs.schedules.store import ScheduleStore
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.schedules")


@app.task(name=RUN_SCHEDULE, ignore_result=True)
def run_schedule(schedule_id: str) -> str | None:
    """Runs on a worker's task thread with its own short-lived loop and Redis connection."""
    return asyncio.run(_fire(schedule_id))


async def _fire(schedule_id: str) -> str | None:
    settings = get_settings()
    store = JobStore(connect(settings.redis_url or ""), result_ttl=settings.result_ttl)
    try:
        record = await ScheduleStore(store).fire(schedule_id, settings)
    finally:
        await store.redis.aclose()
    if record is not None:
        log.info("schedule %s: run %s queued (%d jobs)", schedule_id, record.id, record.total)
    return record.id if record else None
