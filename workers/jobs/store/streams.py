"""A job's event stream as server-sent events text: one generator for every HTTP edge that serves it
(the API's ``/v1/jobs/{id}/events`` and the web console's live step view).

A job that keeps its session may run again after a final state (a follow-up): the stream ends at
a final state only when nothing came after it and the job is still final."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from workers.jobs.model.record import EventType, JobEvent
from workers.jobs.store.jobs import JobStore

SSE_BLOCK_MS = 5000  # longest silence on an event stream before a keep-alive comment (< store.SOCKET_TIMEOUT)
REDIS_RETRY_SECONDS = 1.0

log = logging.getLogger("browserd.api")
END = f"event: {EventType.end}\ndata: {{}}\n\n"


def sse_event(event: JobEvent) -> str:
    return f"id: {event.id}\nevent: {event.type}\ndata: {json.dumps(event.data, separators=(',', ':'))}\n\n"


async def sse(store: JobStore, job_id: str, after: str, *, follow: bool,
              gone: Callable[[], Awaitable[bool]]) -> AsyncIterator[str]:
    """Events after ``after``; with ``follow``, live until the job ends or ``gone()`` (the client left)."""
    while True:
        try:
            batch = await store.events(job_id, after, block_ms=SSE_BLOCK_MS if follow else None)
        except (RedisConnectionError, RedisTimeoutError) as exc:  # Redis away: the client waits, we retry
            log.warning("event stream of job %s: %s; retrying", job_id, exc)
            yield ": keep-alive (redis unavailable)\n\n"
            await asyncio.sleep(REDIS_RETRY_SECONDS)
            continue
        for event in batch:
            yield sse_event(event)
            after = event.id
            if event.final and await _last_run_ended(store, job_id, after):
                yield END
                return
        if batch:
            continue
        record = await store.get(job_id)
        if not follow or record is None or record.state.finished or await gone():
            yield END
            return
        yield ": keep-alive\n\n"


async def _last_run_ended(store: JobStore, job_id: str, after: str) -> bool:
    """After a final state event: whether the job stays final (no follow-up run started after it)."""
    if await store.events(job_id, after, count=1):
        return False
    record = await store.get(job_id)
    return record is None or record.state.finished
