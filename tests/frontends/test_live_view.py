"""The worker's side of the live view, on a real page and a real redis-server: frames flow only while
someone watches, and stop soon after the last viewer leaves."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator

import pytest_asyncio

from cdp import BrowserPool
from tests.support.redis_server import RedisServer
from tests.support.servers import StaticServer
from workers.jobs.ids import new_id
from workers.jobs.live import watch
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.pipeline.features.live_view import LiveView


@pytest_asyncio.fixture
async def store() -> AsyncIterator[JobStore]:
    server = RedisServer().start()
    jobs = JobStore(connect(server.url), result_ttl=60)
    try:
        yield jobs
    finally:
        await jobs.redis.aclose()
        server.stop()


async def frames_within(store: JobStore, job_id: str, seconds: float) -> list[bytes]:
    pubsub = store.redis.pubsub()
    await pubsub.subscribe(store.keys.screen(job_id))
    got, deadline = [], time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.2)
            if message:
                got.append(base64.b64decode(message["data"]))
    finally:
        await pubsub.aclose()
    return got


async def test_frames_flow_only_while_watched(store: JobStore, pool: BrowserPool, site: StaticServer) -> None:
    job_id = new_id()
    async with pool.lease() as lease:
        await lease.page.goto(site.url("/console/ticking.html"))
        async with LiveView(store, job_id, lambda: lease.page):
            assert await frames_within(store, job_id, 2.5) == [], "nobody watches: no screencast"

            await watch(store, job_id)
            frames = await frames_within(store, job_id, 3.0)
            assert len(frames) >= 2 and all(f.startswith(b"\xff\xd8") for f in frames), "JPEG frames while watched"
            assert len(frames) <= 3.0 * 4 + 2, "at most 4 frames a second"

            await store.redis.delete(store.keys.watched(job_id))  # the last viewer left (its TTL ran out)
            await asyncio.sleep(1.5)
            assert await frames_within(store, job_id, 2.0) == [], "the screencast stops when nobody watches"


async def test_the_live_view_follows_the_current_tab(store: JobStore, pool: BrowserPool, site: StaticServer) -> None:
    """The job opens a second tab and closes its first: frames keep coming, from the tab it is on."""
    job_id = new_id()
    async with pool.lease() as lease:
        first = lease.page
        await first.goto(site.url("/console/ticking.html"))
        async with LiveView(store, job_id, lambda: lease.page) as view:
            await watch(store, job_id)
            assert await frames_within(store, job_id, 2.0), "frames of the first tab"
            second = await lease.new_page(site.url("/console/ticking.html"))  # now the current tab
            await lease.close_page(first)
            await asyncio.sleep(1.5)  # the view looks at the current tab every second
            assert view.page is second
            assert len(await frames_within(store, job_id, 2.5)) >= 2, "frames of the second tab"
