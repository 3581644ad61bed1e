"""A job asking a human for help (``request_human``), handed back through the API, and values pushed
to it (``POST /v1/jobs/{id}/input``), end to end: redis-server, the API, a real worker with
Chromium, a webhook receiver; script jobs (no LLM) and one agent job with the scripted model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.queue.hooks import Hooks
from tests.queue.stack import ROOT, TOKEN, Stack, wait_until
from tests.support.llm_server import LLMServer, Reply, offered_tool
from tests.support.servers import StaticServer

FINAL = {"succeeded", "failed", "cancelled"}
SECRETS_KEY = "Z3JlYXQtdGVzdC1rZXktb2YtMzItYnl0ZXMtZXhhY3Q="  # a Fernet key
CODE = "482913"  # what the fixture page accepts (tests/fixtures/site/human/code.html)
NAV = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "go on"}


class Model:
    """The agent job's model: ask a human for the SMS code, then type the value it was sent, then done."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        whole = "\n".join(str(m.get("content") or "") for m in request.get("messages", []))
        self.seen.append(whole)
        planner = offered_tool(request) != "AgentOutput"
        signed_in = "Signed in" in whole.rsplit("[Current state starts here]", 1)[-1]
        if planner:
            return Reply.tool({"observation": "seen", "challenges": "", "done": signed_in,
                               "next_steps": "" if signed_in else "go on", "final_answer": "signed in" if signed_in else "",
                               "reasoning": "test", "web_task": True})
        if signed_in:
            return _act({"done": {"text": "signed in", "success": True}})
        if "A human sent the job these values: <secret>sms</secret>" in whole:
            index = re.search(r"\[(\d+)\]<input", whole)
            button = re.search(r"\[(\d+)\]<button", whole)
            assert index and button, whole[-2000:]
            return _act({"input_text": {"index": int(index.group(1)), "text": "<secret>sms</secret>"}},
                        {"click_element": {"index": int(button.group(1))}})
        return _act({"request_human": {"reason": "enter the SMS code"}})


def _act(*actions: dict[str, Any]) -> Reply:
    return Reply.tool({"current_state": NAV, "action": list(actions)})


@pytest.fixture(scope="module")
def receiver() -> Iterator[Hooks]:
    with Hooks() as hooks:
        yield hooks


@pytest.fixture(scope="module")
def llm() -> Iterator[LLMServer]:
    with LLMServer() as server:
        server.responder = Model()
        yield server


@pytest.fixture(scope="module")
def s(llm: LLMServer) -> Iterator[Stack]:
    stack = Stack(job_timeout=60, visibility_timeout=400, human_timeout=60, human_timeout_max=120,
                  secrets_key=SECRETS_KEY, webhook_allowed_networks="127.0.0.1/32",
                  llm_base_url=llm.base_url, openai_api_key="sk-test")
    try:
        stack.start_api()
        stack.start_worker(2)
        yield stack
    finally:
        stack.close()


def _asking(site: StaticServer, reason: str, *after: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"go_to_url": {"url": site.url("/human/code.html")}}, {"request_human": {"reason": reason}}, *after,
            {"done": {"text": "went on", "success": True}}]


def _waiting(s: Stack, job_id: str) -> dict[str, Any]:
    return wait_until(lambda: (j := s.job(job_id))["waiting_for_human"] and j, 90, f"job {job_id} to wait for a human")


def test_a_job_asking_for_help_waits_outside_its_timeout_gets_a_webhook_and_goes_on_after_hand_back(
        s: Stack, site: StaticServer, receiver: Hooks) -> None:
    job = s.submit({"script": _asking(site, "solve the captcha"), "timeout": 8, "webhook_url": receiver.url,
                    "options": {"allow_human": True, "human_timeout": 60}})
    waiting = _waiting(s, job["id"])
    assert waiting["state"] == "running" and waiting["paused"] and waiting["waiting_for_human"] == "solve the captcha"
    assert waiting["human_until"] is not None
    hooks = wait_until(lambda: [p for p in receiver.posts if p["delivery"].startswith("job.waiting_for_human:")], 30,
                       "the waiting webhook")
    assert hooks[0]["job"]["id"] == job["id"] and hooks[0]["job"]["waiting_for_human"] == "solve the captcha", hooks
    kinds = [kind for kind, _ in s.events(job["id"])]
    assert "waiting_for_human" in kinds
    time.sleep(10)  # longer than the job's own 8 s timeout: waiting for a human is not counted in it
    assert s.job(job["id"])["state"] == "running"
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/hand-back")
    assert status == 202 and body["waiting_for_human"] is None and not body["paused"], body
    done = s.wait_state(job["id"], FINAL, timeout=60)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "went on", done
    agent = [data["state"] for kind, data in s.events(job["id"]) if kind == "agent"]
    assert agent.index("task.pause") < agent.index("task.resume") < agent.index("task.ok"), agent
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/hand-back")
    assert status == 409 and "already finished" in body["message"], body


