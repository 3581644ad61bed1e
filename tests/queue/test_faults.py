"""Issue 12's faults on a real stack: Redis restarted from its AOF mid-batch, a submitter dying
between record and publish, a worker dying between result and webhooks, a silent job under
``--wait``, webhooks behind a long queue, oversize requests and results, Celery's own view of
failed jobs, and a schema built to freeze a regex engine.

One deployment for the module: redis-server (append-only file on), the API, ``browserd beat``
(which sends the reconciler every 2 s) and one worker with its side consumer of webhooks.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection

from tests.batches.helpers import batch, quick_script, submit_batch, wait_completed
from tests.queue.hooks import Hooks
from tests.queue.stack import ROOT, Stack, stack, wait_until
from tests.support.servers import StaticServer
from workers.jobs.batches.store import BatchStore
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.queue.app import app as celery_app
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore

FINAL = {"succeeded", "failed", "cancelled"}
SETTINGS = dict(
    job_timeout=20, visibility_timeout=30, max_attempts=3, metrics_port=0,
    reconcile_interval=2, stale_job_seconds=15, orphan_job_seconds=3,
    max_request_bytes=65536, max_script_actions=50, max_result_bytes=4800, max_extract_chars=100,
    webhook_allowed_networks="127.0.0.1/32",  # the test receivers listen on loopback
)


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(aof=True, **SETTINGS) as s:
        s.start_worker(3)
        s.start_beat()
        yield s


@pytest.fixture
def hooks() -> Iterator[Hooks]:
    with Hooks() as h:
        yield h


def kernel(s: Stack, work: Any) -> Any:
    """Run ``work(store)`` against the stack's Redis, as a process of the deployment would."""
    async def go() -> Any:
        store = JobStore(connect(s.redis_server.url), result_ttl=3600)
        try:
            return await work(store)
        finally:
            await store.redis.aclose()

    return asyncio.run(go())


def script_job(site: StaticServer, waits: int = 1, text: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"script": quick_script(site.url("/cdp/basic.html"), 0, waits)[:-1] + [{"done": {"text": text}}], **extra}


# --- fault 1: Redis restarts while jobs finish -------------------------------------------------


def test_a_redis_restart_while_jobs_finish_loses_nothing(deploy: Stack, site: StaticServer, hooks: Hooks) -> None:
    jobs = [script_job(site, waits=2, text=f"r{n}", webhook_url=hooks.url) for n in range(3)]
    status, record = submit_batch(deploy, {"jobs": jobs, "webhook_url": hooks.url})
    assert status == 201, record
    ids = [line for line in deploy.redis.lrange(f"browserd:batch:{record['id']}:jobs", 0, -1)]

    def all_mid_job() -> bool:
        return all((j := deploy.job(i))["state"] == "running" and j["progress"]["step"] >= 1 for i in ids)

    wait_until(all_mid_job, 60, "the three jobs to be under way", interval=0.05)
    deploy.redis_server.restart(downtime=10)  # they finish while Redis is away (longer than redis-py's own retries)

    done = wait_completed(deploy, record["id"], timeout=60)
    assert done["counts"]["succeeded"] == 3, done
    assert [deploy.job(i)["attempts"] for i in ids] == [1, 1, 1], "results were recorded, not re-run"
    expected = {f"job.finished:{i}" for i in ids} | {f"batch.finished:{record['id']}"}
    wait_until(lambda: set(hooks.deliveries()) >= expected, 30, "every webhook")
    assert all(hooks.deliveries()[d] == 1 for d in expected), hooks.deliveries()


# --- fault 2: the submitter dies between recording jobs and publishing them --------------------


