"""Scheduled crawls: a cron expression or an interval that enqueues a job or a batch template.

Two records per schedule, both in Redis:

* the RedBeat entry (``browserd:redbeat:schedule:{id}``), which ``browserd beat`` (Celery beat
  with RedBeat's scheduler, one active beat at a time thanks to RedBeat's lock) reads to send
  ``browserd.run_schedule(id)`` when it is due; pausing a schedule disables this entry;
* ``P schedule:{id}`` with the template, the overlap policy and run bookkeeping, plus the set
  ``P schedules``; each run's batch id goes into ``P schedule:{id}:runs`` (``batches``).

Every run is a batch carrying the schedule's id. With policy ``skip`` (the default) a run is
skipped while the previous run's batch is still unfinished; with ``queue`` it is queued anyway.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from celery.schedules import crontab, schedule
from pydantic import BaseModel, ConfigDict, Field, model_validator
from redbeat import RedBeatSchedulerEntry
from redbeat.schedulers import ensure_conf

from config import Settings
import workers.jobs.metrics as metrics
from workers.jobs.batches import BatchRecord, BatchStore
from workers.jobs.keys import is_id, new_id
from workers.jobs.models import JobSpec
from workers.jobs.queue import RUN_SCHEDULE, app
from workers.jobs.recipes import automatic
from workers.jobs.specs import BatchRequest, refuse, validate_jobs
from workers.jobs.store import JobStore
from workers.jobs.submission import submit_batch

log = logging.getLogger("browserd.schedules")


class ScheduleSpec(BaseModel):
    """What to run and when: exactly one of ``cron``/``every``, exactly one of ``job``/``batch``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    cron: str | None = Field(None, description="Five fields: minute hour day-of-month month day-of-week (UTC).")
    every: float | None = Field(None, ge=1, le=366 * 86400, description="Interval in seconds.")
    job: dict[str, Any] | None = Field(None, description="A job spec run on each firing (as a batch of one).")
    batch: dict[str, Any] | None = Field(None, description='{"jobs": [...], "defaults": {...}, "webhook_url": ...}')
    policy: Literal["skip", "queue"] = Field("skip", description="When the previous run is unfinished: skip or queue.")
    mode: Literal["agent", "auto"] = Field("agent", description="auto: the first successful run of an agent job is "
                                           "recorded as recipe 'schedule-{id}'; later runs replay it with no LLM.")
    enabled: bool = True

    @model_validator(mode="after")
    def _one_of_each(self) -> ScheduleSpec:
        if (self.cron is None) == (self.every is None):
            raise ValueError("give exactly one of 'cron' (e.g. '*/15 * * * *') or 'every' (seconds)")
        if (self.job is None) == (self.batch is None):
            raise ValueError("give exactly one of 'job' (a job spec) or 'batch' ({\"jobs\": [...], \"defaults\": ...})")
        return self

    def request(self) -> BatchRequest:
        if self.job is not None:
            return BatchRequest(jobs=[self.job])
        batch = self.batch or {}
        unknown = set(batch) - {"jobs", "defaults", "webhook_url"}
        if unknown or not isinstance(batch.get("jobs"), list):
            raise refuse("batch", "must be {\"jobs\": [...], \"defaults\": {...}, \"webhook_url\": ...}")
        return BatchRequest(jobs=batch["jobs"], defaults=batch.get("defaults") or {},
                            webhook_url=batch.get("webhook_url"))


class Schedule(ScheduleSpec):
    id: str
    created_at: datetime
    runs: int = Field(0, description="Runs started (batches created).")
    skipped: int = Field(0, description="Firings skipped because the previous run was unfinished.")
    last_run_at: datetime | None = None
    last_batch_id: str | None = None
    next_run_at: datetime | None = Field(None, description="When beat will fire it next (enabled schedules).")


def parse_cron(expr: str) -> Any:
    parts = expr.split()
    if len(parts) != 5:
        raise refuse("cron", f"{expr!r} needs five fields: minute hour day-of-month month day-of-week")
    minute, hour, dom, month, dow = parts
    try:
        return crontab(minute=minute, hour=hour, day_of_month=dom, month_of_year=month, day_of_week=dow)
    except (ValueError, KeyError, IndexError) as exc:
        raise refuse("cron", f"{expr!r}: {exc}") from None


def celery_schedule(spec: ScheduleSpec) -> Any:
    if spec.cron is not None:
        return parse_cron(spec.cron)
    return schedule(timedelta(seconds=spec.every or 60))