def test_a_hostile_reason_is_shown_as_text_in_the_console(s: Stack, site: StaticServer) -> None:
    hostile = '<script>alert(1)</script><b>solve</b> the captcha'
    job = s.submit({"script": _asking(site, hostile), "options": {"allow_human": True}})
    _waiting(s, job["id"])
    web = _console(s)
    try:
        page = web.get(f"/ui/jobs/{job['id']}").text
        listing = web.get("/ui/").text
        assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert 'id="job-waiting"' in page and 'id="hand-back"' in page
        assert "waiting for a human" in listing and "<b>solve</b>" not in listing
        answer = web.post(f"/ui/jobs/{job['id']}/hand-back", headers=_csrf(web, job["id"]))
        assert answer.status_code == 303
    finally:
        web.close()
    assert s.wait_state(job["id"], FINAL, timeout=60)["state"] == "succeeded"


def test_a_job_nobody_hands_back_fails_human_timeout(s: Stack, site: StaticServer) -> None:
    job = s.submit({"script": _asking(site, "approve the payment"), "options": {"allow_human": True,
                                                                                 "human_timeout": 3}})
    _waiting(s, job["id"])
    done = s.wait_state(job["id"], FINAL, timeout=60)
    assert done["state"] == "failed" and done["category"] == "human_timeout", done
    assert "approve the payment" in done["error"] and done["waiting_for_human"] is None and not done["paused"]


def test_a_job_that_may_not_ask_ends_honestly(s: Stack, site: StaticServer) -> None:
    job = s.submit({"script": _asking(site, "solve the captcha")})
    done = s.wait_state(job["id"], FINAL, timeout=60)
    assert done["state"] == "failed" and done["category"] == "action_error", done
    assert "may not ask a human" in done["error"] and done["waiting_for_human"] is None


def test_an_input_is_typed_as_a_secret_and_hands_the_job_back(s: Stack, site: StaticServer) -> None:
    script = _asking(site, "enter the SMS code", {"input_text": {"selector": "#code", "text": "<secret>sms</secret>"}},
                     {"click_element": {"selector": "#send"}})
    job = s.submit({"script": script, "options": {"allow_human": True}})
    _waiting(s, job["id"])
    status, body = s.call("POST", f"/v1/jobs/{job['id']}/input", {"name": "sms", "value": CODE})
    assert status == 202 and body["waiting_for_human"] is None, body
    done = s.wait_state(job["id"], FINAL, timeout=60)
    assert done["state"] == "succeeded", done
    assert done["result"]["steps"][-2]["url"].endswith("?verified=yes"), done["result"]["steps"]
    events = s.events(job["id"])
    assert ("input", {"at": pytest.approx(time.time(), abs=120), "name": "sms"}) in events
    everything = json.dumps(done) + json.dumps(events) + "".join(str(v) for v in s.redis.hgetall(f"browserd:job:{job['id']}").values())
    assert CODE not in everything  # sealed in the record, never in its result, steps or events
    worker_log = "\n".join(w.log(200_000) for w in s.workers)
    assert CODE not in worker_log


