"""Scheduled crawls: a cron expression or an interval that enqueues a job or a batch template.

Two records per schedule, both in Redis:

* the RedBeat entry (``beat``), which ``browserd beat`` reads to send ``browserd.run_schedule(id)``
  when it is due; pausing a schedule disables this entry;
* ``P schedule:{id}`` with the template, the overlap policy and run bookkeeping, plus the set
  ``P schedules``; each run's batch id goes into ``P schedule:{id}:runs`` (``batches.store``).

Every run is a batch carrying the schedule's id. With policy ``skip`` (the default) a run is
skipped while the previous run's batch is still unfinished; with ``queue`` it is queued anyway.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

import workers.jobs.metrics as metrics
from config import Settings
from workers.jobs.batches.models import BatchRecord
from workers.jobs.batches.store import BatchStore
from workers.jobs.errors import SpecError
from workers.jobs.ids import is_id, new_id
from workers.jobs.lifecycle.crawling import crawl_spec, submit_crawl
from workers.jobs.lifecycle.submission import submit_batch
from workers.jobs.schedules.change_store import ChangeFeed
from workers.jobs.model.spec import JobSpec
from workers.jobs.recipes.checks import automatic
from workers.jobs.schedules import beat
from workers.jobs.schedules.firing import next_cron_firing
from workers.jobs.schedules.models import Schedule, ScheduleSpec
from workers.jobs.specs.checks import validate_jobs
from workers.jobs.tenants.ceilings import Ceiling, tenant_ceiling
from workers.jobs.tenants.principal import Principal
from workers.jobs.tenants.models import QuotaExceeded
from workers.jobs.tenants.store import TenantStore
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.schedules")


def check(spec: ScheduleSpec, settings: Settings, ceiling: Ceiling | None = None) -> list[JobSpec]:
    """Refuse a schedule whose timing or template could never run, or asks past its ``ceiling``
    (422 naming the field)."""
    beat.celery_schedule(spec)
    if spec.crawl is not None:
        crawl_spec(spec.crawl, settings, ceiling=ceiling)  # its pages' jobs are made (and checked) as it finds them
        return []
    request = spec.request()
    specs = validate_jobs(request, settings, ceiling)
    if spec.mode == "auto":
        automatic(specs, "schedule", where="mode")  # refuses a template with no agent job
    if any(s.secrets for s in specs):  # the template is stored as written: values would sit in clear
        raise SpecError.at("job.secrets" if spec.job is not None else "batch.jobs.secrets",
                           "a schedule keeps its template as written; store the values with POST /v1/credentials "
                           "and give its jobs 'credentials' instead")
    if any(s.proxy is not None and s.proxy.password is not None for s in specs):
        raise SpecError.at("job.proxy.password" if spec.job is not None else "batch.jobs.proxy.password",
                           "a schedule keeps its template as written, so it cannot hold a proxy password; store it "
                           "in a credential set (POST /v1/credentials), give the jobs 'credentials' and name the "
                           "value in 'proxy.password_secret'")
    return specs


def _ts(value: str | None) -> datetime | None:
    return datetime.fromtimestamp(float(value), UTC) if value else None


class ScheduleStore:
    """Schedules in the job store's Redis; RedBeat entries through the Celery app (blocking calls in threads)."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.redis = store.redis
        self.batches = BatchStore(store)

    def key(self, schedule_id: str) -> str:
        return self.store.keys.schedule(schedule_id)

    @property
    def index(self) -> str:
        return self.store.keys.schedules

    async def create(self, spec: ScheduleSpec, tenant: str | None = None) -> Schedule:
        """A schedule (``tenant``'s, or the operator's: its runs are the same tenant's)."""
        schedule_id = new_id()
        now = datetime.now(UTC).timestamp()
        await self.redis.hset(self.key(schedule_id), mapping={
            "id": schedule_id, "spec": spec.model_dump_json(), "created_at": repr(now), "runs": 0, "skipped": 0,
            "tenant": tenant or "",
        })
        await self.redis.zadd(self.index, {schedule_id: now})
        await asyncio.to_thread(beat.save_entry, schedule_id, spec)
        found = await self.get(schedule_id)
        assert found is not None
        return found

    async def get(self, schedule_id: str) -> Schedule | None:
        if not is_id(schedule_id):
            return None
        raw = await self.redis.hgetall(self.key(schedule_id))
        if not raw.get("spec"):
            return None
        spec = ScheduleSpec.model_validate_json(raw["spec"])
        due = await self._next_run(schedule_id, spec)
        return Schedule(
            **spec.model_dump(), id=schedule_id, created_at=_ts(raw["created_at"]),
            runs=int(raw.get("runs") or 0), skipped=int(raw.get("skipped") or 0),
            last_run_at=_ts(raw.get("last_run_at")), last_batch_id=raw.get("last_batch") or None, next_run_at=due,
            tenant=raw.get("tenant") or None,
        )

    @staticmethod
    async def _next_run(schedule_id: str, spec: ScheduleSpec) -> datetime | None:
        """A cron's next firing from its expression; an interval's from RedBeat's last run."""
        if not spec.enabled:
            return None
        if spec.cron is not None:
            return next_cron_firing(spec.cron, datetime.now(UTC))
        return await asyncio.to_thread(beat.due_at, schedule_id)

    async def list(self, tenant: str | None = None) -> list[Schedule]:
        """Oldest first; ``tenant``: only that tenant's (None: everyone's)."""
        ids = await self.redis.zrange(self.index, 0, -1)
        found = [await self.get(schedule_id) for schedule_id in ids]
        return [s for s in found if s is not None and (tenant is None or s.tenant == tenant)]

    async def set_enabled(self, schedule_id: str, enabled: bool) -> Schedule | None:
        raw = await self.redis.hget(self.key(schedule_id), "spec") if is_id(schedule_id) else None
        if not raw:
            return None
        spec = ScheduleSpec.model_validate_json(raw).model_copy(update={"enabled": enabled})
        await self.redis.hset(self.key(schedule_id), "spec", spec.model_dump_json())
        await asyncio.to_thread(beat.save_entry, schedule_id, spec)
        return await self.get(schedule_id)

    async def delete(self, schedule_id: str) -> bool:
        if await self.get(schedule_id) is None:
            return False
        await asyncio.to_thread(beat.delete_entry, schedule_id)
        await self.redis.delete(self.key(schedule_id))
        await self.redis.zrem(self.index, schedule_id)
        await ChangeFeed(self.store).forget(schedule_id)
        return True

    async def fire(self, schedule_id: str, settings: Settings, *, force: bool = False) -> BatchRecord | None:
        """One run: a batch of the template's jobs; None when paused, gone, or skipped by the policy."""
        schedule = await self.get(schedule_id)
        if schedule is None or (not schedule.enabled and not force):
            return None
        if schedule.policy == "skip" and not force and await self._previous_unfinished(schedule):
            await self.redis.hincrby(self.key(schedule_id), "skipped", 1)
            metrics.observe_schedule_run("skipped")
            log.info("schedule %s: previous run %s is unfinished; skipped", schedule_id, schedule.last_batch_id)
            return None
        ceiling = None
        if schedule.tenant is not None:  # its tenant's run, within the tenant's ceilings as they are now
            owner = await TenantStore(self.redis, self.store.keys).get(schedule.tenant)
            if owner is None or owner.revoked:
                log.info("schedule %s: tenant %s is revoked; not run", schedule_id, schedule.tenant)
                return None
            ceiling = tenant_ceiling(Principal(owner.name, owner.limits), settings)
        try:
            if schedule.crawl is not None:
                record = await self._crawl(schedule, schedule.crawl, settings, ceiling)
            else:
                request = schedule.request()
                specs = validate_jobs(request, settings, ceiling)
                if schedule.mode == "auto":
                    specs = automatic(specs, f"schedule-{schedule_id}")
                record = await submit_batch(self.store, specs, settings, schedule_id=schedule_id,
                                            webhook_url=request.webhook_url, tenant=schedule.tenant,
                                            max_cost_usd=request.max_cost_usd)
        except QuotaExceeded as exc:  # the tenant's quota, not the schedule's fault: this run is skipped
            await self.redis.hincrby(self.key(schedule_id), "skipped", 1)
            metrics.observe_schedule_run("skipped")
            log.info("schedule %s: skipped: %s", schedule_id, exc)
            return None
        await self.redis.hset(self.key(schedule_id), mapping={"last_batch": record.id,
                                                              "last_run_at": repr(record.created_at.timestamp())})
        await self.redis.hincrby(self.key(schedule_id), "runs", 1)
        metrics.observe_schedule_run("run")
        return record

    async def _crawl(self, schedule: Schedule, raw: dict[str, Any], settings: Settings,
                     ceiling: Ceiling | None) -> BatchRecord:
        """One run of a crawl schedule: a crawl whose batch is the run (its tenant's, within its ceiling)."""
        crawl = await submit_crawl(self.store, crawl_spec(raw, settings, ceiling=ceiling), settings,
                                   schedule_id=schedule.id, tenant=schedule.tenant)
        record = await self.batches.get(crawl.batch_id)
        assert record is not None
        return record

    async def _previous_unfinished(self, schedule: Schedule) -> bool:
        if not schedule.last_batch_id:
            return False
        previous = await self.batches.get(schedule.last_batch_id)
        return previous is not None and not previous.finished

    async def runs(self, schedule_id: str, limit: int = 50) -> list[BatchRecord]:
        return await self.batches.for_schedule(schedule_id, limit)
