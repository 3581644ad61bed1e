"""Follow-up tasks in a kept session, and pause/resume, end to end: redis-server, the API, a real
worker with Chromium, and the scripted model (the only scripted part)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from config import load_settings
from daemon.client import AsyncClient, Client, RequestRefused
from tests.queue.stack import ROOT, TOKEN, Stack, wait_until
from tests.support.llm_server import LLMServer, Reply, offered_tool
from tests.support.servers import StaticServer
from workers.jobs.reconcile import Reconciler, Report
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore

PAUSE_MAX = 20  # BROWSERD_PAUSE_MAX_SECONDS of this stack (a CLI process may take seconds to start under load)
FINAL = {"succeeded", "failed", "cancelled"}
FOLLOW_UP_MARK = "Your new ultimate task is"
STATE_MARK = "[Current state starts here]"
NAV = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "go on"}


def _texts(request: dict[str, Any]) -> list[str]:
    out = []
    for message in request.get("messages", []):
        content = message.get("content")
        out.append(content if isinstance(content, str) else str(content or ""))
    return out


def _plan(done: bool, answer: str = "") -> Reply:
    return Reply.tool({"observation": "seen", "challenges": "", "done": done, "next_steps": "" if done else "go on",
                       "final_answer": answer, "reasoning": "test", "web_task": True})


def _act(*actions: dict[str, Any]) -> Reply:
    return Reply.tool({"current_state": NAV, "action": list(actions)})


class Model:
    """The scripted model of these tests; each job's task names its script."""

    def __init__(self, site: StaticServer) -> None:
        self.site = site
        self.steps: dict[str, int] = {}
        self.released: set[str] = set()  # slow jobs the test lets finish

    def __call__(self, request: dict[str, Any]) -> Reply:
        texts = _texts(request)
        whole = "\n".join(texts)
        planner = offered_tool(request) != "AgentOutput"
        if "FOLLOW-SCRIPT" in whole:
            return self._follow(whole, texts, planner)
        job = next((m for m in re.findall(r"SLOW-SCRIPT-\w+", whole)), None)
        if job is not None:
            return self._slow(job, planner)
        return _plan(True, "agent done") if planner else _act({"done": {"text": "agent done", "success": True}})

    def _follow(self, whole: str, texts: list[str], planner: bool) -> Reply:
        """Run 1: open the page with ?visited=first-run, then done. A follow-up: answer with the URL
        the current state shows (the page run 1 left open)."""
        state = next((t for t in reversed(texts) if STATE_MARK in t), "")
        found = re.search(r"http://127\.0\.0\.1:\d+/\S*visited=first-run", state)
        if FOLLOW_UP_MARK in whole:
            answer = f"follow-up sees {found.group(0) if found else 'no page'}"
            return _plan(True, answer) if planner else _act({"done": {"text": answer, "success": True}})
        if planner:
            return _plan(found is not None, "first run done")
        if found:
            return _act({"done": {"text": "first run done", "success": True}})
        return _act({"go_to_url": {"url": self.site.url("/cdp/basic.html?visited=first-run")}})

    def _slow(self, job: str, planner: bool) -> Reply:
        """Short steps (a wait each) until the test releases the job; then done."""
        if planner:
            return _plan(job in self.released, "slow done")
        self.steps[job] = self.steps.get(job, 0) + 1
        return _act({"wait": {"seconds": 0.3}})


@pytest.fixture(scope="module")
def llm(site: StaticServer) -> Iterator[LLMServer]:
    with LLMServer() as server:
        server.responder = Model(site)
        yield server


@pytest.fixture(scope="module")
def s(llm: LLMServer) -> Iterator[Stack]:
    stack = Stack(job_timeout=120, visibility_timeout=300, pause_max_seconds=PAUSE_MAX, keep_session_max=60,
                  llm_base_url=llm.base_url, openai_api_key="sk-test")
    try:
        stack.start_api()
        stack.start_worker(2)
        yield stack
    finally:
        stack.close()


def _agent_events(s: Stack, job_id: str) -> list[dict[str, Any]]:
    return [data for kind, data in s.events(job_id) if kind == "agent"]


def _wait_agent_event(s: Stack, job_id: str, state: str, count: int = 1) -> None:
    wait_until(lambda: sum(e["state"] == state for e in _agent_events(s, job_id)) >= count, 60,
               f"job {job_id} to emit {state}")


