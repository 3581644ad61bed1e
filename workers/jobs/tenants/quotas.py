"""A tenant's quotas (``TenantLimits.max_*``), checked where work is admitted.

* ``queued`` and ``jobs_per_day``: ``admit_jobs``, one Lua call (``tenant_admit.lua``) before a
  job or a batch is recorded: the tenant's queued jobs (``P tenant:{t}:usage``, which the job
  scripts keep exact in each transition), plus the jobs other admissions reserved and have not
  recorded yet, plus the new ones within ``max_queued``; today's count (UTC) within
  ``max_jobs_per_day``, counted in the same call. The new jobs are reserved in that call too
  (``P tenant:{t}:reserved``) until the submitter has recorded them (``QuotaReservation.settle``), so
  two submissions racing cannot both pass the queued check; a reservation whose submitter died
  lapses after ``RESERVATION_SECONDS``. A job recorded under the reservation carries its token
  (``Admission.token``, the job's ``admission`` field) and counts itself off the reservation in
  the call that records it (``P tenant:{t}:admitted``), so between recording and settling it is
  counted once (as queued), never twice.
* ``batch_size``: ``check_batch_size``, before anything is recorded.
* ``sessions``: ``check_sessions``, before a session is recorded.
* ``cost_per_day``, ``cost_per_month``: ``admit_jobs`` refuses a tenant whose jobs' LLM calls
  cost its ``max_cost_usd_per_day`` today or ``max_cost_usd_per_month`` this month (UTC)
  (``add_cost``, from the workers' cost feature); jobs already queued still run, each within its
  own ``max_cost_usd``.
* ``artifact_bytes``: ``admit_jobs`` refuses a tenant whose artifacts in the store reach its
  ``max_artifact_bytes`` (``set_artifact_bytes`` as a job's are written, ``forget_artifacts``
  as the reconciler deletes expired jobs' folders).
* ``running``: never refused: fair dispatch (``dispatch``) releases at most ``max_running`` of the
  tenant's jobs at once, the rest wait their turn.

Over a quota: ``QuotaExceeded`` (the API's 429 with the quota's name and ``Retry-After``).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from redis.exceptions import WatchError

from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import source
from workers.jobs.tenants.models import Quota, QuotaExceeded, TenantLimits, TenantUsage

RETRY_HINT_SECONDS = 10.0  # queued jobs and sessions free as they start or close: when is not known
ARTIFACT_RETRY_SECONDS = 300.0  # artifact bytes free as expired jobs' folders are deleted (reconciler passes)
DAY_COUNTER_TTL = 2 * 24 * 3600
MONTH_COUNTER_TTL = 32 * 24 * 3600
RESERVATION_SECONDS = 600.0  # an admission's reservation lapses if its submitter never records its jobs
ARTIFACT_OWNERS_FIELD_SEP = "|"


def _day(at: datetime) -> str:
    return at.strftime("%Y-%m-%d")


def _month(at: datetime) -> str:
    return at.strftime("%Y-%m")


def until_midnight(at: datetime) -> float:
    """Seconds from ``at`` to the next midnight UTC, when the day's quota frees."""
    tomorrow = (at + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1.0, (tomorrow - at).total_seconds())


def until_next_month(at: datetime) -> float:
    """Seconds from ``at`` to the first of the next month (UTC), when the month's budget frees."""
    first = at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (first + timedelta(days=32)).replace(day=1)
    return max(1.0, (following - at).total_seconds())


@dataclass(frozen=True)
class QuotaReservation:
    """Jobs admitted and not recorded yet: ``settle`` once they are (``created`` of ``asked``
    were new), so the queued check stops counting them twice and the day gets back what was not
    created (an idempotent repeat, a crawl's page past its budget)."""

    quotas: Quotas
    tenant: str
    token: str
    asked: int
    day: str

    async def settle(self, created: int) -> None:
        keys = self.quotas.keys
        async with self.quotas.redis.pipeline(transaction=True) as pipe:
            pipe.zrem(keys.tenant_reserved(self.tenant), f"{self.token}|{self.asked}")
            pipe.hdel(keys.tenant_admitted(self.tenant), self.token)
            if created < self.asked:
                pipe.decrby(keys.tenant_day(self.tenant, self.day), self.asked - created)
            await pipe.execute()


