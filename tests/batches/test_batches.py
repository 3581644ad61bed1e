"""Batches end to end: real redis-server, API, Celery worker and Chromium."""

from __future__ import annotations

from tests.batches.helpers import (
    batch,
    quick_script,
    results,
    submit_batch,
    wait_completed,
)
from tests.queue.stack import Stack
from tests.support.servers import StaticServer
from workers.jobs.metrics import queue_keys

COUNTERS = ("queued", "running", "retrying", "succeeded", "failed", "cancelled")


def test_a_batch_of_200_jobs_adds_up(ops: Stack, site: StaticServer) -> None:
    url = site.url("/cdp/basic.html")
    header = {"defaults": {"labels": {"suite": "batches"}, "timeout": 120}}
    specs = [{"script": quick_script(url, n), "labels": {"n": str(n)}} for n in range(200)]
    status, record = submit_batch(ops, [header, *specs], jsonl=True)
    assert status == 201, record
    assert record["total"] == 200 and record["state"] == "running"

    final = wait_completed(ops, record["id"])
    assert final["counts"] == {**dict.fromkeys(COUNTERS, 0), "succeeded": 200}
    assert final["done"] == 200 and final["progress"] == 1.0

    lines = results(ops, record["id"])
    assert len(lines) == 200 and len({line["id"] for line in lines}) == 200
    assert [line["final_answer"] for line in lines] == [f"item {n}" for n in range(200)]
    assert {line["status"] for line in lines} == {"succeeded"} and not any(line["error"] for line in lines)
    job = ops.job(lines[7]["id"])
    assert job["labels"] == {"suite": "batches", "n": "7"} and job["spec"]["timeout"] == 120
    assert sum(ops.redis.llen(key) for key in queue_keys("normal")) == 0  # nothing left behind


def test_one_bad_item_refuses_the_whole_batch(ops: Stack, site: StaticServer) -> None:
    before = ops.redis.zcard("browserd:batches")
    good = {"script": quick_script(site.url("/cdp/basic.html"), 0)}
    bad = {"task": "look around", "options": {"max_steps": 0}}
    status, body = submit_batch(ops, {"jobs": [good, good, good, bad], "defaults": {"priority": "low"}})
    assert status == 422
    assert [f["field"] for f in body["fields"]] == ["jobs[3].options.max_steps"]
    status, body = submit_batch(ops, [good, {"script": [{"no_such_action": {}}]}])
    assert status == 422 and body["fields"][0]["field"] == "jobs[1].script"
    status, body = ops.call("POST", "/v1/batches", raw=b'{"task": "a"}\n{"task": ')
    assert status == 422 and body["fields"][0]["field"] == "line 2"
    assert ops.redis.zcard("browserd:batches") == before  # nothing was created


def test_cancel_a_batch(ops: Stack, site: StaticServer) -> None:
    specs = [{"script": quick_script(site.url("/cdp/basic.html"), n, waits=4)} for n in range(40)]
    status, record = submit_batch(ops, specs)
    assert status == 201
    from tests.queue.stack import wait_until

    wait_until(lambda: batch(ops, record["id"])["counts"]["running"] > 0, 120, "a job of the batch to start")
    status, cancelled = ops.call("POST", f"/v1/batches/{record['id']}/cancel")
    assert status == 202 and cancelled["cancel_requested"]

    final = wait_completed(ops, record["id"], timeout=120)
    counts = final["counts"]
    assert counts["succeeded"] + counts["failed"] + counts["cancelled"] == 40
    assert counts["cancelled"] >= 30  # the queued ones at once, the running ones before their next action
    assert counts["queued"] == counts["running"] == 0
    statuses = [line["status"] for line in results(ops, record["id"])]
    assert statuses.count("cancelled") == counts["cancelled"] and len(statuses) == 40


def test_unknown_batch_is_404(ops: Stack) -> None:
    assert ops.call("GET", "/v1/batches/" + "0" * 32)[0] == 404
    assert ops.call("POST", "/v1/batches/nope/cancel")[0] == 404
    assert ops.call("GET", "/v1/batches/" + "0" * 32 + "/results")[0] == 404