def test_a_follow_up_continues_in_the_same_context_with_the_same_history(s: Stack, llm: LLMServer,
                                                                          site: StaticServer) -> None:
    job = s.submit({"task": "FOLLOW-SCRIPT first: open the page", "start_url": site.url("/cdp/basic.html"),
                    "options": {"keep_session": 30, "max_steps": 6}})
    first = s.wait_state(job["id"], FINAL, timeout=90)
    assert first["state"] == "succeeded", first
    assert first["result"]["final_answer"] == "first run done"
    assert first["session"] == "kept" and first["session_until"]
    assert [r["run"] for r in first["runs"]] == [1] and first["runs"][0]["state"] == "succeeded"
    before = len(llm.requests)

    status, accepted = s.call("POST", f"/v1/jobs/{job['id']}/follow-up", {"task": "FOLLOW-SCRIPT which page is open?"})
    assert status == 202, accepted
    assert accepted["run"] == 2 and accepted["state"] == "running" and accepted["last_event_id"]
    assert accepted["result"] is None and accepted["runs"][-1]["state"] == "running"
    done = s.wait_state(job["id"], FINAL, timeout=90)

    assert done["state"] == "succeeded", done
    answer = done["result"]["final_answer"]
    assert answer.startswith("follow-up sees http://127.0.0.1") and "visited=first-run" in answer, answer
    assert [r["run"] for r in done["runs"]] == [1, 2]
    assert done["runs"][0]["result"]["final_answer"] == "first run done"
    assert done["runs"][1]["task"] == "FOLLOW-SCRIPT which page is open?"
    assert done["runs"][1]["result"]["final_answer"] == answer, "the job's result is the latest run's"
    assert done["runs"][1]["result"]["steps"][0]["step"] == 1, "a run numbers its own steps"
    assert done["session"] == "kept", "the session is kept again for another follow-up"
    # the model saw the earlier task and its actions, and then the follow-up task
    seen = "\n".join(_texts(llm.requests[before]))
    assert "FOLLOW-SCRIPT first: open the page" in seen and "visited=first-run" in seen
    assert seen.index("FOLLOW-SCRIPT first") < seen.index("FOLLOW-SCRIPT which page is open?")
    states = [(data.get("state"), data.get("run")) for kind, data in s.events(job["id"]) if kind == "state"]
    assert states == [("queued", None), ("running", None), ("succeeded", None), ("running", 2), ("succeeded", None)]


def test_a_follow_up_after_the_idle_time_is_refused(s: Stack, site: StaticServer) -> None:
    job = s.submit({"task": "FOLLOW-SCRIPT first: idle", "start_url": site.url("/cdp/basic.html"),
                    "options": {"keep_session": 1, "max_steps": 6}})
    assert s.wait_state(job["id"], FINAL, timeout=90)["state"] == "succeeded"
    closed = wait_until(lambda: (j := s.job(job["id"]))["session"] == "closed" and j, 30, "the session to close")
    assert "no follow-up came within 1s" in closed["session_note"]
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/follow-up", {"task": "too late"})
    assert status == 409 and "session is closed" in body["message"] and "within 1s" in body["message"], body
    assert s.job(job["id"])["state"] == "succeeded"


def test_cancel_closes_a_kept_session(s: Stack, site: StaticServer) -> None:
    job = s.submit({"task": "FOLLOW-SCRIPT first: closed by cancel", "start_url": site.url("/cdp/basic.html"),
                    "options": {"keep_session": 60, "max_steps": 6}})
    assert s.wait_state(job["id"], FINAL, timeout=90)["state"] == "succeeded"
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/cancel")
    assert status == 202 and body["state"] == "succeeded" and body["session"] == "closed", body
    assert body["session_note"] == "closed by a cancel"
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/follow-up", {"task": "more"})
    assert status == 409 and "closed by a cancel" in body["message"], body
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/cancel")
    assert status == 409 and "already finished" in body["message"]
    worker = s.worker_of(s.job(job["id"]))
    wait_until(lambda: f"job {job['id']}: session closed by a cancel" in worker.log(200_000), 30,
               "the worker to close the session")


