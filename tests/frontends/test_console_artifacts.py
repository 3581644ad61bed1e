"""The console's job page lists a job's artifacts and shows its step screenshots: the app in process
(a real redis-server, a real local artifact folder), then a real browser against a real stack."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cdp import BrowserPool
from tests.frontends.console import console_client, login
from tests.frontends.test_in_browser import until
from tests.queue.stack import TOKEN as STACK_TOKEN
from tests.queue.stack import Stack, script
from tests.support.llm_server import LLMServer
from tests.support.servers import StaticServer
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore


async def failed_job(url: str) -> str:
    client = connect(url)
    store = JobStore(client, result_ttl=60)
    try:
        job_id = (await store.create(JobSpec(task="look"), max_steps=3)).job_id
        claim = await store.start(job_id, worker="w", max_attempts=1, stale_after=30)
        await store.finish(job_id, claim.attempt, JobResult(status=JobStatus.failed, error="no"))
    finally:
        await client.aclose()
    return job_id


@pytest.fixture
def console(redis_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, ArtifactStore]]:
    url = f"file://{tmp_path}/store"
    with console_client(redis_url, artifacts_url=url) as c:
        yield c, ArtifactStore.open(url)


def test_the_job_page_links_artifacts_and_shows_screenshots(console: tuple[TestClient, ArtifactStore],
                                                            redis_url: str) -> None:
    client, store = console
    job_id = asyncio.run(failed_job(redis_url))
    folder = store.job(job_id)
    folder.put("step-001.jpg", b"\xff\xd8\xff shot")
    folder.put("page.html", b"<script>alert(1)</script>")
    assert client.get(f"/ui/jobs/{job_id}/artifacts/page.html").status_code == 303, "a session is needed"
    login(client)
    page = client.get(f"/ui/jobs/{job_id}").text
    assert f'href="/ui/jobs/{job_id}/artifacts/page.html"' in page
    assert f'<img src="/ui/jobs/{job_id}/artifacts/step-001.jpg"' in page
    shot = client.get(f"/ui/jobs/{job_id}/artifacts/step-001.jpg")
    assert shot.status_code == 200 and shot.headers["content-type"] == "image/jpeg" and shot.content == b"\xff\xd8\xff shot"
    html = client.get(f"/ui/jobs/{job_id}/artifacts/page.html")
    assert html.status_code == 200 and html.headers["content-disposition"].startswith("attachment")
    assert html.headers["content-security-policy"].startswith("sandbox")
    for name in ("%2e%2e", ".env", "nothing.txt"):
        assert client.get(f"/ui/jobs/{job_id}/artifacts/{name}").status_code == 404, name


async def test_the_live_steps_show_each_steps_screenshot_in_a_browser(frontend_stack: tuple[Stack, LLMServer],
                                                                      pool: BrowserPool, site: StaticServer) -> None:
    s, _ = frontend_stack
    job = s.submit({"script": script(site.url("/cdp/basic.html"), waits=1, text="shown"),
                    "artifacts": {"screenshots": "every_step"}})
    assert s.wait_state(job["id"], {"succeeded", "failed"}, timeout=90)["state"] == "succeeded"
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(f"{s.url}/ui/jobs/{job['id']}?token={STACK_TOKEN}")
        shown = """[...document.querySelectorAll('#steps li.step a.shot img')]
                   .filter(img => img.complete && img.naturalWidth > 0).length"""
        assert await until(page, f"({shown}) === 3 && {shown}", "three step screenshots on the page") == 3
        hrefs = await page.evaluate("[...document.querySelectorAll('#steps a.shot')].map(a => a.pathname)")
        assert hrefs == [f"/ui/jobs/{job['id']}/artifacts/step-00{n}.jpg" for n in (1, 2, 3)]
        assert await page.evaluate("document.querySelectorAll('#artifacts figure.shot img').length") == 3
