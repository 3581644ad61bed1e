"""Two hosts, simulated: two workers, each with its own browser pool and its own scratch folder
(``TMPDIR``: Chrome's profiles, downloads), sharing only Redis and the artifact store on S3 (moto's
server, a process of its own), and the API on a third process. Mid-batch one worker's whole process
tree is killed with SIGKILL, as when its host dies; every job of the batch still finishes exactly
once, and each one's artifacts, written by whichever host ran it, are readable through the API."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from tests.queue.stack import Proc, Stack, running, script, stack, tree_of, wait_until
from tests.support.procs import RUN_DIR
from tests.support.s3_server import BUCKET, S3Server
from tests.support.servers import StaticServer

JOBS = 10
STEPS = 5  # go_to_url, three waits, done: one screenshot each


@pytest.fixture(scope="module")
def deploy(s3: S3Server) -> Iterator[Stack]:
    with stack(job_timeout=60, visibility_timeout=120, artifacts_url=f"s3://{BUCKET}/artifacts", reconcile_interval=1,
               stale_job_seconds=5, max_attempts=3, env=s3.env) as s:
        yield s


def host(name: str) -> dict[str, str]:
    """A host's own scratch space: nothing of one worker's is on the other's disk."""
    scratch = os.path.join(RUN_DIR, name)
    os.makedirs(scratch, exist_ok=True)
    return {"TMPDIR": scratch}


def states(s: Stack, job_id: str) -> list[str]:
    return [data["state"] for kind, data in s.events(job_id) if kind == "state"]


def kill_host(worker: Proc) -> list[int]:
    """SIGKILL the worker's whole process tree at once (the worker, its side consumer, its Chrome)."""
    family = tree_of(worker)
    for pid in family:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    worker.popen.wait()
    return family


def test_a_host_dies_mid_batch_and_every_job_finishes_once(deploy: Stack, s3: S3Server, site: StaticServer) -> None:
    host_a = deploy.start_worker(2, env=host("host-a"))
    host_b = deploy.start_worker(2, env=host("host-b"))
    specs = [{"script": script(site.url("/cdp/basic.html"), waits=3, text=f"job {n}"), "labels": {"n": str(n), "fleet": "two-hosts"},
              "artifacts": {"screenshots": "every_step"}} for n in range(JOBS)]
    status, batch = deploy.call("POST", "/v1/batches", specs)
    assert status == 201, batch
    status, listed = deploy.call("GET", f"/v1/jobs?label=fleet=two-hosts&limit={JOBS + 1}")
    assert status == 200
    ids = [job["id"] for job in listed["jobs"]]
    assert len(ids) == JOBS

    def a_under_way() -> list[str] | None:
        jobs = [deploy.job(job_id) for job_id in ids]
        on_a = [j["id"] for j in jobs if j["state"] == "running" and j["progress"]["step"] >= 1
                and deploy.worker_of(j) is host_a]
        return on_a or None

    lost = wait_until(a_under_way, 120, "a job under way on host A", interval=0.05)
    for job_id in lost:  # someone watches them in the console: the API lists what host A wrote so far
        wait_until(lambda job_id=job_id: deploy.call("GET", f"/v1/jobs/{job_id}/artifacts")[1], 30,
                   f"host A's first screenshot of {job_id}")
    family = kill_host(host_a)
    wait_until(lambda: not any(running(pid) for pid in family), 15, "host A's processes to be gone")

    wait_until(lambda: deploy.call("GET", f"/v1/batches/{batch['id']}")[1]["state"] == "completed", 240,
               "the batch to complete on host B")
    status, summary = deploy.call("GET", f"/v1/batches/{batch['id']}")
    assert summary["counts"]["succeeded"] == JOBS, summary
    retried: set[str] = set()
    for job_id in ids:
        done = deploy.job(job_id)
        n = int(done["labels"]["n"])
        assert done["state"] == "succeeded" and done["result"]["final_answer"] == f"job {n}", done
        history = states(deploy, job_id)
        assert history.count("succeeded") == 1 and history[-1] == "succeeded", history  # finished once
        if done["attempts"] == 2:  # the host died under it: sent again, run from the start on host B (the jobs
            # watched under way, and any host A started while the test waited for their screenshots)
            assert history == ["queued", "running", "retrying", "running", "succeeded"], history
            assert deploy.worker_of(done) is host_b
            retried.add(job_id)
        else:  # a job host A had finished, or B ran: once
            assert done["attempts"] == 1 and history == ["queued", "running", "succeeded"], history
        status, listing = deploy.call("GET", f"/v1/jobs/{job_id}/artifacts")
        assert status == 200
        assert [a["name"] for a in listing] == [f"step-00{i}.jpg" for i in range(1, STEPS + 1)], listing
        for artifact in listing:
            status, _, body = deploy.fetch(artifact["url"])
            assert status == 200 and body[:3] == b"\xff\xd8\xff" and len(body) == artifact["size"]
    # every job host A held when it died was run again, and no other: A runs at most its 2 slots at once
    assert set(lost) <= retried and len(retried) <= 2, (lost, retried)
    assert {deploy.worker_of(deploy.job(job_id)).name for job_id in ids} <= {host_a.name, host_b.name}
    assert len(s3.keys(f"{BUCKET}/artifacts/jobs")) >= JOBS * STEPS