def test_follow_up_and_pause_refuse_bad_requests(s: Stack, site: StaticServer) -> None:
    unknown = "0" * 32
    for path in ("follow-up", "pause", "resume"):
        status, body = s.call("POST", f"/v1/jobs/{unknown}/{path}", {"task": "x"} if path == "follow-up" else None)
        assert status == 404 and body["error"] == "not_found", (path, body)
    plain = s.submit({"task": "plain job", "start_url": site.url("/cdp/basic.html")})
    assert s.wait_state(plain["id"], FINAL, timeout=90)["state"] == "succeeded"
    status, body = s.call("POST", f"/v1/jobs/{plain['id']}/follow-up", {"task": "more"})
    assert status == 409 and "did not keep its session" in body["message"], body
    for bad in ({"task": ""}, {"task": "   "}, {}, {"task": "x", "extra": 1}):
        status, body = s.call("POST", f"/v1/jobs/{plain['id']}/follow-up", bad)
        assert status == 422 and body["fields"][0]["field"].startswith(("task", "extra")), (bad, body)
    status, body = s.call("POST", f"/v1/jobs/{plain['id']}/pause")
    assert status == 409 and "already finished" in body["message"], body
    status, body = s.call("POST", f"/v1/jobs/{plain['id']}/resume")
    assert status == 409 and "already finished" in body["message"], body
    for options, where in (({"keep_session": 3600}, "BROWSERD_KEEP_SESSION_MAX"), ({"keep_session": 0}, "greater")):
        status, body = s.call("POST", "/v1/jobs", {"task": "t", "options": options})
        assert status == 422 and body["fields"][0]["field"] == "options.keep_session" and where in body["message"], body
    status, body = s.call("POST", "/v1/jobs", {"script": [{"done": {}}], "options": {"keep_session": 5}})
    assert status == 422 and "only agent jobs" in body["message"], body


def _slow_job(s: Stack, site: StaticServer, name: str) -> dict[str, Any]:
    """A job taking steps until ``_release``d."""
    job = s.submit({"task": f"SLOW-SCRIPT-{name}", "start_url": site.url("/cdp/basic.html"),
                    "options": {"max_steps": 200, "planning_interval": 1}})
    wait_until(lambda: s.job(job["id"])["progress"]["step"] >= 2, 60, f"job {name} to take two steps")
    return job


def _release(llm: LLMServer, name: str) -> None:
    llm.responder.released.add(f"SLOW-SCRIPT-{name}")  # type: ignore[union-attr]


def test_pause_stops_between_steps_and_resume_goes_on(s: Stack, llm: LLMServer, site: StaticServer) -> None:
    job = _slow_job(s, site, "resume")
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/pause")
    assert status == 202 and body["paused"] and body["state"] == "running", body
    _wait_agent_event(s, job["id"], "task.pause")
    held = s.job(job["id"])["progress"]["step"]
    time.sleep(1.5)
    paused = s.job(job["id"])
    assert paused["progress"]["step"] == held and paused["paused"] and paused["state"] == "running"
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/pause")
    assert status == 202, "pausing a paused job is harmless"
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/resume")
    assert status == 202 and not body["paused"], body
    _release(llm, "resume")
    done = s.wait_state(job["id"], FINAL, timeout=90)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "slow done", done
    assert done["progress"]["step"] > held and not done["paused"]
    states = [e["state"] for e in _agent_events(s, job["id"])]
    assert states.index("task.pause") < states.index("task.resume") < states.index("task.ok")
    kinds = [kind for kind, _ in s.events(job["id"])]
    assert "pause_requested" in kinds and "resume_requested" in kinds
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/resume")
    assert status == 409


def test_a_job_paused_too_long_fails_timeout(s: Stack, site: StaticServer) -> None:
    job = _slow_job(s, site, "limit")
    assert s.call("POST", f"/v1/jobs/{job['id']}/pause")[0] == 202
    done = s.wait_state(job["id"], FINAL, timeout=PAUSE_MAX + 60)
    assert done["state"] == "failed" and done["category"] == "timeout", done
    assert "paused" in done["error"] and "BROWSERD_PAUSE_MAX_SECONDS" in done["error"], done["error"]
    assert not done["paused"]


def _reconcile(s: Stack, stale: float) -> Report | None:
    """One reconciler pass in this process, against the stack's Redis, with ``stale`` seconds."""
    async def once() -> Report | None:
        store = JobStore(connect(s.redis_server.url), result_ttl=3600)
        try:
            settings = load_settings(redis_url=s.redis_server.url, stale_job_seconds=stale)
            return await Reconciler(store, settings).run_once()
        finally:
            await store.redis.aclose()

    return asyncio.run(once())


