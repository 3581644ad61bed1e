"""A cron schedule's "next" is the next minute its expression names (UTC), whenever it is asked:
not RedBeat's estimate, which drifted earlier with each look (issue 29)."""

from __future__ import annotations

from datetime import UTC, datetime

from workers.jobs.schedules.firing import next_cron_firing

WEEKDAYS_AT_SIX = "0 6 * * 1-5"


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_next_weekday_at_six_is_the_same_however_late_it_is_asked() -> None:
    # Friday 27 November 2026, 14:27, then five minutes later: Monday 30 November at 06:00 both times
    assert next_cron_firing(WEEKDAYS_AT_SIX, at(2026, 11, 27, 14, 27, 13)) == at(2026, 11, 30, 6, 0)
    assert next_cron_firing(WEEKDAYS_AT_SIX, at(2026, 11, 27, 14, 32, 55)) == at(2026, 11, 30, 6, 0)
    # a Tuesday before six: the same day; at six exactly: the next day
    assert next_cron_firing(WEEKDAYS_AT_SIX, at(2026, 11, 24, 5, 59, 59)) == at(2026, 11, 24, 6, 0)
    assert next_cron_firing(WEEKDAYS_AT_SIX, at(2026, 11, 24, 6, 0)) == at(2026, 11, 25, 6, 0)


def test_steps_lists_month_ends_and_other_zones() -> None:
    assert next_cron_firing("*/15 * * * *", at(2026, 1, 1, 10, 7)) == at(2026, 1, 1, 10, 15)
    assert next_cron_firing("30 23 31 12 *", at(2026, 12, 31, 23, 30)) == at(2027, 12, 31, 23, 30)
    assert next_cron_firing("0 0 29 2 *", at(2026, 3, 1)) == at(2028, 2, 29)
    # asked with a non-UTC time: the answer is still in UTC
    paris = datetime.fromisoformat("2026-06-01T08:30:00+02:00")
    assert next_cron_firing("0 6 * * *", paris) == at(2026, 6, 2, 6, 0)


def test_short_months_are_skipped() -> None:
    assert next_cron_firing("0 0 31 * *", at(2026, 4, 1)) == at(2026, 5, 31)
