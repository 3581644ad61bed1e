"""When a cron schedule fires next, read from its expression (UTC, as beat runs it).

RedBeat's ``due_at`` is an estimate from the entry's last run (or "now" for one that never ran),
so shown as "next" it drifted earlier with each look (issue 29: ``05:59:59``, then ``05:54:42``
for ``0 6 * * 1-5``). The API, CLI and console all show this instead.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workers.jobs.schedules.beat import parse_cron

# Looking this many days ahead finds any date a cron can name (29 February included: at most 8 years
# apart); an expression that names none (30 February) never fires.
HORIZON_DAYS = 366 * 8 + 2


def next_cron_firing(cron: str, after: datetime) -> datetime | None:
    """The first minute strictly after ``after`` that ``cron`` names, or None when it names none.

    Celery's crontab (which beat runs) needs both day-of-month and day-of-week to match."""
    spec = parse_cron(cron)
    start = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    times = sorted((hour, minute) for hour in spec.hour for minute in spec.minute)
    day = start.date()
    for _ in range(HORIZON_DAYS):
        if day.month in spec.month_of_year and day.day in spec.day_of_month and day.isoweekday() % 7 in spec.day_of_week:
            for hour, minute in times:
                fires = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
                if fires >= start:
                    return fires
        day += timedelta(days=1)
    return None
