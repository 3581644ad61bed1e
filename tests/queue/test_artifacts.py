"""Artifacts end to end: real redis-server, a real Celery worker process with Chromium, the API, the
client and the CLI; the scripted LLM for the agent job. The store is a local folder (fsspec)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon.client import AsyncClient, Client, RequestRefused
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan
from tests.queue.stack import ROOT, TOKEN, Stack, stack, wait_until
from tests.support.llm_server import LLMServer
from tests.support.servers import StaticServer

INLINE = 2048
FINISHED = {"succeeded", "failed", "cancelled"}


@pytest.fixture(scope="module")
def llm() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory, llm: LLMServer) -> Iterator[Stack]:
    store = tmp_path_factory.mktemp("artifacts")
    with stack(job_timeout=60, visibility_timeout=120, artifacts_url=f"file://{store}", artifact_inline_bytes=INLINE,
               llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=6) as s:
        s.start_worker(2)
        yield s


def finished(s: Stack, spec: dict[str, Any]) -> dict[str, Any]:
    job = s.submit(spec)
    return s.wait_state(job["id"], FINISHED, timeout=120)


def fetch(s: Stack, path: str) -> tuple[int, dict[str, str], bytes]:
    return s.fetch(path)


def test_a_failing_job_keeps_its_last_screenshot_page_and_console_and_serves_them(deploy: Stack, site: StaticServer) -> None:
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("agent/artifacts.html")}},
                                       {"click_element": {"index": 99}}]})
    assert job["state"] == "failed"
    status, listing = deploy.call("GET", f"/v1/jobs/{job['id']}/artifacts")
    assert status == 200
    names = [a["name"] for a in listing]
    # on_failure (the default): no screenshot while it runs; the failed job gets one of its live page, as its
    # last step's (the per-step shots cost Chromium ~24 ms of CPU each: issue 27)
    assert names == ["console.jsonl", "network.jsonl", "page.html", "page.md", "step-002.jpg"]
    assert listing == job["result"]["artifacts"], "the result links the same files"
    assert [s["screenshot"] for s in job["result"]["steps"]] == [None, f"/v1/jobs/{job['id']}/artifacts/step-002.jpg"]
    status, headers, body = fetch(deploy, f"/v1/jobs/{job['id']}/artifacts/step-002.jpg")
    assert status == 200 and headers["content-type"] == "image/jpeg" and body[:3] == b"\xff\xd8\xff"
    # the page's own HTML is untrusted: a download that can run nothing, never a page of the API's origin
    status, headers, body = fetch(deploy, f"/v1/jobs/{job['id']}/artifacts/page.html")
    assert status == 200 and b"Order status" in body
    assert headers["content-disposition"].startswith("attachment")
    assert headers["content-security-policy"].startswith("sandbox") and headers["x-content-type-options"] == "nosniff"
    status, _, body = fetch(deploy, f"/v1/jobs/{job['id']}/artifacts/console.jsonl")
    assert status == 200 and any(json.loads(line)["text"] == "page ready 42" for line in body.splitlines())


def test_every_step_screenshots_are_linked_from_the_step_events(deploy: Stack, site: StaticServer) -> None:
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("agent/artifacts.html")}},
                                       {"wait": {"seconds": 0}}, {"done": {"text": "ok"}}],
                            "artifacts": {"screenshots": "every_step"}})
    assert job["state"] == "succeeded"
    steps = [data for kind, data in deploy.events(job["id"]) if kind == "step"]
    links = [step["screenshot"] for step in steps]
    assert links == [f"/v1/jobs/{job['id']}/artifacts/step-00{n}.jpg" for n in (1, 2, 3)]
    for link in links:
        status, headers, _ = fetch(deploy, link)
        assert status == 200 and headers["content-disposition"].startswith("inline")


def test_an_agent_job_with_large_data_keeps_it_out_of_redis(deploy: Stack, site: StaticServer,
                                                            llm: LLMServer) -> None:
    answer = "row;" * 2000  # 8000 bytes, above BROWSERD_ARTIFACT_INLINE_BYTES
    llm.add(PLANNER, plan(), plan(done=True, final_answer=answer))
    llm.add(NAVIGATOR, act({"wait": {"seconds": 0}}), act({"done": {"text": "read it", "success": True}}))
    job = finished(deploy, {"task": "read the order status", "start_url": site.url("agent/artifacts.html"),
                            "artifacts": {"screenshots": "every_step"}})
    assert job["state"] == "succeeded", job["error"]
    result = job["result"]
    assert result["final_answer"] == answer, "GET /v1/jobs/{id} gives the data back"
    assert result["result_artifact"] == f"/v1/jobs/{job['id']}/artifacts/result.json"
    stored = deploy.redis.hget(f"browserd:job:{job['id']}", "result")
    assert answer not in stored and len(stored) < len(answer)
    assert all(step["screenshot"] for step in result["steps"])
    with Client(deploy.url, TOKEN) as client:
        assert client.get(job["id"]).result.final_answer == answer
        assert json.loads(client.artifact(job["id"], "result.json"))["final_answer"] == answer
        listing = client.artifacts(job["id"])
    assert [a.model_dump() for a in listing] == result["artifacts"]

    async def with_async_client() -> tuple[list[str], bytes]:
        async with AsyncClient(deploy.url, TOKEN) as client:
            return [a.name for a in await client.artifacts(job["id"])], await client.artifact(job["id"], "step-001.jpg")

    names, shot = asyncio.run(with_async_client())
    assert "result.json" in names and "step-001.jpg" in names and shot[:3] == b"\xff\xd8\xff"


def test_a_batchs_result_lines_read_large_results_back(deploy: Stack, site: StaticServer) -> None:
    answer = "line;" * 1000  # 5000 bytes, above BROWSERD_ARTIFACT_INLINE_BYTES
    status, batch = deploy.call("POST", "/v1/batches", [
        {"script": [{"go_to_url": {"url": site.url("cdp/basic.html")}}, {"done": {"text": answer}}]},
        {"script": [{"done": {"text": "small"}}]}])
    assert status == 201, batch
    wait_until(lambda: deploy.call("GET", f"/v1/batches/{batch['id']}")[1]["state"] == "completed", 120,
               "the batch to complete")
    with Client(deploy.url, TOKEN) as client:
        big, small = client.results(batch["id"])
    assert big.status == "succeeded" and big.final_answer == answer
    assert big.result_artifact == f"/v1/jobs/{big.id}/artifacts/result.json"
    assert answer not in deploy.redis.hget(f"browserd:job:{big.id}", "result")
    assert (small.final_answer, small.result_artifact) == ("small", None)


@pytest.fixture
def download_site(tmp_path: Path) -> Iterator[StaticServer]:
    from tests.support.servers import serve

    (tmp_path / "downloads.html").write_text('<a href="r.csv" download="report.csv">report</a>')
    (tmp_path / "r.csv").write_text("name,price\nkettle,39.90\n")
    with serve(tmp_path) as server:
        yield server


def test_downloads_are_listed_served_and_saved_by_the_cli(deploy: Stack, download_site: StaticServer,
                                                          tmp_path: Path) -> None:
    job = finished(deploy, {"start_url": download_site.url("downloads.html"),
                            "script": [{"click_element": {"index": 1}}, {"done": {"text": "ok"}}]})
    assert job["state"] == "succeeded", job["error"]
    link = f"/v1/jobs/{job['id']}/artifacts/download-report.csv"
    assert [(d["name"], d["artifact"]) for d in job["result"]["downloads"]] == [("report.csv", link)]
    status, headers, body = fetch(deploy, link)
    assert status == 200 and body == b"name,price\nkettle,39.90\n"
    assert headers["content-disposition"].startswith("attachment")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "daemon", "artifacts", job["id"], "--out", str(out)], env=deploy.env,
                         cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr
    assert (out / "download-report.csv").read_bytes() == body
    listing = subprocess.run([sys.executable, "-m", "daemon", "artifacts", job["id"]], env=deploy.env, cwd=ROOT,
                             capture_output=True, text=True, timeout=90)
    assert listing.returncode == 0 and "download-report.csv\t24\ttext/csv" in listing.stdout


def test_a_follow_up_run_keeps_its_own_files_next_to_the_first_runs(deploy: Stack, site: StaticServer,
                                                                     llm: LLMServer, tmp_path: Path) -> None:
    keep = {"screenshots": "every_step", "page": "always", "logs": "always"}
    llm.add(PLANNER, plan(), plan(done=True, final_answer="first"))
    llm.add(NAVIGATOR, act({"wait": {"seconds": 0}}), act({"done": {"text": "first", "success": True}}))
    job = finished(deploy, {"task": "read the order status", "start_url": site.url("agent/artifacts.html"),
                            "artifacts": keep, "options": {"keep_session": 60}})
    job_id, base = job["id"], f"/v1/jobs/{job['id']}/artifacts/"
    assert job["state"] == "succeeded" and job["session"] == "kept", job
    _, _, first_shot = fetch(deploy, base + "step-001.jpg")
    llm.add(PLANNER, plan(), plan(done=True, final_answer="second"))
    llm.add(NAVIGATOR, act({"go_to_url": {"url": site.url("cdp/basic.html")}}),
            act({"done": {"text": "second", "success": True}}))
    status, accepted = deploy.call("POST", f"/v1/jobs/{job_id}/follow-up", {"task": "open the basic page"})
    assert status == 202 and accepted["run"] == 2, accepted
    done = deploy.wait_state(job_id, FINISHED, timeout=120)
    assert done["state"] == "succeeded", done["error"]

    first, second = (run["result"] for run in done["runs"])
    first_names, second_names = [a["name"] for a in first["artifacts"]], [a["name"] for a in second["artifacts"]]
    assert {"step-001.jpg", "step-002.jpg", "page.html", "page.md", "console.jsonl"} <= set(first_names)
    assert {"run-2-step-001.jpg", "run-2-step-002.jpg", "run-2-page.html", "run-2-page.md"} <= set(second_names)
    assert all(n.startswith("run-2-") for n in second_names), "each run's result lists only its own files"
    assert {a["run"] for a in first["artifacts"]} == {1} and {a["run"] for a in second["artifacts"]} == {2}
    assert done["result"]["artifacts"] == second["artifacts"], "the job's result is the latest run's"
    status, listing = deploy.call("GET", base[:-1])
    assert status == 200 and listing == sorted(first["artifacts"] + second["artifacts"], key=lambda a: a["name"])
    status, _, shot = fetch(deploy, base + "step-001.jpg")
    assert status == 200 and shot == first_shot, "the follow-up did not overwrite the first run's screenshot"
    status, headers, shot = fetch(deploy, base + "run-2-step-001.jpg")
    assert status == 200 and headers["content-disposition"].startswith("inline") and shot[:3] == b"\xff\xd8\xff"
    assert fetch(deploy, base + "page.md")[2].startswith(b"# Order status")
    assert fetch(deploy, base + "run-2-page.md")[2].startswith(b"# Hello from the fixture")
    links = [step["screenshot"] for kind, step in deploy.events(job_id) if kind == "step"]
    assert [s["screenshot"] for s in first["steps"] + second["steps"]] == links
    assert base + "step-001.jpg" in links and base + "run-2-step-001.jpg" in links

    with httpx.Client(base_url=deploy.url, headers={"Origin": deploy.url}, timeout=30) as web:
        assert web.post("/ui/login", data={"token": TOKEN, "next": "/ui/"}, follow_redirects=False).status_code == 303
        page = web.get(f"/ui/jobs/{job_id}").text
        assert web.get(f"/ui/jobs/{job_id}/artifacts/run-2-step-001.jpg").content == shot
    sections = dict(re.findall(r'id="artifacts-run-(\d)">(.*?)</div>', page, re.S))
    assert set(sections) == {"1", "2"} and "<h3>Run 2</h3>" in sections["2"]
    assert 'src="/ui/jobs/%s/artifacts/step-001.jpg"' % job_id in sections["1"] and "run-2-" not in sections["1"]
    assert 'src="/ui/jobs/%s/artifacts/run-2-step-001.jpg"' % job_id in sections["2"]

    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "daemon", "artifacts", job_id, "--out", str(out)], env=deploy.env,
                         cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.iterdir()) == [a["name"] for a in listing]
    assert (out / "step-001.jpg").read_bytes() == first_shot and (out / "run-2-step-001.jpg").read_bytes() == shot
    status, body = deploy.call("POST", f"/v1/jobs/{job_id}/cancel")
    assert status == 202 and body["session"] == "closed", body


def test_path_traversal_is_refused(deploy: Stack, site: StaticServer) -> None:
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("cdp/basic.html")}},
                                       {"click_element": {"index": 99}}]})
    base = f"/v1/jobs/{job['id']}/artifacts/"
    for name in ("%2e%2e", ".env", "..", "a%5Cb", "page.html%00.jpg", "x" * 300):
        status, _, body = fetch(deploy, base + name)
        assert status == 422 and json.loads(body)["fields"][0]["field"] == "name", (name, status, body)
    for name in ("..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd"):
        status, _, body = fetch(deploy, base + name)  # a slash never matches the route
        assert status == 404 and b"root:" not in body, (name, status, body)
    status, _, body = fetch(deploy, f"/v1/jobs/..%2F..%2F{job['id']}/artifacts/page.html")
    assert status == 404 and b"root:" not in body


def test_unknown_jobs_and_artifacts_are_404(deploy: Stack, site: StaticServer) -> None:
    for path in ("/v1/jobs/0123456789abcdef0123456789abcdef/artifacts",
                 "/v1/jobs/0123456789abcdef0123456789abcdef/artifacts/page.html", "/v1/jobs/nope/artifacts"):
        status, body = deploy.call("GET", path)
        assert status == 404 and body["error"] == "not_found", (path, body)
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("cdp/basic.html")}}, {"done": {"text": "ok"}}]})
    assert deploy.call("GET", f"/v1/jobs/{job['id']}/artifacts") == (200, [])
    status, body = deploy.call("GET", f"/v1/jobs/{job['id']}/artifacts/page.html")
    assert status == 404 and "no such artifact" in body["message"]
    with Client(deploy.url, TOKEN) as client, pytest.raises(RequestRefused) as refused:
        client.artifact(job["id"], "page.html")
    assert refused.value.status == 404


def test_a_bad_artifacts_option_is_a_422_naming_the_field(deploy: Stack) -> None:
    status, body = deploy.call("POST", "/v1/jobs", {"task": "x", "artifacts": {"screenshots": "sometimes"}})
    assert status == 422 and body["fields"][0]["field"] == "artifacts.screenshots"
    status, body = deploy.call("POST", "/v1/jobs", {"task": "x", "artifacts": {"video": "always"}})
    assert status == 422 and body["fields"][0]["field"] == "artifacts.video"
