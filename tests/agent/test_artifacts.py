"""A job's artifacts in its folder of the artifact store: step screenshots, final page, logs, downloads.

Real Chromium and fixture pages on 127.0.0.1; the store is a real local folder opened through fsspec,
named by the job's settings (``BROWSERD_ARTIFACTS_URL``) as on a worker.
"""

from __future__ import annotations

import json
import time

import pytest

from config import load_settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan
from tests.support.jobs import run_job
from workers.agent.artifacts import MAX_HTML
from workers.agent.config import AgentConfig
from workers.agent.job import JobInputs, JobSession
from workers.agent.journal import MAX_ENTRIES, MAX_TEXT
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.budget import TimeBudget
from workers.jobs.ids import new_id
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus

PASSWORD = "hunter2-very-secret"


@pytest.fixture
def folder(tmp_path):
    """The folder the next job (given its id) keeps its artifacts in."""
    return ArtifactStore.open(f"file://{tmp_path}/store").job(new_id())


def storing(settings, folder):
    """``settings`` (the environment's by default) with the artifact store that holds ``folder``."""
    return (settings or load_settings()).model_copy(update={"artifacts_url": f"file://{folder.store.root}"})


def names(result):
    return [a.name for a in result.artifacts]


async def run(pool, folder, spec, settings=None):
    async with pool.lease() as lease:
        return await run_job(JobSpec(**spec), lease, settings=storing(settings, folder), job_id=folder.job_id)


async def test_every_step_screenshots_are_stored_and_linked_from_their_steps(pool, site, folder):
    result = await run(pool, folder, {"script": [{"go_to_url": {"url": site.url("agent/artifacts.html")}},
                                                 {"scroll_to_bottom": {}}, {"done": {"text": "ok"}}],
                                      "artifacts": {"screenshots": "every_step"}})
    assert result.status == JobStatus.succeeded, result.error
    assert names(result) == ["step-001.jpg", "step-002.jpg", "step-003.jpg"], "a success keeps no page or logs"
    for step in result.steps:
        name = f"step-{step.step:03d}.jpg"
        assert step.screenshot == f"/v1/jobs/{folder.job_id}/artifacts/{name}"
        shot = folder.read(name)
        assert shot[:3] == b"\xff\xd8\xff" and len(shot) <= load_settings().artifact_screenshot_max_kb * 1024
    assert {a.content_type for a in result.artifacts} == {"image/jpeg"}
    assert folder.list() == result.artifacts


async def test_a_failed_job_keeps_its_screenshots_page_and_console_by_default(pool, site, folder):
    result = await run(pool, folder, {"script": [{"go_to_url": {"url": site.url("agent/artifacts.html")}},
                                                 {"wait": {"seconds": 1}}, {"click_element": {"index": 99}}]})
    assert result.status == JobStatus.failed
    assert names(result) == ["console.jsonl", "network.jsonl", "page.html", "page.md", "step-003.jpg"], \
        "one screenshot: of the live page as the job failed, kept as the failing step's"
    assert {a.run for a in result.artifacts} == {1}
    assert [s.screenshot for s in result.steps] == [None, None, f"/v1/jobs/{folder.job_id}/artifacts/step-003.jpg"]
    assert folder.read("step-003.jpg")[:3] == b"\xff\xd8\xff"
    assert "<h1>Order status</h1>" in folder.read("page.html").decode()
    assert folder.read("page.md").decode().splitlines()[:2] == ["# Order status", "Shipped on Monday"], \
        "the page's text as markdown, its heading marked"
    console = [json.loads(line) for line in folder.read("console.jsonl").decode().splitlines()]
    texts = [(c["level"], c["text"]) for c in console]
    assert ("log", "page ready 42") in texts and ("warning", "stock low") in texts
    assert any(level == "exception" and "widget broke" in text for level, text in texts)
    network = [json.loads(line) for line in folder.read("network.jsonl").decode().splitlines()]
    assert any(n["url"].endswith("missing-picture.png") and "404" in n["text"] for n in network)


async def test_a_succeeded_job_keeps_nothing_by_default_and_off_keeps_nothing_ever(pool, site, folder):
    steps = [{"go_to_url": {"url": site.url("agent/artifacts.html")}}, {"done": {"text": "ok"}}]
    ok = await run(pool, folder, {"script": steps})
    assert ok.status == JobStatus.succeeded and ok.artifacts == [] and folder.list() == []
    off = {"screenshots": "off", "page": "off", "logs": "off"}
    failed = await run(pool, folder, {"script": [*steps[:1], {"click_element": {"index": 99}}], "artifacts": off})
    assert failed.status == JobStatus.failed and failed.artifacts == [] and folder.list() == []


async def test_on_failure_takes_no_screenshot_while_a_job_runs_nor_when_it_succeeds(pool, site, folder):
    spec = JobSpec(script=[{"go_to_url": {"url": site.url("agent/artifacts.html")}}, {"scroll_to_bottom": {}},
                           {"done": {"text": "ok"}}])
    assert spec.artifacts.screenshots == "on_failure"
    asked: list[str] = []
    async with pool.lease() as lease:
        off = lease.page.session.on_send(asked.append)  # every command the job sends its tab
        try:
            result = await run_job(spec, lease, settings=storing(None, folder), job_id=folder.job_id)
        finally:
            off()
    assert result.status == JobStatus.succeeded, result.error
    assert "Page.navigate" in asked and "Page.captureScreenshot" not in asked
    assert result.artifacts == [] and folder.list() == []
    assert [s.screenshot for s in result.steps] == [None, None, None]


