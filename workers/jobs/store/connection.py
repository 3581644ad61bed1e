"""The Redis connection the store (and everything that shares its Redis) uses."""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

SOCKET_TIMEOUT = 30.0  # seconds; above any blocking read we issue (XREAD BLOCK of at most 5 s)
CONNECT_TIMEOUT = 5.0
RETRIES = 10  # with backoff capped at 2 s: a command rides out about 15 s of Redis being away
# The API answers a person or a client waiting on a request: with Redis away it must say 503 at once
# (within about 2 s), not ride out a restart the way a worker finishing a job should.
API_RETRIES = 1
API_CONNECT_TIMEOUT = 1.0


def connect(url: str, *, retries: int = RETRIES, connect_timeout: float = CONNECT_TIMEOUT) -> aioredis.Redis:
    """An asyncio Redis client returning text, as the store expects.

    Its socket timeout is well above the longest blocking read browserd issues (the event
    stream's ``XREAD BLOCK``, ``SSE_BLOCK_MS``), so a quiet job never looks like a dead server; and
    a command that meets a connection error or timeout is retried with backoff for about
    ``RETRY_SECONDS``, so a Redis restart (AOF on) is a pause, not a lost result. The API passes
    ``API_RETRIES``/``API_CONNECT_TIMEOUT`` so a request fails fast (503) instead; the socket timeout
    stays, as the API issues the same blocking reads (event streams, session replies).
    """
    return aioredis.from_url(
        url, decode_responses=True, health_check_interval=30,
        socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=connect_timeout,
        retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), retries),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )
