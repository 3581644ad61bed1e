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


def connect(url: str) -> aioredis.Redis:
    """An asyncio Redis client returning text, as the store expects.

    Its socket timeout is well above the longest blocking read browserd issues (the event
    stream's ``XREAD BLOCK``, ``SSE_BLOCK_MS``), so a quiet job never looks like a dead server; and
    a command that meets a connection error or timeout is retried with backoff for about
    ``RETRY_SECONDS``, so a Redis restart (AOF on) is a pause, not a lost result.
    """
    return aioredis.from_url(
        url, decode_responses=True, health_check_interval=30,
        socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=CONNECT_TIMEOUT,
        retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), RETRIES),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )
