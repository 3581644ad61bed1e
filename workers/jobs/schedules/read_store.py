"""A schedule's page reads in Redis (``P schedule:{id}:reads``): what the last run's agent read on each
page, for the next run to reuse when the page is unchanged (``schedules.reads``).

Which schedule a job belongs to is in its record: a scheduled batch's job names it (``schedule``);
a scheduled crawl's page job names its batch, whose hash names the schedule.
"""

from __future__ import annotations

import redis.asyncio as aioredis

from workers.jobs.ids import is_id
from workers.jobs.schedules.reads import PageRead
from workers.jobs.store.keys import Keys

READS_TTL = 90 * 86_400  # a schedule's reads outlive its slowest sensible period (a monthly run)


class PageReads:
    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys

    async def schedule_of(self, job_id: str) -> str | None:
        """The schedule whose run made ``job_id`` (directly, or through its crawl's batch); None if none."""
        schedule, batch = await self.redis.hmget(self.keys.job(job_id), ["schedule", "batch"])
        if not schedule and batch and is_id(batch):
            schedule = await self.redis.hget(self.keys.batch(batch), "schedule")
        return schedule if schedule and is_id(schedule) else None

    async def get(self, schedule_id: str, key: str) -> PageRead | None:
        raw = await self.redis.hget(self.keys.schedule_reads(schedule_id), key)
        return PageRead.model_validate_json(raw) if raw else None

    async def put(self, schedule_id: str, key: str, read: PageRead) -> None:
        name = self.keys.schedule_reads(schedule_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(name, key, read.model_dump_json())
            pipe.expire(name, READS_TTL)
            await pipe.execute()
