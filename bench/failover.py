"""A batch across a Redis Sentinel fail-over: every job ends, once (issue 26).

``python -m bench.failover [--jobs 60]`` starts a master, a replica and three ``redis-sentinel``
processes on loopback (``tests/support/sentinel``: the master judged down after 1 s), the API, one
worker and beat on ``BROWSERD_REDIS_URL=sentinel://...``, and a page server. It submits a batch of
short script jobs, each opening its own page, and once a few have finished it kills the master with
``kill -9``. Then it waits (bounded) for the batch to settle and prints one JSON line:

``{"jobs", "final", "stuck", "ran_twice", "failover_seconds", "api_unavailable_seconds"}``

``failover_seconds``: from the kill until the sentinels name the promoted replica.
``api_unavailable_seconds``: from the kill until ``GET /v1/batches/{id}`` answers 200 again.
``ran_twice``: jobs whose event stream shows two final states or a second ``running`` without
``retrying`` between, or whose page the site served more than once. The target is ``stuck`` 0 and
``ran_twice`` 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from typing import Any

from bench.chaos import call, collect_finals, ran_twice, states_of
from tests.queue.stack import Stack
from tests.support.sentinel import SentinelGroup
from tests.support.servers import VisitRecorder

SETTINGS = dict(job_timeout=30, visibility_timeout=40, reconcile_interval=2, stale_job_seconds=8,
                orphan_job_seconds=5, metrics_port=0, log_level="INFO")
SETTLE_SECONDS = 300.0


def script(url: str) -> list[dict[str, Any]]:
    return [{"go_to_url": {"url": url}}, {"wait": {"seconds": 1}}, {"done": {"text": url.rsplit("/", 1)[1]}}]


def run(s: Stack, group: SentinelGroup, site: VisitRecorder, jobs: int) -> dict[str, Any]:
    s.start_api()
    s.start_worker(4)
    s.start_beat()
    batch_jobs = [{"script": script(site.url(f"/job/{n}"))} for n in range(jobs)]
    status, batch = s.call("POST", "/v1/batches", {"jobs": batch_jobs})
    assert status == 201, (status, batch)
    path = f"/v1/batches/{batch['id']}"
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline and int((call(s, "GET", path) or {}).get("done") or 0) < max(2, jobs // 10):
        time.sleep(0.2)

    killed = time.monotonic()
    group.kill_master()
    failover = group.wait_failover()
    while time.monotonic() < deadline and call(s, "GET", path) is None:
        time.sleep(0.05)
    unavailable = time.monotonic() - killed

    job_ids = list(s.redis.lrange(f"browserd:batch:{batch['id']}:jobs", 0, -1))
    finals: dict[str, str] = {}
    while time.monotonic() < deadline:
        collect_finals(s, job_ids, finals)
        if len(finals) == len(job_ids):
            break
        time.sleep(0.5)
    served = collections.Counter(p for p, _ in site.visits)
    twice = [j for j in job_ids if ran_twice(states_of(s, j))]
    pages_twice = sum(1 for count in served.values() if count > 1)
    return {
        "jobs": len(job_ids),
        "final": len(finals),
        "stuck": len(job_ids) - len(finals),
        "ran_twice": max(len(twice), pages_twice),
        "failover_seconds": round(failover, 2),
        "api_unavailable_seconds": round(unavailable, 2),
        "succeeded": sum(1 for st in finals.values() if st == "succeeded"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=60, help="jobs in the batch")
    args = parser.parse_args()
    with VisitRecorder() as site:
        group = SentinelGroup()
        s = Stack(backend=group, **SETTINGS)
        try:
            result = run(s, group, site, args.jobs)
        finally:
            s.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
