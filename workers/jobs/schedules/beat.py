"""A schedule's timing in Celery beat: its cron or interval, and its RedBeat entry.

``browserd beat`` (Celery beat with RedBeat's scheduler, one active beat at a time thanks to
RedBeat's lock) reads the entry ``browserd:redbeat:schedule:{id}`` to send
``browserd.run_schedule(id)`` when it is due; pausing a schedule disables the entry. RedBeat's
calls are blocking: callers on an event loop run them in threads.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from celery.schedules import crontab, schedule
from redbeat import RedBeatSchedulerEntry
from redbeat.schedulers import ensure_conf

from workers.jobs.errors import SpecError
from workers.jobs.queue.app import app
from workers.jobs.queue.names import RUN_SCHEDULE
from workers.jobs.schedules.models import ScheduleSpec


def parse_cron(expr: str) -> Any:
    parts = expr.split()
    if len(parts) != 5:
        raise SpecError.at("cron", f"{expr!r} needs five fields: minute hour day-of-month month day-of-week")
    minute, hour, dom, month, dow = parts
    try:
        return crontab(minute=minute, hour=hour, day_of_month=dom, month_of_year=month, day_of_week=dow)
    except (ValueError, KeyError, IndexError) as exc:
        raise SpecError.at("cron", f"{expr!r}: {exc}") from None


def celery_schedule(spec: ScheduleSpec) -> Any:
    if spec.cron is not None:
        return parse_cron(spec.cron)
    return schedule(timedelta(seconds=spec.every or 60))


def entry_name(schedule_id: str) -> str:
    return f"schedule:{schedule_id}"


def save_entry(schedule_id: str, spec: ScheduleSpec) -> None:
    RedBeatSchedulerEntry(
        name=entry_name(schedule_id), task=RUN_SCHEDULE, schedule=celery_schedule(spec), args=[schedule_id],
        options={"queue": "high"}, enabled=spec.enabled, app=app,
    ).save()


def load_entry(schedule_id: str) -> Any:
    ensure_conf(app)
    key = RedBeatSchedulerEntry.generate_key(app, entry_name(schedule_id))
    try:
        return RedBeatSchedulerEntry.from_key(key, app=app)
    except KeyError:
        return None


def due_at(schedule_id: str) -> datetime | None:
    entry = load_entry(schedule_id)
    return entry.due_at if entry is not None else None


def delete_entry(schedule_id: str) -> None:
    entry = load_entry(schedule_id)
    if entry is not None:
        entry.delete()
