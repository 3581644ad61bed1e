"""``browserd mcp`` with the SDK's own client, over both transports, against the real stack: the
streamable HTTP endpoint the API serves at ``/mcp``, and ``browserd mcp`` on stdio as a desktop
client would start it."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.frontends.model import ANSWER
from tests.queue.stack import ROOT, TOKEN, Stack, script
from tests.support.llm_server import LLMServer
from tests.support.schemas import anyof_bomb
from tests.support.servers import StaticServer

TOOLS = {"run_task", "submit_job", "get_job", "cancel_job", "list_jobs", "run_batch", "open_session", "navigate",
         "get_state", "click", "type", "select", "scroll", "screenshot", "close_session", "start_crawl", "crawl_status",
         "crawl_results", "cancel_crawl", "pause_job", "resume_job", "hand_back_job", "send_input",
         "resume_crawl"}


def http_client(s: Stack, token: str = TOKEN) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0))
    return Client(streamable_http_client(s.url + "/mcp", http_client=http))


def stdio_client(s: Stack) -> Client:
    env = {k: v for k, v in s.env.items() if k.startswith(("BROWSERD_", "PATH", "PYTHONPATH", "HOME"))}
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "daemon", "mcp"], env=env, cwd=ROOT))


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error, result
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_tools_and_a_task_with_the_scripted_model(frontend_stack: tuple[Stack, LLMServer], site: StaticServer,
                                                        transport: str) -> None:
    s, _ = frontend_stack
    async with (http_client(s) if transport == "http" else stdio_client(s)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert "task" in tools["run_task"].input_schema["required"]

        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        done = structured(await client.call_tool("run_task", {
            "task": f"quick: read the page ({transport})", "start_url": site.url("/cdp/basic.html"),
            "labels": {"via": f"mcp-{transport}"}}, progress_callback=on_progress))
        assert done["state"] == "succeeded" and done["final_answer"] == ANSWER, done
        assert progress, "run_task reports the job's steps as progress"

        steps = await client.read_resource(done["steps_resource"])
        parsed = json.loads(steps.contents[0].text)
        assert parsed and parsed[0]["url"].endswith("/cdp/basic.html") and parsed[0]["actions"][0]["name"] == "done"
        result = json.loads((await client.read_resource(f"browserd://jobs/{done['job_id']}/result")).contents[0].text)
        assert result["final_answer"] == ANSWER

        listed = structured(await client.call_tool("list_jobs", {"labels": {"via": f"mcp-{transport}"}}))
        assert [j["job_id"] for j in listed["jobs"]] == [done["job_id"]]

        # refusals come back as tool errors with the API's own words
        assert "no job with id" in error_text(await client.call_tool("get_job", {"job_id": "0" * 32}))
        assert "exactly one of 'task'" in error_text(await client.call_tool("submit_job", {"start_url": site.url("/")}))
        assert "already finished" in error_text(await client.call_tool("cancel_job", {"job_id": done["job_id"]}))
        bomb = {"task": "x", "output_schema": anyof_bomb()}  # bounded as the API bounds it (issue 22)
        assert "schema limit 'branches'" in error_text(await client.call_tool("submit_job", bomb))


async def test_jobs_and_batches_over_http(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    async with http_client(s) as client:
        long = structured(await client.call_tool("submit_job", {"script": script(site.url("/cdp/basic.html"), waits=30)}))
        assert long["state"] in ("queued", "running")
        cancelled = structured(await client.call_tool("cancel_job", {"job_id": long["job_id"]}))
        assert cancelled["state"] == "cancelled" or cancelled["cancel_requested"], cancelled
        for _ in range(300):
            now = structured(await client.call_tool("get_job", {"job_id": long["job_id"]}))
            if now["state"] != "running":
                break
            await asyncio.sleep(0.1)
        assert now["state"] == "cancelled", now

        batch = structured(await client.call_tool("run_batch", {
            "jobs": [{"script": script(site.url("/cdp/basic.html"), waits=0, text=f"item {i}")} for i in range(2)],
            "defaults": {"labels": {"via": "mcp-batch"}}, "wait_seconds": 60}))
        assert batch["batch"]["state"] == "completed", batch
        assert sorted(r["final_answer"] for r in batch["results"]) == ["item 0", "item 1"]

        bad = error_text(await client.call_tool("run_batch", {"jobs": [{"task": "x", "options": {"max_steps": 0}}]}))
        assert "jobs[0].options.max_steps" in bad


async def test_the_http_endpoint_needs_the_token(frontend_stack: tuple[Stack, LLMServer]) -> None:
    s, _ = frontend_stack
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            resp = await http.post(s.url + "/mcp", json=body, headers={**headers, "Accept": "application/json, text/event-stream"})
            assert resp.status_code == 401 and "bearer token" in resp.json()["message"]


async def test_tools_refuse_unknown_arguments_and_open_networks_and_domains(frontend_stack: tuple[Stack, LLMServer],
                                                                           site: StaticServer) -> None:
    """A misspelt argument was dropped silently (the job ran without it); the egress arguments map
    onto the job spec's own fields, which the API checks as any spec's."""
    s, _ = frontend_stack
    async with http_client(s) as client:
        schemas = {tool.name: tool.input_schema["properties"] for tool in (await client.list_tools()).tools}
        for tool in ("run_task", "submit_job", "open_session"):
            assert {"allowed_domains", "denied_domains", "allowed_networks"} <= set(schemas[tool]), tool
        typo = error_text(await client.call_tool("run_task", {"task": "read it", "allowed_network": ["127.0.0.1/32"]}))
        assert "unknown argument 'allowed_network'; run_task takes " in typo and "allowed_networks" in typo
        typo = error_text(await client.call_tool("submit_job", {"task": "x", "max_step": 3, "wait": 1}))
        assert "unknown arguments 'max_step', 'wait'; submit_job takes " in typo
        job = structured(await client.call_tool("submit_job", {
            "script": script(site.url("/cdp/basic.html"), waits=0), "allowed_networks": ["127.0.0.1"],
            "allowed_domains": ["127.0.0.1"], "denied_domains": ["evil.test"]}))
        bad = error_text(await client.call_tool("submit_job", {"task": "x", "allowed_networks": ["localhost"]}))
        assert "allowed_networks" in bad and "'localhost' is not an IP network" in bad
    with httpx2.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        spec = http.get(f"{s.url}/v1/jobs/{job['job_id']}").json()["spec"]
    assert (spec["allowed_networks"], spec["allowed_domains"], spec["denied_domains"]) == (
        ["127.0.0.1/32"], ["127.0.0.1"], ["evil.test"])
async def test_a_tenant_over_http_sees_only_its_own(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    status, made = s.call("POST", "/v1/tenants", {"name": "mcp-tenant"})
    assert status == 201, made
    operator = s.submit({"script": script(site.url("/cdp/basic.html"), waits=0), "labels": {"via": "operator"}})
    async with http_client(s, made["key"]) as client:
        own = structured(await client.call_tool("submit_job", {"script": script(site.url("/cdp/basic.html"), waits=0)}))
        listed = structured(await client.call_tool("list_jobs", {}))
        assert [j["job_id"] for j in listed["jobs"]] == [own["job_id"]]
        assert "no job with id" in error_text(await client.call_tool("get_job", {"job_id": operator["id"]}))
        assert "no job with id" in error_text(await client.call_tool("cancel_job", {"job_id": operator["id"]}))
    assert s.job(own["job_id"])["tenant"] == "mcp-tenant" and s.job(operator["id"])["tenant"] is None
    s.call("POST", "/v1/tenants/mcp-tenant/revoke", {})
    resp = httpx2.post(s.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Authorization": f"Bearer {made['key']}", "Accept": "application/json, text/event-stream"})
    assert resp.status_code == 401


async def test_submit_job_sends_input_files_and_refuses_an_unknown_pool(frontend_stack: tuple[Stack, LLMServer],
                                                                         site: StaticServer) -> None:
    """The file goes with the job (base64) and its script uploads it; an MCP tool never reads a path
    from the server's disk (a name with a path is refused), and an unknown pool is the API's 422."""
    s, _ = frontend_stack
    cv = "Ada Lovelace, analytical engines\n"
    upload = [{"go_to_url": {"url": site.url("/agent/uploads/plain.html")}},
              {"upload_file": {"text": "CV", "files": ["cv.txt"]}}, {"wait": {"seconds": 0.5}},
              {"extract_fields": {"fields": {"got": "#got"}}}]
    files = [{"name": "cv.txt", "content_base64": base64.b64encode(cv.encode()).decode()}]
    async with http_client(s) as client:
        job = structured(await client.call_tool("submit_job", {"script": upload, "input_files": files,
                                                               "allowed_networks": ["127.0.0.1/32"]}))
        for _ in range(600):
            now = structured(await client.call_tool("get_job", {"job_id": job["job_id"]}))
            if now["state"] not in ("queued", "running"):
                break
            await asyncio.sleep(0.1)
        assert now["state"] == "succeeded", now
        assert now["data"] == {"got": "Received cv.txt (33 bytes): Ada Lovelace, analytical engines"}, now
        bad = error_text(await client.call_tool("submit_job", {"task": "x", "input_files": [
            {"name": "/etc/passwd", "content_base64": "aGk="}]}))
        assert "input_files" in bad and "name" in bad
        pool = error_text(await client.call_tool("submit_job", {"task": "x", "proxy_pool": "nope"}))
        assert "proxy_pool" in pool and "'nope' is not one of the operator's proxy pools" in pool
