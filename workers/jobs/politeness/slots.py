"""Per-domain limits in Redis, shared by every worker: concurrency slots and navigation spacing.

A **slot** is a lease: a member of the domain's sorted set whose score is when it lapses. Taking
one (``politeness_slot_take.lua``) first drops lapsed members, so a crashed worker's slot frees
itself once its lease runs out (the worker's heartbeat renews the slots of the jobs it runs;
nothing else does). A job's end in any way it can end in its process (success, failure, cancel, a timeout,
an exception) releases the slot at once (``release``).

**Spacing** reserves the time of each navigation (``politeness_navigation_reserve.lua``): the
earliest moment at least ``min_delay`` after the latest reserved navigation to that domain. A caller waits until its
reservation, then navigates; reservations are first come, first served, so waiting is fair.
Both use the Redis server's clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import redis.asyncio as aioredis

from workers.jobs.errors import JobsError
from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import source

SLOT_POLL_SECONDS = 0.2  # how often a waiting job asks for a slot again


@dataclass(frozen=True)
class HeldSlot:
    """A job's slot on a domain (what the heartbeat renews)."""

    domain: str
    job_id: str


class SlotWaitExpired(JobsError):
    """No slot came free on ``domain`` within ``waited`` seconds."""

    def __init__(self, domain: str, limit: int, waited: float) -> None:
        self.domain, self.limit, self.waited = domain, limit, waited
        super().__init__(f"waited {waited:.0f}s for one of the {limit} slots on {domain} (politeness limit); "
                         "none came free")


class SlotWaitCancelled(JobsError):
    """The job was cancelled while it waited for a slot on ``domain``."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        super().__init__(f"cancelled while waiting for a slot on {domain} (politeness limit)")


async def poll_slot(take: Callable[[], Awaitable[bool]], slot: HeldSlot, limit: int, patience: float,
                    cancelled: Callable[[], bool]) -> HeldSlot:
    """Ask ``take()`` for ``slot`` every ``SLOT_POLL_SECONDS`` until it gives it; ``SlotWaitExpired``
    after ``patience`` seconds, ``SlotWaitCancelled`` as soon as ``cancelled()`` says so."""
    started = time.monotonic()
    while not await take():
        if cancelled():
            raise SlotWaitCancelled(slot.domain)
        waited = time.monotonic() - started
        if waited + SLOT_POLL_SECONDS > patience:
            raise SlotWaitExpired(slot.domain, limit, waited)
        await asyncio.sleep(SLOT_POLL_SECONDS)
    return slot


class DomainLimits:
    """Slots and spacing on one Redis; ``lease`` is how long a slot lives without a renewal."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, lease: float) -> None:
        self.redis = redis
        self.keys = keys
        self.lease = lease
        self._take = redis.register_script(source("politeness_slot_take"))
        self._renew = redis.register_script(source("politeness_slot_renew"))
        self._reserve = redis.register_script(source("politeness_navigation_reserve"))

    async def try_slot(self, domain: str, job_id: str, limit: int) -> bool:
        """Take (or renew) the job's slot if the domain has one free; 0 means no limit."""
        return bool(await self._take(keys=[self.keys.domain_slots(domain)], args=[job_id, limit, self.lease]))

    async def wait_slot(self, domain: str, job_id: str, limit: int, patience: float,
                        cancelled: Callable[[], bool] = lambda: False) -> HeldSlot:
        """Take a slot, asking again every ``SLOT_POLL_SECONDS``; ``SlotWaitExpired`` after ``patience``,
        ``SlotWaitCancelled`` as soon as ``cancelled()`` says so."""
        return await poll_slot(lambda: self.try_slot(domain, job_id, limit), HeldSlot(domain, job_id), limit,
                               patience, cancelled)

    async def renew(self, slots: Iterable[HeldSlot]) -> None:
        """Extend every slot still held, in one round trip (the worker's heartbeat)."""
        held = list(slots)
        if held:
            await self._renew(keys=[self.keys.domain_slots(s.domain) for s in held],
                              args=[self.lease, *(s.job_id for s in held)])

    async def release(self, slot: HeldSlot) -> None:
        await self.redis.zrem(self.keys.domain_slots(slot.domain), slot.job_id)

    async def holders(self, domain: str) -> list[str]:
        """Job ids holding a live slot on ``domain`` (for inspection and tests)."""
        seconds, micros = await self.redis.time()
        return list(await self.redis.zrangebyscore(self.keys.domain_slots(domain), seconds + micros / 1e6, "+inf"))

    async def reserve_navigation(self, domain: str, min_delay: float) -> float:
        """Reserve the next navigation to ``domain``; seconds to wait before making it."""
        return float(await self._reserve(keys=[self.keys.domain_last_navigation(domain)], args=[min_delay]))