def test_an_agent_asks_for_a_code_and_types_the_value_it_never_sees(s: Stack, llm: LLMServer,
                                                                   site: StaticServer) -> None:
    job = s.submit({"task": "sign in with the SMS code", "start_url": site.url("/human/code.html"),
                    "options": {"allow_human": True, "max_steps": 8}})
    waiting = _waiting(s, job["id"])
    assert waiting["waiting_for_human"] == "enter the SMS code"
    assert s.call("POST", f"/v1/jobs/{job['id']}/input", {"name": "sms", "value": CODE})[0] == 202
    done = s.wait_state(job["id"], FINAL, timeout=90)
    assert done["state"] == "succeeded" and done["result"]["final_answer"] == "signed in", (done["error"], [(st["actions"], st.get("error")) for st in done["result"]["steps"]])
    prompts = "\n".join(llm.responder.seen)  # type: ignore[union-attr]
    assert "A human handed the job back" in prompts and "/human/code.html" in prompts
    assert CODE not in prompts and CODE not in json.dumps(done)


def test_hand_back_and_input_refuse_bad_requests(s: Stack, site: StaticServer) -> None:
    unknown = "0" * 32
    for path, body in (("hand-back", None), ("input", {"name": "sms", "value": CODE})):
        status, answer = s.call("POST", f"/v1/jobs/{unknown}/{path}", body)
        assert status == 404 and answer["error"] == "not_found", (path, answer)
    plain = s.submit({"script": [{"go_to_url": {"url": site.url("/human/code.html")}}, {"wait": {"seconds": 20}}]})
    wait_until(lambda: s.job(plain["id"])["state"] == "running", 60, "the job to start")
    status, answer = s.call("POST", f"/v1/jobs/{plain['id']}/hand-back")
    assert status == 409 and "not waiting for a human" in answer["message"], answer
    for bad, field in (({"name": "1sms", "value": CODE}, "name"), ({"name": "sms", "value": "12"}, "value"),
                       ({"name": "sms"}, "value"), ({"name": "sms", "value": CODE, "extra": 1}, "extra"),
                       ({"name": "x" * 65, "value": CODE}, "name")):
        status, answer = s.call("POST", f"/v1/jobs/{plain['id']}/input", bad)
        assert status == 422 and answer["fields"][0]["field"] == field, (bad, answer)
    assert s.call("POST", f"/v1/jobs/{plain['id']}/cancel")[0] == 202
    s.wait_state(plain["id"], FINAL, timeout=60)
    status, answer = s.call("POST", f"/v1/jobs/{plain['id']}/input", {"name": "sms", "value": CODE})
    assert status == 409 and "already finished" in answer["message"], answer
    for options, where in (({"human_timeout": 10}, "allow_human"),
                           ({"allow_human": True, "human_timeout": 500}, "BROWSERD_HUMAN_TIMEOUT_MAX"),
                           ({"allow_human": True, "human_timeout": 0}, "greater")):
        status, answer = s.call("POST", "/v1/jobs", {"task": "t", "options": options})
        assert status == 422 and answer["fields"][0]["field"] == "options.human_timeout", answer
        assert where in answer["message"], answer
    status, answer = s.call("POST", "/v1/jobs", {"task": "t", "timeout": 300, "options": {"allow_human": True,
                                                                                          "human_timeout": 100}})
    assert status == 422 and "BROWSERD_VISIBILITY_TIMEOUT" in answer["message"], answer


LOOPBACK = "127.0.0.1/32"  # a tenant's job opens only the networks it names, inside its ceiling


def test_another_tenant_cannot_hand_back_or_send_input(s: Stack, site: StaticServer) -> None:
    keys = {}
    for name in ("humana", "humanb"):
        status, made = s.call("POST", "/v1/tenants", {"name": name, "limits": {"allowed_networks": [LOOPBACK]}})
        assert status == 201, made
        keys[name] = made["key"]
    status, job = s.call("POST", "/v1/jobs", {"script": _asking(site, "solve the captcha"), "allowed_networks": [LOOPBACK],
                                              "options": {"allow_human": True}}, token=keys["humana"])
    assert status == 201, job
    _waiting(s, job["id"])
    for path, body in (("hand-back", None), ("input", {"name": "sms", "value": CODE}), ("resume", None)):
        status, answer = s.call("POST", f"/v1/jobs/{job['id']}/{path}", body, token=keys["humanb"])
        assert status == 404 and answer["error"] == "not_found", (path, answer)
    assert s.job(job["id"])["waiting_for_human"] == "solve the captcha"
    assert s.call("POST", f"/v1/jobs/{job['id']}/hand-back", token=keys["humana"])[0] == 202
    assert s.wait_state(job["id"], FINAL, timeout=60)["state"] == "succeeded"


