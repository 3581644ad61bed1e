"""Celery's own revoke cancels the job, as ``browserd cancel`` does (issue 25, item 3).

``celery control revoke`` of a queued job used to drop its message and leave the job ``queued``
(the reconciler then published it again and it ran); of a running job (without terminate) it did
nothing; with terminate (Flower's Terminate, ``celery control terminate``) the threads pool raised ``NotImplementedError
... does not implement kill_job`` and the job ran to its end. Here the real ``celery`` CLI revokes
tasks of a real worker, by the task ids Flower shows (a batch job's is its job id as a UUID).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from uuid import UUID

import pytest

from tests.batches.helpers import submit_batch
from tests.queue.stack import ROOT, Stack, script, stack
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e

FINAL = {"succeeded", "failed", "cancelled"}


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=150, visibility_timeout=3600, reconcile_interval=1, orphan_job_seconds=2) as s:
        s.start_worker(1)
        yield s


def one_job(s: Stack, spec: dict) -> str:
    status, body = submit_batch(s, {"jobs": [spec]})
    assert status == 201, body
    return s.redis.lrange(f"browserd:batch:{body['id']}:jobs", 0, -1)[0]


def task_of(job_id: str) -> str:
    """The Celery task id of a batch job, as Flower and ``celery inspect`` show it."""
    return str(UUID(job_id))


def celery(s: Stack, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "celery", "-A", "workers.celery_app", *args], env=s.env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_revoke_cancels_a_running_job_and_a_queued_one(deploy: Stack, site: StaticServer) -> None:
    running = one_job(deploy, {"script": script(site.url("/cdp/basic.html"), waits=90, text="ran on")})
    deploy.wait_state(running, {"running"}, timeout=60)
    queued = one_job(deploy, {"script": script(site.url("/cdp/basic.html"), waits=0, text="ran anyway")})
    assert deploy.job(queued)["state"] == "queued"  # the worker's one slot is taken

    celery(deploy, "control", "revoke", task_of(queued))
    celery(deploy, "control", "revoke", task_of(running))

    stopped = deploy.wait_state(running, FINAL, timeout=60)
    assert stopped["state"] == "cancelled", stopped
    never = deploy.wait_state(queued, FINAL, timeout=60)
    assert never["state"] == "cancelled" and never["started_at"] is None and never["attempts"] == 0, never
    # the reconciler (every second here) must not publish the revoked job again
    deploy.wait_state(one_job(deploy, {"script": script(site.url("/cdp/basic.html"), waits=2)}), FINAL, timeout=60)
    assert deploy.job(queued)["state"] == "cancelled" and deploy.job(queued)["started_at"] is None


def test_revoke_with_terminate_cancels_a_running_job(deploy: Stack, site: StaticServer) -> None:
    """What Flower's Terminate sends (a revoke with terminate); the CLI spells it ``control terminate``."""
    job_id = one_job(deploy, {"script": script(site.url("/cdp/basic.html"), waits=90, text="ran on")})
    deploy.wait_state(job_id, {"running"}, timeout=60)
    out = celery(deploy, "control", "terminate", "SIGTERM", task_of(job_id))

    done = deploy.wait_state(job_id, FINAL, timeout=60)
    assert done["state"] == "cancelled", (done, out)
    log = deploy.workers[0].log(1_000_000)
    assert "does not implement kill_job" not in log and "NotImplementedError" not in log + out, log[-3000:]


def test_browserd_queue_purge_cancels_every_queued_job_and_only_those(deploy: Stack, site: StaticServer) -> None:
    """What ``celery purge`` does not do (the reconciler publishes purged jobs again)."""
    running = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=90, text="ran on")})["id"]
    deploy.wait_state(running, {"running"}, timeout=60)
    queued = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=0, text=f"q{n}")})["id"]
              for n in range(3)]

    def browserd(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "daemon", *args], env=deploy.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)

    bad = browserd("queue")
    assert bad.returncode == 2 and "purge" in bad.stderr, bad.stderr
    purged = browserd("queue", "purge")
    assert purged.returncode == 0 and "cancelled 3 queued jobs" in purged.stdout, purged.stdout + purged.stderr
    for job_id in queued:
        job = deploy.job(job_id)
        assert job["state"] == "cancelled" and job["started_at"] is None, job
    assert deploy.job(running)["state"] == "running"
    assert browserd("cancel", running).returncode == 0
    assert deploy.wait_state(running, FINAL, timeout=60)["state"] == "cancelled"
