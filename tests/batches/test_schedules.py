"""Scheduled crawls through RedBeat and a real beat process: fire on interval, skip while running."""

from __future__ import annotations

import time
from datetime import datetime

from tests.batches.helpers import quick_script, wait_completed
from tests.queue.stack import Stack, wait_until
from tests.support.servers import StaticServer


def schedule(s: Stack, schedule_id: str) -> dict:
    status, body = s.call("GET", f"/v1/schedules/{schedule_id}")
    assert status == 200, body
    return body


def runs(s: Stack, schedule_id: str) -> list[dict]:
    status, body = s.call("GET", f"/v1/schedules/{schedule_id}/runs")
    assert status == 200, body
    return body


def test_a_schedule_fires_on_its_interval_and_skips_while_its_run_is_going(ops: Stack, site: StaticServer) -> None:
    # Each run takes several seconds (its job waits 6 x 1 s); the schedule fires every 2 s.
    job = {"script": quick_script(site.url("/cdp/basic.html"), 0, waits=6), "labels": {"crawl": "slow"}}
    status, created = ops.call("POST", "/v1/schedules", {"name": "slow crawl", "every": 2, "job": job})
    assert status == 201, created
    sid = created["id"]
    assert created["policy"] == "skip" and created["enabled"] and created["next_run_at"]

    wait_until(lambda: schedule(ops, sid)["runs"] >= 2, 120, "two runs of the schedule")
    status, paused = ops.call("POST", f"/v1/schedules/{sid}/pause")
    assert status == 200 and not paused["enabled"]
    state = schedule(ops, sid)
    assert state["skipped"] >= 1  # firings while the previous run was unfinished

    history = runs(ops, sid)
    assert len(history) == state["runs"] and all(r["schedule_id"] == sid and r["total"] == 1 for r in history)
    finished = [wait_completed(ops, r["id"], timeout=120) for r in history]
    ordered = sorted(finished, key=lambda r: r["created_at"])
    for earlier, later in zip(ordered, ordered[1:]):  # skip policy: never two runs at once
        assert datetime.fromisoformat(later["created_at"]) >= datetime.fromisoformat(earlier["finished_at"])

    # Paused: no new runs, whatever the interval.
    count = schedule(ops, sid)["runs"]
    time.sleep(4)
    assert schedule(ops, sid)["runs"] == count

    # Run now works while paused and is a batch like the others.
    status, run = ops.call("POST", f"/v1/schedules/{sid}/run")
    assert status == 201 and run["schedule_id"] == sid
    assert wait_completed(ops, run["id"], timeout=120)["counts"]["succeeded"] == 1
    assert runs(ops, sid)[0]["id"] == run["id"]

    status, listed = ops.call("GET", "/v1/schedules")
    assert sid in [s["id"] for s in listed]
    assert ops.call("DELETE", f"/v1/schedules/{sid}")[0] == 204
    assert ops.call("GET", f"/v1/schedules/{sid}")[0] == 404
    assert not ops.redis.exists(f"browserd:redbeat:schedule:{sid}")


def test_schedule_validation_names_the_field(ops: Stack) -> None:
    status, body = ops.call("POST", "/v1/schedules", {"cron": "*/5 * * *", "job": {"task": "x"}})
    assert status == 422 and body["fields"][0]["field"] == "cron"
    status, body = ops.call("POST", "/v1/schedules", {"cron": "0 99 * * *", "job": {"task": "x"}})
    assert status == 422 and body["fields"][0]["field"] == "cron"
    status, body = ops.call("POST", "/v1/schedules", {"every": 60, "batch": {"jobs": [{"task": "x"}, {"task": ""}]}})
    assert status == 422 and body["fields"][0]["field"] == "jobs[1].task"
    status, body = ops.call("POST", "/v1/schedules", {"every": 60})
    assert status == 422


def test_queue_policy_starts_runs_while_the_previous_one_is_going(ops: Stack, site: StaticServer) -> None:
    job = {"script": quick_script(site.url("/cdp/basic.html"), 0, waits=8)}
    status, created = ops.call("POST", "/v1/schedules", {"every": 1, "job": job, "policy": "queue"})
    assert status == 201, created
    sid = created["id"]
    try:
        wait_until(lambda: schedule(ops, sid)["runs"] >= 2, 60, "two runs of the queue-policy schedule")
    finally:
        ops.call("POST", f"/v1/schedules/{sid}/pause")
    history = sorted(runs(ops, sid), key=lambda r: r["created_at"])
    first = wait_completed(ops, history[0]["id"], timeout=120)
    assert schedule(ops, sid)["skipped"] == 0
    assert datetime.fromisoformat(history[1]["created_at"]) < datetime.fromisoformat(first["finished_at"])
    for run in history[1:]:
        wait_completed(ops, run["id"], timeout=120)
    assert ops.call("DELETE", f"/v1/schedules/{sid}")[0] == 204