def test_cancel_works_while_paused_and_the_reconciler_leaves_paused_and_kept_jobs(s: Stack, site: StaticServer) -> None:
    kept = s.submit({"task": "FOLLOW-SCRIPT first: reconciled", "start_url": site.url("/cdp/basic.html"),
                     "options": {"keep_session": 30, "max_steps": 6}})
    job = _slow_job(s, site, "cancel")
    assert s.call("POST", f"/v1/jobs/{job['id']}/pause")[0] == 202
    _wait_agent_event(s, job["id"], "task.pause")
    assert s.wait_state(kept["id"], FINAL, timeout=90)["state"] == "succeeded"
    time.sleep(2.5)  # longer than the reconciler's stale limit below: only the heartbeats keep them
    report = _reconcile(s, stale=2.0)
    assert report is not None and report.resent_running == 0, report
    assert s.job(job["id"])["state"] == "running" and s.job(job["id"])["paused"]
    assert s.job(kept["id"])["session"] == "kept"
    status, accepted = s.call("POST", f"/v1/jobs/{kept['id']}/follow-up", {"task": "FOLLOW-SCRIPT still there?"})
    assert status == 202, accepted
    status, _ = s.call("POST", f"/v1/jobs/{job['id']}/cancel")
    assert status == 202
    done = s.wait_state(job["id"], FINAL, timeout=30)
    assert done["state"] == "cancelled" and not done["paused"], done
    assert "task.cancel" in [e["state"] for e in _agent_events(s, job["id"])]
    assert s.wait_state(kept["id"], FINAL, timeout=90)["state"] == "succeeded"