def check_batch_size(tenant: str, limits: TenantLimits, size: int) -> None:
    if limits.max_batch_size is not None and size > limits.max_batch_size:
        raise QuotaExceeded(tenant, Quota.batch_size, limits.max_batch_size, None,
                            f"a batch of {size} jobs; split it into batches of at most {limits.max_batch_size}")


@dataclass
class Admission:
    """What an ``admitted`` block records: how many of the admitted jobs were new. ``token``
    (None for the operator's jobs) goes into each job the block records (``admission``), so the
    job's creation takes it off the reservation atomically and it is never counted twice."""

    created: int = 0
    token: str | None = None


@asynccontextmanager
async def admitted(quotas: Quotas, tenant: str | None, limits: TenantLimits | None,
                   count: int) -> AsyncIterator[Admission]:
    """Admit ``count`` of ``tenant``'s jobs (``QuotaExceeded`` before the block; nothing for the
    operator, ``tenant`` None), let the block record them and say how many were new
    (``Admission.created``), then settle the reservation, whatever the block raised."""
    admission = Admission()
    if tenant is None:
        yield admission
        return
    reservation = await quotas.admit_jobs(tenant, limits or TenantLimits(), count)
    admission.token = reservation.token
    try:
        yield admission
    finally:
        await reservation.settle(admission.created)