def _browserd(s: Stack, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=s.env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120, input=stdin)


def test_the_cli_and_client_hand_back_and_send_input(s: Stack, site: StaticServer) -> None:
    from daemon.client import Client

    first = s.submit({"script": _asking(site, "solve the captcha"), "options": {"allow_human": True}})
    _waiting(s, first["id"])
    shown = _browserd(s, "status", first["id"])
    assert "waiting_for_human (solve the captcha)" in shown.stdout, shown
    handed = _browserd(s, "hand-back", first["id"])
    assert handed.returncode == 0 and "handed back" in handed.stdout, handed
    assert s.wait_state(first["id"], FINAL, timeout=60)["state"] == "succeeded"
    script = _asking(site, "enter the SMS code", {"input_text": {"selector": "#code", "text": "<secret>sms</secret>"}},
                     {"click_element": {"selector": "#send"}})
    second = s.submit({"script": script, "options": {"allow_human": True}})
    _waiting(s, second["id"])
    sent = _browserd(s, "input", second["id"], "sms", stdin=CODE + "\n")
    assert sent.returncode == 0 and "input sms sent" in sent.stdout and CODE not in sent.stdout, sent
    assert s.wait_state(second["id"], FINAL, timeout=60)["result"]["steps"][-2]["url"].endswith("?verified=yes")
    third = s.submit({"script": script, "options": {"allow_human": True}})
    _waiting(s, third["id"])
    with Client(s.url, token=TOKEN) as client:
        record = client.send_input(third["id"], "sms", CODE)
        assert record.waiting_for_human is None
        assert client.wait(third["id"]).state == "succeeded"


def _console(s: Stack) -> httpx.Client:
    web = httpx.Client(base_url=s.url, follow_redirects=False, timeout=30)
    assert web.post("/ui/login", data={"token": TOKEN, "next": "/ui/"}).status_code == 303
    return web


def _csrf(web: httpx.Client, job_id: str) -> dict[str, str]:
    text = web.get(f"/ui/jobs/{job_id}").text
    return {"X-CSRF-Token": re.search(r'name="csrf" value="([0-9a-f]+)"', text).group(1)}  # type: ignore[union-attr]


def _typing_job(s: Stack, site: StaticServer) -> dict[str, Any]:
    script = [{"go_to_url": {"url": site.url("/human/type.html")}}] + [{"wait": {"seconds": 0.5}}] * 40
    job = s.submit({"script": script + [{"done": {"text": "typed"}}], "timeout": 120})
    wait_until(lambda: s.job(job["id"])["progress"]["step"] >= 2, 60, "the job to open its page")
    return job


def _keys(text: str) -> list[dict[str, Any]]:
    return [{"kind": "key", "type": kind, "key": char, "text": char if kind == "keyDown" else ""}
            for char in text for kind in ("keyDown", "keyUp")]