def test_jobs_recorded_but_never_published_are_published_by_the_reconciler(deploy: Stack, site: StaticServer) -> None:
    spec = JobSpec.model_validate(script_job(site, waits=0, text="orphan", idempotency_key="orphan-1"))
    specs = [JobSpec.model_validate(script_job(site, waits=0, text=f"b{n}")) for n in range(3)]

    async def record_only(store: JobStore) -> tuple[str, str]:
        job_id = (await store.create(spec, max_steps=5)).job_id  # the API died here, before publishing
        made = await BatchStore(store).create(specs, [5, 5, 5])  # ...and here, mid-submit:
        batch_id = made.batch_id
        await store.redis.hincrby(store.keys.batch(batch_id), "total", 2)  # two items never recorded
        return job_id, batch_id

    job_id, batch_id = kernel(deploy, record_only)
    again = deploy.submit(json.loads(spec.model_dump_json(exclude_none=True)))  # the client retries
    assert again["id"] == job_id and again["created"] is False

    done = deploy.wait_state(job_id, FINAL, timeout=45)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "orphan"
    record = wait_completed(deploy, batch_id, timeout=45)
    assert record["total"] == 3 and record["counts"]["succeeded"] == 3, record


def test_a_running_job_whose_message_is_gone_is_sent_again_when_its_heartbeat_stops(deploy: Stack,
                                                                                   site: StaticServer) -> None:
    # fault 1's outcome before the fix: the message was acknowledged while the job stayed running;
    # here its worker dies too, so nothing in the broker would ever run it again
    job_id = deploy.submit(script_job(site, waits=6, text="resent"))["id"]
    job = wait_until(lambda: (j := deploy.job(job_id))["progress"]["step"] >= 1 and j, 60, "the job under way")
    deploy.worker_of(job).kill9()
    deploy.redis.delete("unacked", "unacked_index")  # kombu's record of the delivered message: gone
    deploy.start_worker(3)
    done = deploy.wait_state(job_id, FINAL, timeout=90)  # stale after 15 s, then the reconciler's next pass
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "resent", (done["error"], done["attempts"])
    assert done["attempts"] == 2, "the first attempt was declared lost, then the job ran once more"


# --- fault 3: a worker dies after recording the result, before the finisher --------------------


def test_a_worker_dying_between_result_and_webhooks_leaves_nothing_pending(deploy: Stack, site: StaticServer,
                                                                          hooks: Hooks) -> None:
    status, record = submit_batch(deploy, {"jobs": [script_job(site, waits=6, text="late", webhook_url=hooks.url)],
                                           "webhook_url": hooks.url})
    assert status == 201
    job_id = deploy.redis.lrange(f"browserd:batch:{record['id']}:jobs", 0, -1)[0]
    job = wait_until(lambda: (j := deploy.job(job_id))["progress"]["step"] >= 1 and j, 60, "the job under way")
    worker = deploy.worker_of(job)

    async def record_result(store: JobStore) -> bool:  # what the worker does first when the job ends
        return await store.finish(job_id, job["attempts"], JobResult(status=JobStatus.succeeded, final_answer="late"))

    assert kernel(deploy, record_result)
    worker.kill9()  # ...and then it died, before running the finisher
    assert batch(deploy, record["id"])["state"] == "completed", "the result's own Lua call completed the batch"

    deploy.start_worker(3)
    expected = {f"job.finished:{job_id}", f"batch.finished:{record['id']}"}
    wait_until(lambda: set(hooks.deliveries()) >= expected, 60, "the webhooks the dead worker owed")
    time.sleep(3)
    assert all(hooks.deliveries()[d] == 1 for d in expected), hooks.deliveries()
    assert hooks.of(f"job.finished:{job_id}")[0]["job"]["final_answer"] == "late"


# --- fault 5: watch / --wait through a long silence -------------------------------------------