async def test_always_keeps_the_page_and_logs_of_a_success(pool, site, folder):
    result = await run(pool, folder, {"script": [{"go_to_url": {"url": site.url("agent/artifacts.html")}},
                                                 {"done": {"text": "ok"}}],
                                      "artifacts": {"screenshots": "off", "page": "always", "logs": "always"}})
    assert names(result) == ["console.jsonl", "network.jsonl", "page.html", "page.md"]


async def test_secrets_never_reach_the_logs_or_page_text(pool, site, folder):
    result = await run(pool, folder, {
        "start_url": site.url("agent/artifacts.html"),
        "script": [{"input_text": {"index": 1, "text": "<secret>pw</secret>"}}, {"click_element": {"index": 99}}],
        "secrets": {"pw": PASSWORD}})
    assert result.status == JobStatus.failed
    console = folder.read("console.jsonl").decode()
    assert "typed <secret>pw</secret>" in console, console
    assert "Signing in with <secret>pw</secret>" in folder.read("page.md").decode(), "the page echoed it"
    for link in result.artifacts:
        if not link.name.endswith(".jpg"):
            assert PASSWORD not in folder.read(link.name).decode(), link.name
    assert PASSWORD not in result.model_dump_json()


async def test_downloads_go_to_the_store_and_are_listed_in_the_result(pool, download_site, folder):
    result = await run(pool, folder, {"start_url": download_site.url("downloads.html"), "script": [
        {"click_element": {"index": 1}}, {"click_element": {"index": 2}}, {"done": {"text": "ok"}}]},
        settings=load_settings(download_max_mb=1))
    assert result.status == JobStatus.succeeded, result.error
    assert [(d.name, d.size, d.artifact) for d in result.downloads] == [
        ("report.csv", 24, f"/v1/jobs/{folder.job_id}/artifacts/download-report.csv")]
    assert names(result) == ["download-report.csv"], "the refused download left nothing"
    assert folder.read("download-report.csv") == b"name,price\nkettle,39.90\n"


async def test_a_page_flooding_its_console_keeps_a_bounded_log_and_the_job_goes_on(pool, site, folder):
    started = time.monotonic()
    result = await run(pool, folder, {"script": [{"go_to_url": {"url": site.url("hostile/console-flood.html")}},
                                                 {"wait": {"seconds": 1}},
                                                 {"extract_fields": {"fields": {"after": "#after"}}},
                                                 {"click_element": {"index": 99}}]})
    assert time.monotonic() - started < 60
    assert result.status == JobStatus.failed and result.data == {"after": "still answering"}
    lines = folder.read("console.jsonl").decode().splitlines()
    assert len(lines) == MAX_ENTRIES and all(len(json.loads(line)["text"]) <= MAX_TEXT for line in lines)


async def test_a_huge_page_keeps_bounded_html(pool, site, folder):
    result = await run(pool, folder, {"script": [{"go_to_url": {"url": site.url("hostile/huge-page.html")}},
                                                 {"click_element": {"index": 99}}]})
    assert result.status == JobStatus.failed
    html = folder.read("page.html").decode()
    assert html.startswith("<html><head><title>Huge page</title>") and len(html) == MAX_HTML
    assert folder.read("page.md").decode().startswith("# Endless list\nrendered")


async def test_each_run_of_a_kept_session_keeps_and_lists_its_own_files(pool, site, folder, llm, settings):
    """A follow-up numbers its steps from 1 again: its files are run-2-..., the first run's stay."""
    keep = {"screenshots": "every_step", "page": "always", "logs": "always"}
    spec = JobSpec(task="read the order", start_url=site.url("agent/artifacts.html"), artifacts=keep,
                   options={"keep_session": 30})
    async with pool.lease() as lease:
        session = JobSession(JobInputs(spec=spec, config=AgentConfig.from_settings(settings), lease=lease, artifacts=folder))
        try:
            llm.add(PLANNER, plan(), plan(done=True, final_answer="first"))
            llm.add(NAVIGATOR, act({"wait": {"seconds": 0}}), act({"done": {"text": "first", "success": True}}))
            first = await session.run(TimeBudget(120))
            shot = folder.read("step-001.jpg")
            llm.add(PLANNER, plan(), plan(done=True, final_answer="second"))
            llm.add(NAVIGATOR, act({"go_to_url": {"url": site.url("cdp/basic.html")}}),
                    act({"done": {"text": "second", "success": True}}))
            second = await session.run(TimeBudget(120), "open the basic page")
        finally:
            await session.close()
    assert (first.status, second.status) == (JobStatus.succeeded, JobStatus.succeeded), (first.error, second.error)
    assert len(first.steps) >= 2 and [s.step for s in second.steps][:2] == [1, 2], "a run numbers its own steps"
    first_shots = [f"step-{s.step:03d}.jpg" for s in first.steps]
    second_shots = [f"run-2-step-{s.step:03d}.jpg" for s in second.steps]
    assert names(first) == ["console.jsonl", "network.jsonl", "page.html", "page.md", *first_shots]
    assert names(second) == ["run-2-page.html", "run-2-page.md", *second_shots], \
        "each run's result lists its own files (the basic page logged nothing)"
    assert {a.run for a in first.artifacts} == {1} and {a.run for a in second.artifacts} == {2}
    assert [s.screenshot for s in second.steps] == [f"/v1/jobs/{folder.job_id}/artifacts/{n}" for n in second_shots]
    assert folder.read("step-001.jpg") == shot, "the follow-up did not overwrite the first run's screenshot"
    assert folder.read("page.md").decode().startswith("# Order status")
    assert folder.read("run-2-page.md").decode().startswith("# Hello from the fixture")
    assert folder.list() == sorted([*first.artifacts, *second.artifacts], key=lambda a: a.name)
