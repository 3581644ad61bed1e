"""Jobs end to end through the API: real redis-server, two real Celery worker processes, real Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.queue.stack import ROOT, Stack, script, stack, wait_until
from tests.support.servers import StaticServer

CONCURRENCY = 4


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=60, visibility_timeout=120) as s:
        s.start_worker(CONCURRENCY)
        s.start_worker(CONCURRENCY)
        yield s


def idle(s: Stack) -> None:
    """Wait until no job is queued or running, so tests do not see each other's jobs."""
    def quiet() -> bool:
        _, running = s.call("GET", "/v1/jobs?state=running&limit=1")
        _, queued = s.call("GET", "/v1/jobs?state=queued&limit=1")
        return not running["jobs"] and not queued["jobs"]

    wait_until(quiet, 120, "the workers to go idle")


def test_30_script_jobs_over_2_workers_all_succeed(deploy: Stack, site: StaticServer) -> None:
    jobs = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=1, text=f"ok {i}"),
                           "labels": {"suite": "thirty"}}) for i in range(30)]
    assert all(j["created"] and j["state"] in ("queued", "running") for j in jobs)
    done = [deploy.wait_state(j["id"], {"succeeded", "failed", "cancelled"}, timeout=180) for j in jobs]

    assert [d["state"] for d in done] == ["succeeded"] * 30, [d.get("error") for d in done]
    assert [d["result"]["final_answer"] for d in done] == [f"ok {i}" for i in range(30)]
    assert all(d["attempts"] == 1 and d["progress"]["step"] == d["progress"]["max_steps"] == 3 for d in done), [
        (d["attempts"], d["progress"]) for d in done]
    assert len({d["worker"] for d in done}) == 2, "both worker processes should have run jobs"
    _, page = deploy.call("GET", "/v1/jobs?label=suite=thirty&state=succeeded&limit=200")
    assert {j["id"] for j in page["jobs"]} == {j["id"] for j in jobs}


def test_cancel_a_running_job_and_a_queued_one(deploy: Stack, site: StaticServer) -> None:
    idle(deploy)
    long = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=30)}) for _ in range(2 * CONCURRENCY)]
    for job in long:
        deploy.wait_state(job["id"], {"running"})
    queued = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=0)})
    assert deploy.job(queued["id"])["state"] == "queued"

    status, cancelled = deploy.call("POST", f"/v1/jobs/{queued['id']}/cancel")
    assert status == 202 and cancelled["state"] == "cancelled"

    status, requested = deploy.call("POST", f"/v1/jobs/{long[0]['id']}/cancel")
    assert status == 202 and requested["state"] == "running" and requested["cancel_requested"]
    stopped = deploy.wait_state(long[0]["id"], {"cancelled", "succeeded", "failed"}, timeout=20)
    assert stopped["state"] == "cancelled"
    assert stopped["progress"]["step"] < 32, "the job should stop before running every step"
    kinds = [kind for kind, _ in deploy.events(long[0]["id"])]
    assert "cancel_requested" in kinds and kinds[-2:] == ["state", "end"]

    for job in long[1:]:
        deploy.call("POST", f"/v1/jobs/{job['id']}/cancel")
    idle(deploy)
    never = deploy.job(queued["id"])
    assert never["state"] == "cancelled" and never["attempts"] == 0 and never["started_at"] is None
    status, again = deploy.call("POST", f"/v1/jobs/{queued['id']}/cancel")
    assert status == 409 and "already finished" in again["message"]


def test_high_priority_jobs_run_before_low_ones(deploy: Stack, site: StaticServer) -> None:
    idle(deploy)
    blockers = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=3)}) for _ in range(2 * CONCURRENCY)]
    for job in blockers:
        deploy.wait_state(job["id"], {"running"})
    low = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=0), "priority": "low"}) for _ in range(3)]
    high = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=0), "priority": "high"})
    finished = [deploy.wait_state(j["id"], {"succeeded"}, timeout=60) for j in [*low, high]]
    high_start = finished[-1]["started_at"]
    assert all(high_start < j["started_at"] for j in finished[:-1]), [j["started_at"] for j in finished]


