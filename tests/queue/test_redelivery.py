"""Workers killed with SIGKILL mid-job: the job is redelivered and runs once more, or fails as
worker_lost after the cap; the killed worker's Chrome never outlives it.

Redelivery with the Redis broker waits for the visibility timeout, so these stacks use a short one
(and a job timeout short enough to stay below it, as browserd requires).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.queue.stack import Proc, Stack, running, script, stack, tree_of, wait_until
from tests.support.servers import StaticServer
from workers.jobs.artifacts.store import ArtifactStore

MAX_ATTEMPTS = 2


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=8, visibility_timeout=15, max_attempts=MAX_ATTEMPTS) as s:
        yield s


def kill_mid_job(s: Stack, job_id: str, attempt: int) -> Proc:
    """SIGKILL the worker running ``attempt`` of the job once it is past its first step."""
    def mid_job() -> dict[str, Any] | None:
        job = s.job(job_id)
        ok = job["state"] == "running" and job["attempts"] == attempt and job["progress"]["step"] >= 1
        return job if ok else None

    job = wait_until(mid_job, 60, f"attempt {attempt} of job {job_id} to be under way", interval=0.05)
    worker = s.worker_of(job)
    family = tree_of(worker)
    assert len(family) > 1, "the worker's Chrome should run under it"
    profiles = chrome_profiles(family)
    worker.kill9()
    wait_until(lambda: not any(running(pid) for pid in family), 15, "the killed worker's Chrome to exit")
    for profile in profiles:  # nobody was left to delete them
        shutil.rmtree(profile, ignore_errors=True)
        Path(profile + ".stderr").unlink(missing_ok=True)
    return worker


def chrome_profiles(pids: list[int]) -> set[str]:
    found = set()
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found |= {a.decode().split("=", 1)[1] for a in args if a.startswith(b"--user-data-dir=")}
    return found


def states(s: Stack, job_id: str) -> list[str]:
    return [data["state"] for kind, data in s.events(job_id) if kind == "state"]


def test_a_job_whose_worker_is_killed_is_redelivered_and_completes_once(deploy: Stack, site: StaticServer) -> None:
    deploy.start_worker(2)
    job = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=3, text="survived"),
                         "artifacts": {"screenshots": "every_step"}})
    killed = kill_mid_job(deploy, job["id"], attempt=1)
    folder = ArtifactStore.open(deploy.env["BROWSERD_ARTIFACTS_URL"]).job(job["id"])
    folder.put("step-009.jpg", b"left by the lost attempt")
    second = deploy.start_worker(2)

    done = deploy.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=90)
    assert done["state"] == "succeeded", done["error"]
    assert done["attempts"] == 2
    assert done["result"]["final_answer"] == "survived"
    assert deploy.worker_of(done) is second and killed is not second
    assert states(deploy, job["id"]) == ["queued", "running", "retrying", "running", "succeeded"]
    steps = done["result"]["steps"]
    assert [s["actions"][0]["name"] for s in steps] == ["go_to_url", "wait", "wait", "wait", "done"], (
        "the redelivered run starts over and its result holds only its own steps"
    )
    assert [a.name for a in folder.list()] == [f"step-00{n}.jpg" for n in range(1, 6)], "and only its artifacts"


def test_a_job_that_kills_its_worker_every_time_ends_worker_lost(deploy: Stack, site: StaticServer) -> None:
    job = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=3)})
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if not any(w.alive for w in deploy.workers):
            deploy.start_worker(2)
        kill_mid_job(deploy, job["id"], attempt)
    deploy.start_worker(2)

    done = deploy.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=90)
    assert done["state"] == "failed" and done["category"] == "worker_lost"
    assert done["attempts"] == MAX_ATTEMPTS
    assert "giving up after 2 attempt(s)" in done["error"]
    assert states(deploy, job["id"]) == ["queued", "running", "retrying", "running", "retrying", "failed"]
    assert done["result"] is None