def cli(deploy: Stack, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "daemon", *args], env=deploy.env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_wait_and_watch_outlast_a_silent_step_and_exit_0_only_for_succeeded(deploy: Stack, site: StaticServer,
                                                                            tmp_path: Path) -> None:
    silent = tmp_path / "silent.json"
    silent.write_text(json.dumps([{"go_to_url": {"url": site.url("/cdp/basic.html")}},
                                  {"wait": {"seconds": 20}}, {"done": {"text": "after the silence"}}]))
    started = time.monotonic()
    # the silent 20 s step (the job may take 24 s here: the module's visibility timeout is 30)
    waiting = cli(deploy, "submit", "--script", str(silent), "--timeout", "24", "--wait")
    victim = deploy.submit({"script": json.loads(silent.read_text())})
    watching = cli(deploy, "watch", victim["id"])
    wait_until(lambda: deploy.job(victim["id"])["state"] == "running", 30, "the watched job to start")
    time.sleep(8)  # past the 5 s that used to end both
    assert waiting.poll() is None and watching.poll() is None, "they must wait for a final state"
    deploy.call("POST", f"/v1/jobs/{victim['id']}/cancel")

    out, err = watching.communicate(timeout=60)
    assert watching.returncode == 1 and "cancelled" in out, (out, err)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, (out, err)
    assert "succeeded" in out and "after the silence" in out
    assert time.monotonic() - started > 20


# --- fault 6: webhooks while jobs are queued --------------------------------------------------


def test_a_webhook_arrives_promptly_while_200_jobs_wait(deploy: Stack, site: StaticServer, hooks: Hooks) -> None:
    status, backlog = submit_batch(deploy, [script_job(site, waits=1, text=f"q{n}") for n in range(200)])
    assert status == 201
    try:
        job = deploy.submit({**script_job(site, waits=0, text="first"), "priority": "high", "webhook_url": hooks.url})
        done = deploy.wait_state(job["id"], FINAL, timeout=60)
        wait_until(lambda: hooks.of(f"job.finished:{job['id']}"), 30, "the webhook, with 200 jobs queued")
        assert done["state"] == "succeeded"
        assert batch(deploy, backlog["id"])["counts"]["queued"] > 150, "the backlog was still there"
    finally:
        deploy.call("POST", f"/v1/batches/{backlog['id']}/cancel")


# --- fault 8: limits --------------------------------------------------------------------------


def test_oversize_requests_scripts_and_results_are_refused_with_the_limit_named(deploy: Stack,
                                                                                site: StaticServer) -> None:
    big = json.dumps([script_job(site, text="x" * 1000)] * 80).encode()  # > 64 KiB
    status, body = deploy.call("POST", "/v1/batches", raw=big)
    assert status == 413 and "BROWSERD_MAX_REQUEST_BYTES" in body["message"], body
    status, body = chunked_post(deploy, "/v1/batches", big)
    assert status == 413 and "BROWSERD_MAX_REQUEST_BYTES" in body["message"], body

    long_script = [{"wait": {"seconds": 0}}] * 51 + [{"done": {"text": "x"}}]
    status, body = deploy.call("POST", "/v1/jobs", {"script": long_script})
    assert status == 422 and body["fields"][0]["field"] == "script" and "BROWSERD_MAX_SCRIPT_ACTIONS" in body["message"]

    huge = deploy.submit(script_job(site, waits=0, text="y" * 5000))
    extract = deploy.submit({"script": [{"go_to_url": {"url": site.url("/agent/results.html")}},
                                        {"extract_content": {}}, {"done": {"text": "read"}}]})
    done = deploy.wait_state(huge["id"], FINAL, timeout=60)
    assert done["state"] == "failed" and done["category"] == "invalid_output"
    assert "BROWSERD_MAX_RESULT_BYTES" in done["error"]
    done = deploy.wait_state(extract["id"], FINAL, timeout=60)
    assert done["state"] == "succeeded", done["error"]
    content = done["result"]["data"]
    content = content["content"] if isinstance(content, dict) else content
    assert "BROWSERD_MAX_EXTRACT_CHARS" in content and len(content) < 200


