"""The features' stores on a real redis-server (one per test module, ``redis`` in tests/conftest.py),
reached as a worker or ``browserd run`` with ``BROWSERD_REDIS_URL`` reaches them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from cryptography.fernet import Fernet

from config import Settings, load_settings
from tests.support.redis_server import RedisServer
from workers.jobs.store.connection import connect


@pytest.fixture(scope="module")
def settings() -> Settings:
    """A worker's settings with a secrets key: credential sets and profiles are sealed with it."""
    return load_settings(secrets_key=Fernet.generate_key().decode())


@pytest_asyncio.fixture
async def client(redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    c = connect(redis.url)
    yield c
    await c.aclose()