def _browserd(s: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=s.env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_the_cli_follows_up_pauses_and_resumes(s: Stack, llm: LLMServer, site: StaticServer) -> None:
    job = s.submit({"task": "FOLLOW-SCRIPT first: cli", "start_url": site.url("/cdp/basic.html"),
                    "options": {"keep_session": 30, "max_steps": 6}})
    assert s.wait_state(job["id"], FINAL, timeout=90)["state"] == "succeeded"
    done = _browserd(s, "follow-up", job["id"], "FOLLOW-SCRIPT cli: which page?")
    assert done.returncode == 0, done.stderr
    assert "follow-up run 2 started" in done.stderr and "visited=first-run" in done.stderr
    assert done.stderr.count("state: succeeded") == 1, "only this run's events are shown"
    assert "answer: follow-up sees http://127.0.0.1" in done.stdout and "session=kept" in done.stdout, done.stdout
    empty = _browserd(s, "follow-up", job["id"], "  ")
    assert empty.returncode == 2 and "must not be empty" in empty.stderr
    plain = s.submit({"task": "plain cli job", "start_url": site.url("/cdp/basic.html")})
    assert s.wait_state(plain["id"], FINAL, timeout=90)["state"] == "succeeded"
    refused = _browserd(s, "follow-up", plain["id"], "more")
    assert refused.returncode == 1 and "did not keep its session" in refused.stderr and "HTTP 409" in refused.stderr

    slow = _slow_job(s, site, "cli")
    paused = _browserd(s, "pause", slow["id"])
    assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr
    _wait_agent_event(s, slow["id"], "task.pause")
    resumed = _browserd(s, "resume", slow["id"])
    assert resumed.returncode == 0 and "resumed" in resumed.stdout, resumed.stderr
    _release(llm, "cli")
    assert s.wait_state(slow["id"], FINAL, timeout=90)["state"] == "succeeded"
    again = _browserd(s, "resume", slow["id"])
    assert again.returncode == 1 and "already finished" in again.stderr


def test_the_python_clients_follow_up_pause_and_resume(s: Stack, llm: LLMServer, site: StaticServer) -> None:
    with Client(s.url, token=TOKEN) as api:
        job = api.submit({"task": "FOLLOW-SCRIPT first: client", "start_url": site.url("/cdp/basic.html"),
                          "options": {"keep_session": 30, "max_steps": 6}})
        assert api.wait(job.id).state == "succeeded"
        accepted = api.follow_up(job.id, "FOLLOW-SCRIPT client: which page?")
        assert accepted.run == 2
        done = api.wait(job.id, after=accepted.last_event_id)
        assert done.state == "succeeded" and len(done.runs) == 2
        assert done.result is not None and "visited=first-run" in (done.result.final_answer or "")
        with pytest.raises(RequestRefused) as refused:
            api.follow_up("0" * 32, "x")
        assert refused.value.status == 404

    async def steer() -> None:
        async with AsyncClient(s.url, token=TOKEN) as api:
            slow = await asyncio.to_thread(_slow_job, s, site, "async")
            assert (await api.pause(slow["id"])).paused
            await asyncio.to_thread(_wait_agent_event, s, slow["id"], "task.pause")
            assert not (await api.resume(slow["id"])).paused
            _release(llm, "async")
            assert (await api.wait(slow["id"])).state == "succeeded"
            again = await api.follow_up(job.id, "FOLLOW-SCRIPT async: which page?")
            last = await api.wait(job.id, after=again.last_event_id)
            assert [r.run for r in last.runs] == [1, 2, 3] and last.state == "succeeded"

    asyncio.run(steer())


def test_the_console_pauses_resumes_and_follows_up(s: Stack, llm: LLMServer, site: StaticServer) -> None:
    with httpx.Client(base_url=s.url, follow_redirects=False, headers={"Origin": s.url}, timeout=30) as web:
        assert web.post("/ui/login", data={"token": TOKEN, "next": "/ui/"}).status_code == 303

        def page(job_id: str) -> tuple[str, str]:
            text = web.get(f"/ui/jobs/{job_id}").text
            return text, re.search(r'name="csrf" value="([0-9a-f]+)"', text).group(1)  # type: ignore[union-attr]

        slow = _slow_job(s, site, "console")
        text, csrf = page(slow["id"])
        assert 'id="pause"' in text and 'id="follow-up"' not in text
        assert web.post(f"/ui/jobs/{slow['id']}/pause", data={"csrf": csrf}).status_code == 303
        text, csrf = page(slow["id"])
        assert 'id="resume"' in text and 'id="job-paused"' in text
        assert web.post(f"/ui/jobs/{slow['id']}/resume", data={"csrf": csrf}).status_code == 303
        _release(llm, "console")
        assert s.wait_state(slow["id"], FINAL, timeout=90)["state"] == "succeeded"
        again = web.post(f"/ui/jobs/{slow['id']}/resume", data={"csrf": csrf})
        assert again.status_code == 409 and "already finished" in again.text
        refused = web.post(f"/ui/jobs/{slow['id']}/follow-up", data={"csrf": csrf, "task": "more"})
        assert refused.status_code == 409 and "did not keep its session" in refused.text

        kept = s.submit({"task": "FOLLOW-SCRIPT first: console", "start_url": site.url("/cdp/basic.html"),
                         "options": {"keep_session": 30, "max_steps": 6}})
        assert s.wait_state(kept["id"], FINAL, timeout=90)["state"] == "succeeded"
        text, csrf = page(kept["id"])
        assert 'id="follow-up"' in text and 'id="job-session">kept' in text
        empty = web.post(f"/ui/jobs/{kept['id']}/follow-up", data={"csrf": csrf, "task": " "})
        assert empty.status_code == 422 and "task: " in empty.text
        hostile = "FOLLOW-SCRIPT <b>console</b>?"
        sent = web.post(f"/ui/jobs/{kept['id']}/follow-up", data={"csrf": csrf, "task": hostile})
        assert sent.status_code == 303
        assert s.wait_state(kept["id"], FINAL, timeout=90)["state"] == "succeeded"
        text, _ = page(kept["id"])
        assert 'id="job-runs"' in text and "follow-up sees http://127.0.0.1" in text
        assert "<b>console</b>" not in text and "&lt;b&gt;console&lt;/b&gt;" in text


def test_a_script_job_pauses_between_actions_too(s: Stack, site: StaticServer) -> None:
    steps = [{"go_to_url": {"url": site.url("/cdp/basic.html")}}, *[{"wait": {"seconds": 1}}] * 8,
             {"done": {"text": "script done"}}]
    job = s.submit({"script": steps})
    wait_until(lambda: s.job(job["id"])["progress"]["step"] >= 1, 60, "the script's first step")
    assert s.call("POST", f"/v1/jobs/{job['id']}/pause")[0] == 202
    _wait_agent_event(s, job["id"], "task.pause")
    held = s.job(job["id"])["progress"]["step"]
    time.sleep(1.5)
    assert s.job(job["id"])["progress"]["step"] == held < len(steps)
    assert s.call("POST", f"/v1/jobs/{job['id']}/resume")[0] == 202
    done = s.wait_state(job["id"], FINAL, timeout=90)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "script done", done


def test_a_worker_that_stops_closes_the_sessions_it_keeps(s: Stack, site: StaticServer) -> None:
    s.start_worker(1)  # the module goes on with a worker whichever one stops
    job = s.submit({"task": "FOLLOW-SCRIPT first: worker stops", "start_url": site.url("/cdp/basic.html"),
                    "options": {"keep_session": 60, "max_steps": 6}})
    done = s.wait_state(job["id"], FINAL, timeout=90)
    assert done["state"] == "succeeded" and done["session"] == "kept"
    s.worker_of(done).stop()
    closed = s.job(job["id"])
    assert closed["session"] == "closed" and closed["session_note"] == "its worker stopped", closed
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/follow-up", {"task": "more"})
    assert status == 409 and "its worker stopped" in body["message"], body
