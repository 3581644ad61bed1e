"""A redis-server per test module, and a job store under a fresh key prefix per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from tests.support.redis_server import RedisServer, redis_server
from workers.jobs.ids import new_id
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with redis_server() as running:
        yield running


@pytest_asyncio.fixture
async def store(server: RedisServer) -> AsyncIterator[JobStore]:
    client = connect(server.url)
    yield JobStore(client, result_ttl=60, keys=Keys(prefix=f"t{new_id()[:8]}:"))
    await client.aclose()