class Quotas:
    """A tenant's usage in Redis, and the checks against its quotas."""

    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis, self.keys = redis, keys or Keys()
        self._admit = redis.register_script(source("tenant_admit"))

    async def admit_jobs(self, tenant: str, limits: TenantLimits, count: int) -> QuotaReservation:
        """Count ``count`` new jobs against the tenant's quotas, or refuse them all; the caller
        records them, then settles the reservation (``QuotaReservation.settle``, in a ``finally``)."""
        at = datetime.now(UTC)
        await self._check_spent(tenant, limits, at)
        max_queued = -1 if limits.max_queued is None else limits.max_queued
        max_day = -1 if limits.max_jobs_per_day is None else limits.max_jobs_per_day
        token = secrets.token_hex(8)
        quota, value = await self._admit(
            keys=[self.keys.tenant_usage(tenant), self.keys.tenant_day(tenant, _day(at)),
                  self.keys.tenant_reserved(tenant), self.keys.tenant_admitted(tenant)],
            args=[count, max_queued, max_day, DAY_COUNTER_TTL, repr(at.timestamp()), token, RESERVATION_SECONDS])
        if quota == "queued":
            raise QuotaExceeded(tenant, Quota.queued, max_queued, RETRY_HINT_SECONDS,
                                f"{value} queued now, {count} more asked for; its queued jobs free it as they start")
        if quota == "jobs_per_day":
            raise QuotaExceeded(tenant, Quota.jobs_per_day, max_day, until_midnight(at),
                                f"{value} submitted today (UTC), {count} more asked for; it frees at midnight UTC")
        return QuotaReservation(self, tenant, token, count, _day(at))

    async def _check_spent(self, tenant: str, limits: TenantLimits, at: datetime) -> None:
        """Refuse a tenant whose day's or month's LLM budget is spent, or whose artifacts fill its quota."""
        day_cap, month_cap, bytes_cap = limits.max_cost_usd_per_day, limits.max_cost_usd_per_month, \
            limits.max_artifact_bytes
        if day_cap is None and month_cap is None and bytes_cap is None:
            return
        day, month, stored = await self.redis.mget(self.keys.tenant_cost(tenant, _day(at)),
                                                   self.keys.tenant_month_cost(tenant, _month(at)),
                                                   self.keys.tenant_artifacts(tenant))
        if day_cap is not None and float(day or 0) >= day_cap:
            raise QuotaExceeded(tenant, Quota.cost_per_day, day_cap, until_midnight(at),
                                f"its jobs' LLM calls cost ${float(day or 0):.4f} today (UTC), its budget is "
                                f"${day_cap:g}; it frees at midnight UTC")
        if month_cap is not None and float(month or 0) >= month_cap:
            raise QuotaExceeded(tenant, Quota.cost_per_month, month_cap, until_next_month(at),
                                f"its jobs' LLM calls cost ${float(month or 0):.4f} this month (UTC), its budget "
                                f"is ${month_cap:g}; it frees on the first of next month (UTC)")
        if bytes_cap is not None and int(stored or 0) >= bytes_cap:
            raise QuotaExceeded(tenant, Quota.artifact_bytes, bytes_cap, ARTIFACT_RETRY_SECONDS,
                                f"its artifacts hold {int(stored or 0)} bytes; it frees as its jobs' artifacts "
                                "expire (BROWSERD_RESULT_TTL) or as it deletes jobs")

    async def add_cost(self, tenant: str, usd: float) -> None:
        """What a run of the tenant's cost joins its day's and month's (``max_cost_usd_per_day``,
        ``max_cost_usd_per_month``)."""
        if usd <= 0:
            return
        at = datetime.now(UTC)
        day, month = self.keys.tenant_cost(tenant, _day(at)), self.keys.tenant_month_cost(tenant, _month(at))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incrbyfloat(day, usd)
            pipe.expire(day, DAY_COUNTER_TTL)
            pipe.incrbyfloat(month, usd)
            pipe.expire(month, MONTH_COUNTER_TTL)
            await pipe.execute()

    async def set_artifact_bytes(self, tenant: str, job_id: str, size: int) -> None:
        """The tenant's job now holds ``size`` bytes of artifacts (after each of its runs writes
        them): the tenant's total moves by the difference from what the job held before."""
        owners = self.keys.artifact_owners
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(owners)
                    before = await pipe.hget(owners, job_id)
                    held = int(str(before).rpartition(ARTIFACT_OWNERS_FIELD_SEP)[2]) if before else 0
                    pipe.multi()
                    pipe.hset(owners, job_id, f"{tenant}{ARTIFACT_OWNERS_FIELD_SEP}{size}")
                    pipe.incrby(self.keys.tenant_artifacts(tenant), size - held)
                    await pipe.execute()
                    return
                except WatchError:
                    continue

    async def forget_artifacts(self, job_ids: list[str]) -> None:
        """These jobs' artifact folders were deleted: their bytes leave their tenants' totals."""
        if not job_ids:
            return
        owners = self.keys.artifact_owners
        held = await self.redis.hmget(owners, job_ids)
        async with self.redis.pipeline(transaction=True) as pipe:
            for job_id, value in zip(job_ids, held):
                if not value:
                    continue
                tenant, _, size = str(value).rpartition(ARTIFACT_OWNERS_FIELD_SEP)
                pipe.decrby(self.keys.tenant_artifacts(tenant), int(size or 0))
                pipe.hdel(owners, job_id)
            await pipe.execute()

    async def check_sessions(self, tenant: str, limits: TenantLimits, open_now: int) -> None:
        if limits.max_sessions is not None and open_now >= limits.max_sessions:
            raise QuotaExceeded(tenant, Quota.sessions, limits.max_sessions, RETRY_HINT_SECONDS,
                                f"{open_now} sessions open; close one (DELETE /v1/sessions/{{id}}) or wait for one to end")

    async def usage(self, tenant: str, *, parked: int, sessions: int) -> TenantUsage:
        """What the tenant uses now (``parked``: its messages waiting for dispatch, from ``dispatch``)."""
        at = datetime.now(UTC)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hmget(self.keys.tenant_usage(tenant), ["queued", "running", "retrying"])
            pipe.get(self.keys.tenant_day(tenant, _day(at)))
            pipe.zcard(self.keys.tenant_inflight(tenant))
            pipe.get(self.keys.tenant_cost(tenant, _day(at)))
            pipe.get(self.keys.tenant_month_cost(tenant, _month(at)))
            pipe.get(self.keys.tenant_artifacts(tenant))
            (queued, running, retrying), today, released, cost, month, stored = await pipe.execute()
        n = lambda v: max(0, int(v or 0))  # noqa: E731
        return TenantUsage(queued=n(queued), running=n(running) + n(retrying), released=int(released),
                           waiting_dispatch=parked, jobs_today=n(today), sessions=sessions,
                           cost_today_usd=round(float(cost or 0), 6), cost_month_usd=round(float(month or 0), 6),
                           artifact_bytes=max(0, int(stored or 0)))