def test_same_idempotency_key_gives_the_same_job(deploy: Stack, site: StaticServer) -> None:
    spec = {"script": script(site.url("/cdp/basic.html"), waits=0), "idempotency_key": "order-42"}
    status1, first = deploy.call("POST", "/v1/jobs", spec)
    status2, second = deploy.call("POST", "/v1/jobs", spec)
    assert (status1, first["created"]) == (201, True)
    assert (status2, second["created"]) == (200, False)
    assert second["id"] == first["id"]
    deploy.wait_state(first["id"], {"succeeded"})
    status3, third = deploy.call("POST", "/v1/jobs", spec)
    assert status3 == 200 and third["id"] == first["id"] and third["state"] == "succeeded"


def test_events_stream_live_until_the_job_ends(deploy: Stack, site: StaticServer) -> None:
    job = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=2)})
    seen: list[tuple[str, dict[str, Any]]] = []

    def follow() -> None:
        from daemon.client import Client
        from tests.queue.stack import TOKEN

        seen.extend((event.type, event.data) for event in Client(deploy.url, TOKEN).events(job["id"]))

    reader = threading.Thread(target=follow)
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "the event stream should end when the job does"
    kinds = [k for k, _ in seen]
    states = [d["state"] for k, d in seen if k == "state"]
    assert states == ["queued", "running", "succeeded"]
    assert kinds.count("step") == 4 and kinds[-1] == "end"
    steps = [d for k, d in seen if k == "step"]
    assert [s["actions"][0]["name"] for s in steps] == ["go_to_url", "wait", "wait", "done"]
    assert steps[0]["url"].endswith("/cdp/basic.html")


def test_list_filters_and_pages(deploy: Stack, site: StaticServer) -> None:
    ids = [deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=0), "labels": {"page": "yes"}})["id"]
           for _ in range(5)]
    seen, cursor = [], None
    while True:
        _, page = deploy.call("GET", "/v1/jobs?label=page=yes&limit=2" + (f"&cursor={cursor}" if cursor else ""))
        seen += [j["id"] for j in page["jobs"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids)), "newest first, each job once"
    status, err = deploy.call("GET", "/v1/jobs?label=nonsense")
    assert status == 422 and err["fields"][0]["field"] == "label"


def cli(s: Stack, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=s.env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_cli_submit_wait_status_watch_jobs_cancel(deploy: Stack, site: StaticServer, tmp_path: Any) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script(site.url("/cdp/basic.html"), waits=1, text="from the cli")))
    run = cli(deploy, "submit", "--script", str(path), "--label", "via=cli", "--wait")
    assert run.returncode == 0, run.stderr
    assert "answer: from the cli" in run.stdout and "succeeded" in run.stdout
    assert "step 2: wait" in run.stderr and "state: succeeded" in run.stderr
    job_id = run.stdout.split()[0]

    status = cli(deploy, "status", job_id, "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["result"]["final_answer"] == "from the cli"
    watch = cli(deploy, "watch", job_id)
    assert watch.returncode == 0 and "state: running" in watch.stdout and "answer: from the cli" in watch.stdout
    listing = cli(deploy, "jobs", "--label", "via=cli")
    assert listing.returncode == 0 and job_id in listing.stdout
    cancel = cli(deploy, "cancel", job_id)
    assert cancel.returncode == 1 and "already finished" in cancel.stderr

    queued = cli(deploy, "submit", "--script", str(path), "--priority", "low")
    assert queued.returncode == 0
    missing = cli(deploy, "status", "no-such-job")
    assert missing.returncode == 1 and "no job with id" in missing.stderr
    bad = cli(deploy, "submit", "do something", "--start-url", "not a url")
    assert bad.returncode == 1 and "start_url" in bad.stderr
