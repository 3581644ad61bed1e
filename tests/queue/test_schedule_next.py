"""The API's ``next_run_at`` for a cron schedule is its next firing time: a whole minute the
expression names, the same on every look (issue 29: it showed ``05:59:59`` then ``05:54:42``)."""

from __future__ import annotations

import pytest

from datetime import UTC, datetime

from tests.queue.stack import stack

pytestmark = pytest.mark.e2e


def test_a_cron_schedules_next_run_is_its_next_firing() -> None:
    with stack() as s:
        before = datetime.now(UTC)
        status, made = s.call("POST", "/v1/schedules", {"cron": "0 6 * * 1-5", "job": {
            "script": [{"done": {"text": "ok"}}], "start_url": "https://example.com/"}})
        assert status == 201, made
        looks = [made["next_run_at"]] + [s.call("GET", f"/v1/schedules/{made['id']}")[1]["next_run_at"] for _ in range(2)]
        assert len(set(looks)) == 1
        fires = datetime.fromisoformat(looks[0])
        assert (fires.hour, fires.minute, fires.second, fires.microsecond) == (6, 0, 0, 0)
        assert fires.weekday() < 5 and fires > before and (fires - before).days < 4