def check(spec: ScheduleSpec, settings: Settings) -> list[JobSpec]:
    """Refuse a schedule whose timing or template could never run (422 naming the field)."""
    celery_schedule(spec)
    request = spec.request()
    specs = validate_jobs(request, settings)
    if spec.mode == "auto":
        automatic(specs, "schedule", where="mode")  # refuses a template with no agent job
    if any(s.secrets for s in specs):  # the template is stored as written: values would sit in clear
        raise refuse("job.secrets" if spec.job is not None else "batch.jobs.secrets",
                     "a schedule keeps its template as written; store the values with POST /v1/credentials "
                     "and give its jobs 'credentials' instead")
    if any(s.proxy is not None and s.proxy.password is not None for s in specs):
        raise refuse("job.proxy.password" if spec.job is not None else "batch.jobs.proxy.password",
                     "a schedule keeps its template as written, so it cannot hold a proxy password; store it in a "
                     "credential set (POST /v1/credentials), give the jobs 'credentials' and name the value in "
                     "'proxy.password_secret'")
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

    async def create(self, spec: ScheduleSpec) -> Schedule:
        schedule_id = new_id()
        now = datetime.now(UTC).timestamp()
        await self.redis.hset(self.key(schedule_id), mapping={
            "id": schedule_id, "spec": spec.model_dump_json(), "created_at": repr(now), "runs": 0, "skipped": 0,
        })
        await self.redis.zadd(self.index, {schedule_id: now})
        await asyncio.to_thread(_save_entry, schedule_id, spec)
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
        due = await asyncio.to_thread(_due_at, schedule_id) if spec.enabled else None
        return Schedule(
            **spec.model_dump(), id=schedule_id, created_at=_ts(raw["created_at"]),
            runs=int(raw.get("runs") or 0), skipped=int(raw.get("skipped") or 0),
            last_run_at=_ts(raw.get("last_run_at")), last_batch_id=raw.get("last_batch") or None, next_run_at=due,
        )

    async def list(self) -> list[Schedule]:
        ids = await self.redis.zrange(self.index, 0, -1)
        found = [await self.get(schedule_id) for schedule_id in ids]
        return [s for s in found if s is not None]

    async def set_enabled(self, schedule_id: str, enabled: bool) -> Schedule | None:
        raw = await self.redis.hget(self.key(schedule_id), "spec") if is_id(schedule_id) else None
        if not raw:
            return None
        spec = ScheduleSpec.model_validate_json(raw).model_copy(update={"enabled": enabled})
        await self.redis.hset(self.key(schedule_id), "spec", spec.model_dump_json())
        await asyncio.to_thread(_save_entry, schedule_id, spec)
        return await self.get(schedule_id)

    async def delete(self, schedule_id: str) -> bool:
        if await self.get(schedule_id) is None:
            return False
        await asyncio.to_thread(_delete_entry, schedule_id)
        await self.redis.delete(self.key(schedule_id))
        await self.redis.zrem(self.index, schedule_id)
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
        request = schedule.request()
        specs = validate_jobs(request, settings)
        if schedule.mode == "auto":
            specs = automatic(specs, f"schedule-{schedule_id}")
        record = await submit_batch(self.store, specs, settings, schedule_id=schedule_id,
                                    webhook_url=request.webhook_url)
        await self.redis.hset(self.key(schedule_id), mapping={"last_batch": record.id,
                                                              "last_run_at": repr(record.created_at.timestamp())})
        await self.redis.hincrby(self.key(schedule_id), "runs", 1)
        metrics.observe_schedule_run("run")
        return record

    async def _previous_unfinished(self, schedule: Schedule) -> bool:
        if not schedule.last_batch_id:
            return False
        previous = await self.batches.get(schedule.last_batch_id)
        return previous is not None and not previous.finished

    async def runs(self, schedule_id: str, limit: int = 50) -> list[BatchRecord]:
        return await self.batches.for_schedule(schedule_id, limit)


# --- RedBeat (synchronous; called in threads) ------------------------------------------------


def _entry_name(schedule_id: str) -> str:
    return f"schedule:{schedule_id}"


def _save_entry(schedule_id: str, spec: ScheduleSpec) -> None:
    RedBeatSchedulerEntry(
        name=_entry_name(schedule_id), task=RUN_SCHEDULE, schedule=celery_schedule(spec), args=[schedule_id],
        options={"queue": "high"}, enabled=spec.enabled, app=app,
    ).save()


def _load_entry(schedule_id: str) -> Any:
    ensure_conf(app)
    key = RedBeatSchedulerEntry.generate_key(app, _entry_name(schedule_id))
    try:
        return RedBeatSchedulerEntry.from_key(key, app=app)
    except KeyError:
        return None


def _due_at(schedule_id: str) -> datetime | None:
    entry = _load_entry(schedule_id)
    return entry.due_at if entry is not None else None


def _delete_entry(schedule_id: str) -> None:
    entry = _load_entry(schedule_id)
    if entry is not None:
        entry.delete()

