"""Celery's own tools agree with the job store (issue 25, items 6 and 7).

Flower showed a single submit as a task with a random id, a job re-sent after its worker died as a
new task with ``retries: 0``, a job cancelled while queued as SUCCESS, a purged or killed task as
PENDING or STARTED forever; and it named workers ``w1@ops`` where the job's record said
``vm:18849:f7a400``. Here Celery's own result backend is read through Celery's ``AsyncResult`` (what
Flower's task API and ``celery result`` read), and the worker's name through ``celery inspect``
and the API's ``/metrics``, on a real stack.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from celery import Celery

from tests.queue.stack import ROOT, Stack, script, stack, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e

FINAL = {"succeeded", "failed", "cancelled"}
SETTINGS = dict(job_timeout=60, visibility_timeout=3600, reconcile_interval=1, stale_job_seconds=5, max_attempts=3,
                orphan_job_seconds=2)


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(**SETTINGS) as s:
        s.start_worker(1)
        yield s


@pytest.fixture(scope="module")
def celery_app(deploy: Stack) -> Iterator[Celery]:
    url = deploy.env["BROWSERD_REDIS_URL"]
    app = Celery("flower-like", broker=url, backend=url)
    app.conf.result_extended = True
    yield app
    app.close()


def task(app: Celery, job_id: str) -> Any:
    """The job's Celery task as Celery's tools see it: its task id is the job id."""
    return app.AsyncResult(str(UUID(job_id)))


def settles(app: Celery, job_id: str, state: str) -> Any:
    """The job's task once it reaches ``state``: the task states the job's end after recording it."""
    def reached() -> Any:
        result = task(app, job_id)
        return result if result.state == state else None
    return wait_until(reached, 30, f"the task of job {job_id} to be {state} (is {task(app, job_id).state})")


def celery(s: Stack, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "celery", "-A", "workers.celery_app", *args], env=s.env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_one_task_per_job_ending_as_the_store_says(deploy: Stack, celery_app: Celery, site: StaticServer) -> None:
    page = site.url("/cdp/basic.html")
    done = deploy.wait_state(deploy.submit({"script": script(page, waits=0, text="single")})["id"], FINAL)
    assert done["state"] == "succeeded"
    settles(celery_app, done["id"], "SUCCESS")  # a single submit's task id is its job id too

    timed_out = deploy.wait_state(deploy.submit({"script": script(page, waits=5), "timeout": 2})["id"], FINAL)
    assert timed_out["state"] == "failed"
    settles(celery_app, timed_out["id"], "FAILURE")

    holder = deploy.submit({"script": script(page, waits=8, text="held the slot")})
    deploy.wait_state(holder["id"], {"running"})
    queued = deploy.submit({"script": script(page, waits=0, text="never")})
    assert deploy.job(queued["id"])["state"] == "queued"  # the worker's one slot is taken
    status, _ = deploy.call("POST", f"/v1/jobs/{queued['id']}/cancel")
    assert status == 202 and deploy.job(queued["id"])["state"] == "cancelled"
    assert task(celery_app, queued["id"]).state == "REVOKED"  # at once, before any worker meets its message

    running = deploy.submit({"script": script(page, waits=30, text="cut short")})
    deploy.wait_state(holder["id"], FINAL)
    deploy.wait_state(running["id"], {"running"})
    assert task(celery_app, running["id"]).state == "STARTED"
    deploy.call("POST", f"/v1/jobs/{running['id']}/cancel")
    assert deploy.wait_state(running["id"], FINAL)["state"] == "cancelled"
    settles(celery_app, running["id"], "REVOKED")
    # the worker met the cancelled job's message after its slot freed: still REVOKED, not SUCCESS
    assert task(celery_app, queued["id"]).state == "REVOKED"
    assert deploy.job(queued["id"])["started_at"] is None


def test_a_resent_attempt_is_a_retry_of_the_same_task_on_a_worker_named_as_celery_names_it(
        deploy: Stack, celery_app: Celery, site: StaticServer) -> None:
    deploy.start_worker(1)
    job = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=12, text="recovered")})
    first_run = deploy.wait_state(job["id"], {"running"})
    dead = deploy.worker_of(first_run)
    assert task(celery_app, job["id"]).state == "STARTED"
    dead.kill9()  # no broker redelivery within the test: the reconciler sends it again

    done = deploy.wait_state(job["id"], FINAL, timeout=120)
    assert done["state"] == "succeeded" and done["attempts"] == 2, done
    result = settles(celery_app, job["id"], "SUCCESS")
    assert result.retries == done["attempts"] - 1 == 1
    # one name: the job's record, Celery's own view of the task, celery inspect and Prometheus
    alive = next(w for w in deploy.workers if w is not dead)
    assert done["worker"] == result.worker == alive.node
    pinged = set(re.findall(r"->\s+(\S+@\S+):", celery(deploy, "inspect", "ping", "--timeout=5")))
    assert done["worker"] in pinged and dead.node not in pinged, pinged
    with urllib.request.urlopen(f"{deploy.url}/metrics", timeout=10) as resp:
        metrics = resp.read().decode()
    assert f'browserd_worker_up{{worker="{done["worker"]}"}} 1.0' in metrics
    # the re-send is counted by the worker whose reconciler made it (issue 25, item 9)
    port = next(deploy.redis.hget(key, "metrics_port") for key in deploy.redis.keys("browserd:worker:*")
                if deploy.redis.hget(key, "node") == alive.node)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        worker_metrics = resp.read().decode()
    assert re.search(r'^browserd_reconciler_jobs_total\{action="resent"\} [1-9]', worker_metrics, re.M), worker_metrics
    assert re.search(r"^browserd_worker_slots 1\.0$", worker_metrics, re.M)


def test_a_purged_task_does_not_stay_pending(deploy: Stack, celery_app: Celery, site: StaticServer) -> None:
    """``celery purge`` drops the message of a queued job; the reconciler publishes the job again
    under the same task id, so Celery's view ends as the job does instead of staying PENDING."""
    page = site.url("/cdp/basic.html")
    # each slot held until the purge is done (then cancelled): `celery purge` took several seconds to start
    holders = [deploy.submit({"script": script(page, waits=55, text="held")}) for w in deploy.workers if w.alive]
    for holder in holders:
        deploy.wait_state(holder["id"], {"running", *FINAL})
    queued = deploy.submit({"script": script(page, waits=0, text="ran after the purge")})
    assert deploy.job(queued["id"])["state"] == "queued"
    purged = celery(deploy, "purge", "-f", "-Q", "high,normal,low")
    assert task(celery_app, queued["id"]).state == "PENDING", purged  # no message, no state yet
    for holder in holders:
        status, _ = deploy.call("POST", f"/v1/jobs/{holder['id']}/cancel")
        assert status == 202

    done = deploy.wait_state(queued["id"], FINAL, timeout=120)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "ran after the purge", done
    settles(celery_app, queued["id"], "SUCCESS")
