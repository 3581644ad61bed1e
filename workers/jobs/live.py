"""A running job's live view: the console says someone watches, the worker streams frames.

The console renews ``watched`` every few seconds while a viewer's page is open; the worker running
the job polls it and runs Chromium's screencast only while it is set, publishing frames on the
job's ``screen`` channel (pub/sub: frames are never stored). Nobody watching costs one ``EXISTS``
per running job per second.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from workers.jobs.store.jobs import JobStore

WATCH_TTL = 10  # seconds a viewer's interest lasts unless renewed
RENEW_SECONDS = 3.0  # how often an open viewer renews it
FRAME_WAIT = 1.0  # seconds a viewer waits for a frame before it checks on the job


async def watch(store: JobStore, job_id: str) -> None:
    await store.redis.set(store.keys.watched(job_id), "1", ex=WATCH_TTL)


async def watched(store: JobStore, job_id: str) -> bool:
    return bool(await store.redis.exists(store.keys.watched(job_id)))


async def publish_frame(store: JobStore, job_id: str, jpeg_base64: str) -> None:
    await store.redis.publish(store.keys.screen(job_id), jpeg_base64)


async def frames(store: JobStore, job_id: str) -> AsyncIterator[str | None]:
    """The job's frames as they come; ``None`` after ``FRAME_WAIT`` seconds without one (a chance to
    renew ``watch`` and to stop)."""
    pubsub = store.redis.pubsub()
    await pubsub.subscribe(store.keys.screen(job_id))
    try:
        while True:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=FRAME_WAIT)
            yield message["data"] if message else None
    finally:
        await pubsub.unsubscribe()
        await pubsub.aclose()
