"""The one place a Redis client is made from ``BROWSERD_REDIS_URL``: the store and everything sharing its
Redis (politeness, sessions, profiles, recipes, credential sets) with ``connect``, the synchronous users
(``/metrics``, the webhook delivery guard) with ``connect_sync``.

A Sentinel URL (``config.redis_url``) gives a client of the master the sentinels name: each new
connection asks them where it is, so after a fail-over a command that met the dead master is retried
(the same backoff as for a restart) against the replica they promoted. Celery's broker and RedBeat are
given the same target by ``workers.jobs.queue.app``.

Not exported by ``config``'s ``__init__``: the public client (``daemon.client``) must not load redis.
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import SentinelManagedConnection as AsyncSentinelManagedConnection
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelManagedConnection

from config.redis_url import RedisKind, Sentinels, parse_redis_url

SOCKET_TIMEOUT = 30.0  # seconds; above any blocking read we issue (XREAD BLOCK of at most 5 s)
CONNECT_TIMEOUT = 5.0
RETRIES = 10  # with backoff capped at 2 s: a command rides out about 15 s of Redis being away (or failing over)
# The API answers a person or a client waiting on a request: with Redis away it must say 503 at once
# (within about 2 s), not ride out a restart the way a worker finishing a job should.
API_RETRIES = 1
API_CONNECT_TIMEOUT = 1.0
SYNC_SOCKET_TIMEOUT = 10.0
RETRY_ON = [RedisConnectionError, RedisTimeoutError]  # MasterNotFoundError is a ConnectionError


class FollowingConnection(AsyncSentinelManagedConnection):
    """A connection to the master that asks the sentinels where it is each time it (re)connects.

    redis-py's own asks only when the pool hands out a new connection: a command retried after the
    master died reconnects the same connection object to the dead master's address until its retries
    run out, even once the sentinels name the promoted replica (redis 8.1; seen in the fail-over test;
    redis/redis-py#3874, open). Drop this class when redis-py asks on every reconnect itself.
    """

    async def _connect(self) -> None:
        if self.connection_pool.is_master:
            self.host, self.port = await self.connection_pool.get_master_address()
        await super()._connect()


class FollowingSyncConnection(SentinelManagedConnection):
    """``FollowingConnection`` for the blocking client."""

    def _connect(self) -> Any:
        if self.connection_pool.is_master:
            self.host, self.port = self.connection_pool.get_master_address()
        return super()._connect()


def _sentinel_kwargs(target: Sentinels, connect_timeout: float) -> dict[str, Any]:
    """How the sentinels themselves are asked (briefly: an unanswering one is skipped for the next)."""
    return {"socket_timeout": connect_timeout, "socket_connect_timeout": connect_timeout,
            **({"password": target.sentinel_password} if target.sentinel_password else {})}


def _master_kwargs(target: Sentinels) -> dict[str, Any]:
    return {"db": target.db, **({"username": target.username} if target.username else {}),
            **({"password": target.password} if target.password is not None else {})}


def connect(url: str, *, retries: int = RETRIES, connect_timeout: float = CONNECT_TIMEOUT) -> aioredis.Redis:
    """An asyncio Redis client returning text, as the store expects.

    Its socket timeout is well above the longest blocking read browserd issues (the event
    stream's ``XREAD BLOCK``, ``SSE_BLOCK_MS``), so a quiet job never looks like a dead server; and
    a command that meets a connection error or timeout is retried with backoff for about 15 s, so a
    Redis restart (AOF on) or a Sentinel fail-over is a pause, not a lost result. The API passes
    ``API_RETRIES``/``API_CONNECT_TIMEOUT`` so a request fails fast (503) instead; the socket timeout
    stays, as the API issues the same blocking reads (event streams, session replies).
    """
    options: dict[str, Any] = dict(
        decode_responses=True, health_check_interval=30, socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=connect_timeout, retry=AsyncRetry(ExponentialBackoff(cap=2.0, base=0.1), retries),
        retry_on_error=RETRY_ON,
    )
    target = parse_redis_url(url)
    if target.kind is RedisKind.SERVER or target.sentinels is None:
        return aioredis.from_url(url, **options)
    found = target.sentinels
    sentinel = AsyncSentinel(list(found.hosts), sentinel_kwargs=_sentinel_kwargs(found, connect_timeout))
    return sentinel.master_for(found.master_name, redis_class=aioredis.Redis, connection_class=FollowingConnection,
                               **options, **_master_kwargs(found))


def connect_sync(url: str, *, socket_timeout: float | None = SYNC_SOCKET_TIMEOUT, retries: int = 5) -> redis.Redis:
    """A blocking client returning text (``/metrics`` scrapes in a thread, webhook deliveries)."""
    options: dict[str, Any] = dict(
        decode_responses=True, socket_timeout=socket_timeout, socket_connect_timeout=CONNECT_TIMEOUT,
        retry=Retry(ExponentialBackoff(cap=2.0), retries), retry_on_error=RETRY_ON,
    )
    target = parse_redis_url(url)
    if target.kind is RedisKind.SERVER or target.sentinels is None:
        return redis.Redis.from_url(url, **options)
    found = target.sentinels
    sentinel = Sentinel(list(found.hosts), sentinel_kwargs=_sentinel_kwargs(found, CONNECT_TIMEOUT))
    return sentinel.master_for(found.master_name, redis_class=redis.Redis, connection_class=FollowingSyncConnection,
                               **options, **_master_kwargs(found))
