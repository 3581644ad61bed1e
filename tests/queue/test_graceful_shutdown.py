"""A worker's graceful shutdown, on the real process (what Kubernetes does to a pod it stops, and
``docker stop``): SIGTERM while jobs run. The worker takes no new job, lets its running jobs finish
within the grace period, hands back what it had taken but not started, and exits 0; no job is lost
and none runs twice. Real redis-server, API, Celery workers and Chromium."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.queue.stack import Stack, running, script, stack, tree_of, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e

FINISHED = {"succeeded", "failed", "cancelled"}
JOB_TIMEOUT = 60
# What `browserd worker` may take after SIGTERM: its running jobs' hard limit (the job timeout + 5 s)
# and its own stop (docker/k8s: the grace period is computed the same way).
GRACE = JOB_TIMEOUT + 5 + 55


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=JOB_TIMEOUT, visibility_timeout=120) as s:
        yield s


def states(s: Stack, job_id: str) -> list[str]:
    return [data["state"] for kind, data in s.events(job_id) if kind == "state"]


def test_sigterm_lets_running_jobs_finish_and_hands_back_the_rest(deploy: Stack, site: StaticServer) -> None:
    first = deploy.start_worker(2)
    jobs = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=4, text=f"job {n}")}) for n in range(6)]
    ids = [job["id"] for job in jobs]

    def two_under_way() -> list[dict[str, Any]] | None:
        now = [deploy.job(job_id) for job_id in ids]
        under_way = [j for j in now if j["state"] == "running" and j["progress"]["step"] >= 1]
        return under_way if len(under_way) == 2 else None

    under_way = wait_until(two_under_way, 90, "two jobs under way on the first worker", interval=0.05)
    family = tree_of(first)
    first.popen.send_signal(signal.SIGTERM)
    assert first.popen.wait(GRACE) == 0, first.log()
    assert not any(running(pid) for pid in family), "its Chrome and side consumer stopped with it"

    for job in under_way:  # the jobs it was running finished there, once
        done = deploy.job(job["id"])
        assert done["state"] == "succeeded", (done["error"], first.log())
        assert done["attempts"] == 1 and deploy.worker_of(done) is first
        assert states(deploy, job["id"]) == ["queued", "running", "succeeded"]
    left = [job_id for job_id in ids if job_id not in {j["id"] for j in under_way}]
    assert all(deploy.job(job_id)["state"] == "queued" for job_id in left), "no new job started during the shutdown"

    second = deploy.start_worker(2)  # what the first had not started goes to the next worker, at once
    for job_id in left:
        done = deploy.wait_state(job_id, FINISHED, timeout=120)
        assert done["state"] == "succeeded", done["error"]
        assert done["attempts"] == 1 and deploy.worker_of(done) is second, done
        assert done["result"]["final_answer"] == f"job {ids.index(job_id)}"
        assert states(deploy, job_id) == ["queued", "running", "succeeded"]
    assert second.alive
