"""Redis that fails over (issue 26): browserd on a Sentinel URL rides out the master's ``kill -9``.

A master, a replica and three ``redis-sentinel`` processes on loopback (``tests/support/sentinel``),
the API, a worker and beat pointed at the sentinels (``BROWSERD_REDIS_URL=sentinel://...``); a batch
of script jobs runs, and the master is killed with SIGKILL mid-batch. The sentinels promote the
replica; the batch completes, no job runs twice (by its event stream, and by the site: each job opens
its own page, which must be asked for once), the API answers again, and a schedule made after the
fail-over fires (RedBeat reaches the new master through the sentinels, in the API and in beat).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.queue.stack import Stack, wait_until
from tests.support.sentinel import SentinelGroup
from tests.support.servers import VisitRecorder

pytestmark = pytest.mark.e2e

FINAL = {"succeeded", "failed", "cancelled"}
JOBS = 16
SETTINGS = dict(job_timeout=30, visibility_timeout=40, reconcile_interval=2, stale_job_seconds=8,
                orphan_job_seconds=5, metrics_port=0)


@contextlib.contextmanager
def sentinel_stack() -> Iterator[Stack]:
    group = SentinelGroup()
    s = Stack(backend=group, **SETTINGS)
    try:
        s.start_api()
        yield s
    finally:
        s.close()


def job_script(url: str) -> list[dict[str, Any]]:
    return [{"go_to_url": {"url": url}}, {"wait": {"seconds": 1}}, {"done": {"text": url.rsplit("/", 1)[1]}}]


def answer(s: Stack, path: str) -> Any:
    """The API's 200 answer, or None while it (or Redis) is away."""
    with contextlib.suppress(Exception):
        status, body = s.call("GET", path)
        if status == 200:
            return body
    return None


def states(s: Stack, job_id: str) -> list[str]:
    return [e["state"] for kind, e in s.events(job_id) if kind == "state"]


def ran_twice(seen: list[str]) -> bool:
    """Two final states, or a second ``running`` with no ``retrying`` (the previous run declared lost) between."""
    return sum(1 for st in seen if st in FINAL) > 1 or any(a == b == "running" for a, b in zip(seen, seen[1:]))


def test_a_batch_completes_once_across_a_sentinel_failover() -> None:
    with VisitRecorder() as site, sentinel_stack() as s:
        group = s.backend
        assert isinstance(group, SentinelGroup) and s.env["BROWSERD_REDIS_URL"].startswith("sentinel://")
        s.start_worker(concurrency=4)
        beat = s.start_beat()
        jobs = [{"script": job_script(site.url(f"/job/{n}"))} for n in range(JOBS)]
        status, batch = s.call("POST", "/v1/batches", {"jobs": jobs})
        assert status == 201, (status, batch)

        def some_done() -> bool:
            record = answer(s, f"/v1/batches/{batch['id']}") or {}
            return int(record.get("done") or 0) >= 2

        wait_until(some_done, 180, "the batch's first jobs to finish", interval=0.2)
        group.kill_master()  # kill -9, mid-batch
        group.wait_failover()
        assert group.master_port() == group.replica.port

        # the API answers again once the sentinels name the new master
        wait_until(lambda: answer(s, f"/v1/batches/{batch['id']}"), 60, "the API to answer after the fail-over")

        def completed() -> dict[str, Any] | None:
            record = answer(s, f"/v1/batches/{batch['id']}")
            return record if record and record["state"] == "completed" else None

        record = wait_until(completed, 240, "the batch to complete after the fail-over", interval=0.5)
        job_ids = s.redis.lrange(f"browserd:batch:{batch['id']}:jobs", 0, -1)
        found = {job_id: s.job(job_id) for job_id in job_ids}
        assert len(found) == JOBS and all(j["state"] == "succeeded" for j in found.values()), record
        doubled = [job_id for job_id in found if ran_twice(states(s, job_id))]
        assert doubled == [], doubled
        visits = [path for path, _ in site.visits if path.startswith("/job/")]
        assert sorted(visits) == sorted(f"/job/{n}" for n in range(JOBS)), visits

        # RedBeat on the new master: the API saves a schedule through the sentinels, beat fires it
        status, made = s.call("POST", "/v1/schedules", {"every": 2, "job": {"script": job_script(site.url("/tick"))}})
        assert status == 201, made
        wait_until(lambda: any(path == "/tick" for path, _ in site.visits), 120,
                   f"the schedule to fire after the fail-over ({beat.log_path})", interval=0.5)
        assert s.call("DELETE", f"/v1/schedules/{made['id']}")[0] in (200, 204)
