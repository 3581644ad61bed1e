"""A tenant's quotas (``TenantLimits.max_*``), checked where work is admitted.

* ``queued`` and ``jobs_per_day``: ``admit_jobs``, one Lua call (``tenant_admit.lua``) before a
  job or a batch is recorded: the tenant's queued jobs (``P tenant:{t}:usage``, which the job
  scripts keep exact in each transition) plus the new ones within ``max_queued``, and today's
  count (UTC) within ``max_jobs_per_day``, counted in the same call. Two submissions racing may
  both pass the queued check (it is read, not reserved): the quota can be passed by one request's
  jobs, never more.
* ``batch_size``: ``check_batch_size``, before anything is recorded.
* ``sessions``: ``check_sessions``, before a session is recorded.
* ``cost_per_day``: ``admit_jobs`` refuses a tenant whose jobs' LLM calls cost its
  ``max_cost_usd_per_day`` today (``add_cost``, from the workers' cost feature); jobs already
  queued still run, each within its own ``max_cost_usd``.
* ``running``: never refused: fair dispatch (``dispatch``) releases at most ``max_running`` of the
  tenant's jobs at once, the rest wait their turn.

Over a quota: ``QuotaExceeded`` (the API's 429 with the quota's name and ``Retry-After``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis

from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import source
from workers.jobs.tenants.models import Quota, QuotaExceeded, TenantLimits, TenantUsage

RETRY_HINT_SECONDS = 10.0  # queued jobs and sessions free as they start or close: when is not known
DAY_COUNTER_TTL = 2 * 24 * 3600


def _day(at: datetime) -> str:
    return at.strftime("%Y-%m-%d")


def until_midnight(at: datetime) -> float:
    """Seconds from ``at`` to the next midnight UTC, when the day's quota frees."""
    tomorrow = (at + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1.0, (tomorrow - at).total_seconds())


def check_batch_size(tenant: str, limits: TenantLimits, size: int) -> None:
    if limits.max_batch_size is not None and size > limits.max_batch_size:
        raise QuotaExceeded(tenant, Quota.batch_size, limits.max_batch_size, None,
                            f"a batch of {size} jobs; split it into batches of at most {limits.max_batch_size}")


class Quotas:
    """A tenant's usage in Redis, and the checks against its quotas."""

    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis, self.keys = redis, keys or Keys()
        self._admit = redis.register_script(source("tenant_admit"))

    async def admit_jobs(self, tenant: str, limits: TenantLimits, count: int) -> None:
        """Count ``count`` new jobs against the tenant's queued and daily quotas, or refuse them all."""
        at = datetime.now(UTC)
        if limits.max_cost_usd_per_day is not None:
            spent = float(await self.redis.get(self.keys.tenant_cost(tenant, _day(at))) or 0)
            if spent >= limits.max_cost_usd_per_day:
                raise QuotaExceeded(tenant, Quota.cost_per_day, limits.max_cost_usd_per_day, until_midnight(at),
                                    f"its jobs' LLM calls cost ${spent:.4f} today (UTC), its budget is "
                                    f"${limits.max_cost_usd_per_day:g}; it frees at midnight UTC")
        max_queued = -1 if limits.max_queued is None else limits.max_queued
        max_day = -1 if limits.max_jobs_per_day is None else limits.max_jobs_per_day
        quota, value = await self._admit(
            keys=[self.keys.tenant_usage(tenant), self.keys.tenant_day(tenant, _day(at))],
            args=[count, max_queued, max_day, DAY_COUNTER_TTL])
        if quota == "queued":
            raise QuotaExceeded(tenant, Quota.queued, max_queued, RETRY_HINT_SECONDS,
                                f"{value} queued now, {count} more asked for; its queued jobs free it as they start")
        if quota == "jobs_per_day":
            raise QuotaExceeded(tenant, Quota.jobs_per_day, max_day, until_midnight(at),
                                f"{value} submitted today (UTC), {count} more asked for; it frees at midnight UTC")

    async def add_cost(self, tenant: str, usd: float) -> None:
        """What a run of the tenant's cost joins its day's (``max_cost_usd_per_day``)."""
        if usd <= 0:
            return
        key = self.keys.tenant_cost(tenant, _day(datetime.now(UTC)))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incrbyfloat(key, usd)
            pipe.expire(key, DAY_COUNTER_TTL)
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
            (queued, running, retrying), today, released, cost = await pipe.execute()
        n = lambda v: max(0, int(v or 0))  # noqa: E731
        return TenantUsage(queued=n(queued), running=n(running) + n(retrying), released=int(released),
                           waiting_dispatch=parked, jobs_today=n(today), sessions=sessions,
                           cost_today_usd=round(float(cost or 0), 6))
