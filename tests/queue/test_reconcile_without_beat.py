"""A stack of API + workers, without ``browserd beat``, recovers by itself (issue 25, item 5).

The reconciler used to be sent only by ``browserd beat`` (and run once when a worker started), so in
a deployment that ran no beat a job whose worker died, or that was abandoned at its hard limit,
stayed ``running`` forever and its batch and webhooks waited on it. Now every worker runs the
reconciler, one pass per interval across the fleet under a Redis lock.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.queue.stack import Stack, script, stack, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e

SETTINGS = dict(job_timeout=60, visibility_timeout=3600,  # the broker itself never redelivers within the test
                reconcile_interval=1, stale_job_seconds=5, max_attempts=3)


@pytest.fixture(scope="module")
def no_beat() -> Iterator[Stack]:
    with stack(**SETTINGS) as s:
        s.start_worker(1)
        s.start_worker(1)
        yield s


def test_a_job_left_by_a_dead_worker_is_run_again_without_beat(no_beat: Stack, site: StaticServer) -> None:
    job = no_beat.submit({"script": script(site.url("/cdp/basic.html"), waits=15, text="recovered")})
    running = no_beat.wait_state(job["id"], {"running"}, timeout=60)
    dead = no_beat.worker_of(running)
    dead.kill9()  # its heartbeat stops; no broker redelivery, no beat: only the workers' reconciler

    done = no_beat.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=120)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "recovered", done
    assert done["attempts"] == 2 and done["worker"] != dead.node, done
    assert not any("beat" in proc.name for proc in no_beat.workers)


def test_one_pass_at_a_time_across_workers(no_beat: Stack) -> None:
    """Every worker looks every half interval, yet the fleet takes one pass per interval: the 'due'
    key each pass sets lives one interval, and the lock is free between passes."""
    wait_until(lambda: no_beat.redis.exists("browserd:reconciler:due"), 30, "a worker to take a pass")
    assert 0 < no_beat.redis.pttl("browserd:reconciler:due") <= 1000
