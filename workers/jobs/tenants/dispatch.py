"""Fair share across tenants: per-tenant dispatch on the existing Celery/Redis broker.

A tenant's job is recorded as always, but its Celery message (the envelope ``batches.bulk``
builds) is parked in the tenant's own list (``P tenant:{t}:pending:{priority}``) instead of the
shared priority queue. ``release`` (one Lua call, ``tenant_dispatch.lua``) moves parked messages to
the broker round-robin across tenants, one per tenant per round, while a tenant has fewer than its
cap released and unfinished (``P tenant:{t}:inflight``, emptied by the job's final transition in
``job_prelude.lua``). The cap is the fleet's job slots (``BROWSERD_TENANT_RELEASE``, default the
live workers' concurrency summed), lowered by the tenant's ``max_running``.

So a tenant with 2,000 queued jobs holds at most one fleet's worth of messages in the broker:
another tenant's first job is released at once, behind at most the slots' worth already there, and
starts when the next slot frees. Releases happen on submission, after every delivery a worker runs,
on the worker's heartbeat tick and in the reconciler's pass; each is cheap when nothing is parked.

Exactly-once is the job store's, as before: the message is the same one a direct publish sends, and
``job_start.lua`` lets one delivery run the job; a parked message whose job was cancelled is
dropped at release. The operator's own jobs (the admin token's, all of single-tenant browserd's)
are published directly, as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from config import Settings
from workers.jobs.batches.bulk import Outgoing, messages_of
from workers.jobs.model.status import Priority
from workers.jobs.queue.names import QUEUES
from workers.jobs.store.codec import now
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.scripts import source

log = logging.getLogger("browserd.dispatch")

PARK_CHUNK = 2000  # entries per LPUSH
RELEASE_MAX = 1000  # messages released per Lua call (each call a few milliseconds of Redis time at most)
NO_WORKER_CAP = 1  # with no live worker, a tenant's first job still goes to the broker


class Dispatcher:
    """Parks tenants' job messages and releases them to the broker fairly."""

    def __init__(self, store: JobStore, settings: Settings) -> None:
        self.store, self.redis, self.keys, self.settings = store, store.redis, store.keys, settings
        self._release = self.redis.register_script(source("tenant_dispatch"))

    async def park(self, tenant: str, jobs: Sequence[Outgoing]) -> None:
        """Park recorded jobs' messages in the tenant's lists, then release what its turn allows."""
        if not jobs:
            return
        messages = await asyncio.to_thread(messages_of, jobs)  # CPU work: off the event loop for a large batch
        by_priority: dict[Priority, list[str]] = {}
        for job, message in zip(jobs, messages, strict=True):
            by_priority.setdefault(job.priority, []).append(f"{job.job_id}|{message}")
        async with self.redis.pipeline(transaction=True) as pipe:
            for priority, entries in by_priority.items():
                key = self.keys.tenant_pending(tenant, priority.value)
                for start in range(0, len(entries), PARK_CHUNK):
                    pipe.lpush(key, *entries[start:start + PARK_CHUNK])
            pipe.sadd(self.keys.tenants_pending, tenant)
            await pipe.execute()
        await self.release()

    async def fleet_cap(self) -> int:
        """Most jobs of one tenant released and unfinished: the setting, else the live workers' slots."""
        if self.settings.tenant_release:
            return self.settings.tenant_release
        workers = await self.store.live_workers()
        if not workers:
            return NO_WORKER_CAP
        async with self.redis.pipeline(transaction=False) as pipe:
            for worker in workers:
                pipe.hget(self.keys.worker(worker), "concurrency")
            slots = await pipe.execute()
        return max(NO_WORKER_CAP, sum(int(s) for s in slots if s and s.isdigit()))

    async def release(self) -> int:
        """Release parked messages, round-robin across tenants, within each one's cap; how many."""
        if not await self.redis.scard(self.keys.tenants_pending):
            return 0
        cap = await self.fleet_cap()
        total = 0
        while True:
            released = int(await self._release(keys=[], args=[self.keys.prefix, repr(now()), cap, RELEASE_MAX,
                                                              *QUEUES]))
            total += released
            if released < RELEASE_MAX:
                return total

    async def parked(self, tenant: str) -> int:
        """The tenant's messages waiting for their turn."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for queue in QUEUES:
                pipe.llen(self.keys.tenant_pending(tenant, queue))
            return sum(int(n) for n in await pipe.execute())

    async def parked_ids(self) -> set[str]:
        """Every parked job id (the reconciler counts them as having a message)."""
        found: set[str] = set()
        for tenant in await self.redis.smembers(self.keys.tenants_pending):
            for queue in QUEUES:
                key = self.keys.tenant_pending(tenant, queue)
                start = 0
                while True:
                    entries = await self.redis.lrange(key, start, start + PARK_CHUNK - 1)
                    found.update(entry.partition("|")[0] for entry in entries)
                    if len(entries) < PARK_CHUNK:
                        break
                    start += PARK_CHUNK
        return found