def chunked_post(deploy: Stack, path: str, body: bytes) -> tuple[int, Any]:
    """POST with Transfer-Encoding: chunked (no Content-Length to refuse early)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", deploy.api_port, timeout=30)
    try:
        conn.putrequest("POST", path)
        conn.putheader("Authorization", f"Bearer {deploy.env['BROWSERD_API_TOKEN']}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        try:
            for start in range(0, len(body), 8192):
                chunk = body[start:start + 8192]
                conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            conn.send(b"0\r\n\r\n")
        except OSError:
            pass  # the API may answer and close before the whole body is sent
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


# --- fault 10: Celery's view ------------------------------------------------------------------


class Events:
    """Celery task events from the stack's broker, collected in a thread."""

    def __init__(self, url: str) -> None:
        self.seen: list[dict[str, Any]] = []
        self.conn = Connection(url)
        self.receiver = celery_app.events.Receiver(self.conn, handlers={"*": self.seen.append})
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.receiver.capture(limit=None, timeout=None, wakeup=False)
        except Exception:  # closed under it at the end
            pass

    def __enter__(self) -> Events:
        self.thread.start()
        time.sleep(1.0)  # subscribed before anything is sent
        return self

    def __exit__(self, *_: Any) -> None:
        self.receiver.should_stop = True
        self.thread.join(5)
        self.conn.release()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.seen) if e.get("type") == kind]


def test_failed_jobs_are_failures_to_celery_and_batches_send_task_sent(deploy: Stack, site: StaticServer) -> None:
    with Events(deploy.redis_server.url) as events:
        bad = deploy.submit({**script_job(site, waits=0, text="not json"), "output_schema": {"type": "object"}})
        status, record = submit_batch(deploy, [script_job(site, waits=0, text=f"e{n}") for n in range(3)])
        assert status == 201
        assert deploy.wait_state(bad["id"], FINAL, timeout=60)["state"] == "failed"
        wait_completed(deploy, record["id"], timeout=60)
        wait_until(lambda: any(bad["id"] in e.get("exception", "") for e in events.of("task-failed")), 20,
                   "a task-failed event for the failed job")
        batch_ids = set(deploy.redis.lrange(f"browserd:batch:{record['id']}:jobs", 0, -1))
        sent = {e["args"].strip("(),'") for e in events.of("task-sent") if "browserd.run_job" == e.get("name")}
        assert batch_ids <= sent, (batch_ids, sent)
        succeeded = [e for e in events.of("task-succeeded")]
        assert not any(bad["id"] in json.dumps(e) for e in succeeded)


# --- fault 4: a schema built to freeze a regex engine -------------------------------------------


def test_a_catastrophic_pattern_does_not_freeze_the_worker(deploy: Stack, site: StaticServer) -> None:
    answer = json.dumps("a" * 5000 + "!")
    evil = deploy.submit({**script_job(site, waits=0, text=answer), "output_schema": {"type": "string", "pattern": "^(a+)+$"}})
    other = deploy.submit(script_job(site, waits=2, text="still running"))
    done = deploy.wait_state(evil["id"], FINAL, timeout=30)
    assert done["state"] == "failed" and done["category"] == "invalid_output"
    assert deploy.wait_state(other["id"], FINAL, timeout=30)["state"] == "succeeded"


@pytest.mark.e2e  # a worker process of its own
def test_a_worker_whose_llm_provider_does_not_load_exits_at_start_naming_it() -> None:
    """A bad BROWSERD_LLM_PROVIDER stops the worker before it takes jobs, not at its first job."""
    with stack(llm_provider="no_such_module_xyz:ChatX") as s:
        with pytest.raises(AssertionError, match="exited") as exited:
            s.start_worker(concurrency=1)
    assert "BROWSERD_LLM_PROVIDER='no_such_module_xyz:ChatX'" in str(exited.value)
    assert "cannot be imported" in str(exited.value)