def test_an_operator_takes_over_types_into_the_page_and_hands_back(s: Stack, site: StaticServer) -> None:
    job = _typing_job(s, site)
    first, second = _console(s), _console(s)
    try:
        mine, theirs = _csrf(first, job["id"]), _csrf(second, job["id"])
        taken = first.post(f"/ui/jobs/{job['id']}/control", headers=mine)
        assert taken.status_code == 200 and taken.json()["controlling"], taken.text
        assert s.job(job["id"])["paused"]
        refused = second.post(f"/ui/jobs/{job['id']}/control", headers=theirs)
        assert refused.status_code == 409 and "controls this job" in refused.text
        click = [{"kind": "mouse", "type": t, "x": 0.5, "y": 0.5} for t in ("mousePressed", "mouseReleased")]
        assert second.post(f"/ui/jobs/{job['id']}/control/events", headers=theirs, json=click).status_code == 409
        assert second.post(f"/ui/jobs/{job['id']}/hand-back", headers=theirs).status_code == 409
        wait_until(lambda: any(k == "takeover" and d["state"] == "started" for k, d in s.events(job["id"])), 30,
                   "the worker to listen for the operator's events")
        wait_until(lambda: any(k == "agent" and d["state"] == "task.pause" for k, d in s.events(job["id"])), 30,
                   "the agent to stop between steps")
        held = s.job(job["id"])["progress"]["step"]
        for body in (click, _keys("hi"), [{"kind": "wheel", "x": 0.5, "y": 0.5, "dy": 100}]):
            sent = first.post(f"/ui/jobs/{job['id']}/control/events", headers=mine, json=body)
            assert sent.status_code == 204, sent.text
        for bad in ([{"kind": "mouse", "type": "mousePressed", "x": 2, "y": 0.5}], [{"kind": "touch"}], [],
                    [{"kind": "key", "type": "keyDown", "key": ""}], _keys("x" * 40)):
            answer = first.post(f"/ui/jobs/{job['id']}/control/events", headers=mine, json=bad)
            assert answer.status_code == 422, (bad, answer.text)
        bad = first.post(f"/ui/jobs/{job['id']}/control/events", headers=mine, content=b"not json")
        assert bad.status_code == 422
        assert first.post(f"/ui/jobs/{job['id']}/control/events", json=click).status_code in (403, 400)  # no CSRF
        time.sleep(1.0)
        assert s.job(job["id"])["progress"]["step"] == held  # the agent waits while the human controls
        handed = first.post(f"/ui/jobs/{job['id']}/hand-back", headers=mine)
        assert handed.status_code == 303, handed.text
    finally:
        first.close()
        second.close()
    done = s.wait_state(job["id"], FINAL, timeout=90)
    assert done["state"] == "succeeded", done
    assert any(step["url"].endswith("?typed=hi") for step in done["result"]["steps"]), done["result"]["steps"]
    ends = [d for k, d in s.events(job["id"]) if k == "takeover" and d["state"] == "ended"]
    assert len(ends) == 1 and ends[0]["clicks"] == 1 and ends[0]["keys"] == 2 and ends[0]["scrolls"] == 1, ends
    assert ends[0]["who"].startswith("console session") and ends[0]["seconds"] > 0


async def test_an_mcp_client_hands_back_and_sends_the_code(s: Stack, site: StaticServer) -> None:
    """MCP's steering tools go through the API: the same hand-back and input, the value never echoed, another
    tenant's job answered exactly as an unknown one, a bad name refused with the API's reason."""
    from tests.frontends.test_mcp import error_text, http_client, structured

    first = s.submit({"script": _asking(site, "solve the captcha"), "options": {"allow_human": True}})
    _waiting(s, first["id"])
    script = _asking(site, "enter the SMS code", {"input_text": {"selector": "#code", "text": "<secret>sms</secret>"}},
                     {"click_element": {"selector": "#send"}})
    second = s.submit({"script": script, "options": {"allow_human": True}})
    _waiting(s, second["id"])
    status, made = s.call("POST", "/v1/tenants", {"name": "mcpsteer"})
    assert status == 201, made
    unknown = "0" * 32
    async with http_client(s, made["key"]) as stranger:
        for tool, args in (("hand_back_job", {}), ("send_input", {"name": "sms", "value": CODE}), ("pause_job", {}),
                           ("resume_job", {})):
            refused = error_text(await stranger.call_tool(tool, {"job_id": second["id"], **args}))
            absent = error_text(await stranger.call_tool(tool, {"job_id": unknown, **args}))
            assert "HTTP 404" in refused and refused.replace(second["id"], unknown) == absent, (tool, refused)
            assert CODE not in refused
    async with http_client(s) as client:
        bad = error_text(await client.call_tool("send_input", {"job_id": second["id"], "name": "no spaces", "value": CODE}))
        assert "name" in bad and CODE not in bad, bad
        handed = await client.call_tool("hand_back_job", {"job_id": first["id"]})
        assert "waiting_for_human" not in structured(handed), handed
        sent = await client.call_tool("send_input", {"job_id": second["id"], "name": "sms", "value": CODE})
        assert CODE not in json.dumps(structured(sent)), sent
    assert s.wait_state(first["id"], FINAL, timeout=60)["state"] == "succeeded"
    assert s.wait_state(second["id"], FINAL, timeout=60)["result"]["steps"][-2]["url"].endswith("?verified=yes")
    assert s.job(second["id"])["waiting_for_human"] is None
