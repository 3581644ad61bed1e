"""A job store under a fresh key prefix per test, on the module's redis-server (``redis``, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from tests.support.redis_server import RedisServer
from workers.jobs.ids import new_id
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys


@pytest_asyncio.fixture
async def store(redis: RedisServer) -> AsyncIterator[JobStore]:
    client = connect(redis.url)
    yield JobStore(client, result_ttl=60, keys=Keys(prefix=f"t{new_id()[:8]}:"))
    await client.aclose()
