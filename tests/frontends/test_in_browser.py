"""The console in a real browser (browserd's own CDP layer) against a real stack: redis-server, the
API, a Celery worker with Chromium, and the scripted LLM. An operator logs in, submits an agent
job from the form and watches its steps appear live, cancels a running job, opens a batch.

The job page's screenshot is kept at ``tests/artifacts/console-job.png`` (CI artifact, with
``console-live.png`` of the live view); with
``BROWSERD_DOCS_SCREENSHOT=1`` it is also written to ``docs/console.png`` for the README.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from cdp import BrowserPool, EvaluationError, Page
from tests.frontends.model import ANSWER, MEMORY, WAITS
from tests.queue.stack import ROOT, TOKEN, Stack, script
from tests.support.llm_server import LLMServer
from tests.support.servers import StaticServer

ARTIFACTS = ROOT / "tests" / "artifacts"


async def until(page: Page, expression: str, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = await page.evaluate(expression)
        except EvaluationError:  # the next page is still loading: its elements are not there yet
            value = None
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; page: "
                         f"{await page.evaluate('location.href')} {await page.evaluate('document.body.innerText')!r:.1500}")


async def text(page: Page, selector: str) -> str:
    return await page.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")


async def fill(page: Page, values: dict[str, str]) -> None:
    await page.evaluate(f"""(() => {{
        for (const [name, value] of Object.entries({json.dumps(values)})) {{
            const field = document.querySelector(`[name="${{name}}"]`);
            if (field.type === 'radio') document.querySelector(`[name="${{name}}"][value="${{value}}"]`).checked = true;
            else field.value = value;
        }}
    }})()""")


async def click(page: Page, selector: str) -> None:
    await page.evaluate(f"document.querySelector({json.dumps(selector)}).click()")


async def test_an_operator_drives_the_console(frontend_stack: tuple[Stack, LLMServer], pool: BrowserPool,
                                              site: StaticServer) -> None:
    s, _ = frontend_stack
    async with pool.lease() as lease:
        page = lease.page
        await page.session.send("Emulation.setDeviceMetricsOverride",
                                {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False})

        # log in: the console sends a stranger to its login form, and keeps a cookie script cannot read
        await page.goto(s.url + "/ui/")
        assert await page.evaluate("location.pathname") == "/ui/login"
        await fill(page, {"token": TOKEN})
        await click(page, "form[action='/ui/login'] button")
        await until(page, "location.pathname === '/ui/' && !!document.getElementById('jobs')", "the jobs page")
        assert TOKEN not in await page.evaluate("location.href + document.cookie + document.body.innerHTML")

        # a bad form comes back with the error next to its field
        await page.goto(s.url + "/ui/submit")
        await fill(page, {"kind": "task", "task": "anything", "options.max_steps": "0"})
        await click(page, "#submit-button")
        error = await until(page, "(document.querySelector('.field-error[data-field=\"options.max_steps\"]') || {}).textContent",
                            "the field error")
        assert "greater than or equal to 1" in error
        assert await page.evaluate("document.getElementById('task').value") == "anything", "the form keeps its values"

        # submit an agent job from the form; its steps appear while it runs
        await fill(page, {"kind": "task", "task": "Say what the page says", "options.max_steps": "10",
                          "start_url": site.url("/cdp/basic.html"), "labels": "suite=console"})
        await click(page, "#submit-button")
        await until(page, "location.pathname.startsWith('/ui/jobs/') && !!document.getElementById('job-state') "
                          "&& !!document.getElementById('stream-status')", "the job page")  # committed and parsed
        job_id = (await page.evaluate("location.pathname")).rsplit("/", 1)[1]
        seen = []  # (steps on screen, state on screen) while the job runs
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            seen.append(await page.evaluate("[document.querySelectorAll('#steps li.step').length, "
                                            "document.getElementById('job-state').textContent, "
                                            "document.getElementById('stream-status').textContent]"))
            if seen[-1][1:] == ["succeeded", "finished"]:
                break
            await asyncio.sleep(0.2)
        assert seen[-1][1:] == ["succeeded", "finished"], seen[-5:]
        live = {count for count, state, stream in seen if state == "running" and stream == "live"}
        assert len(live - {0}) >= 2, f"steps should appear one by one while the job runs: {seen}"
        steps = await page.evaluate("""[...document.querySelectorAll('#steps li.step')].map(li => ({
            step: li.dataset.step, text: li.innerText, bars: li.querySelectorAll('svg.timeline rect').length,
            plan: !!li.querySelector('.plan')}))""")
        assert [st["step"] for st in steps] == [str(i) for i in range(1, len(steps) + 1)] and len(steps) > WAITS
        assert all(st["bars"] == 3 for st in steps), "a bar per phase: dom, llm, action"
        assert "wait" in steps[0]["text"] and "let the page settle" in steps[0]["text"]
        assert "basic.html" in steps[0]["text"] and "tokens in" in steps[0]["text"]
        assert "done" in steps[-1]["text"] and steps[-1]["plan"], "the planner's verdict shows on the last step"
        brain = await page.evaluate("""[...document.querySelector('#steps li.step .brain').querySelectorAll('p')]
            .map(p => [p.dataset.field, p.innerText, p.querySelectorAll('*').length])""")
        assert brain == [["evaluation_previous_goal", "evaluation: Success - waited 0 times", 2],
                         ["memory", "memory: " + MEMORY, 2], ["next_goal", "next goal: wait", 2]], \
            "the navigator's evaluation, memory and next goal show on the step, as text in two spans each"
        assert await page.evaluate("[window.pwned, document.querySelectorAll('#steps .brain script, #steps .brain img')"
                                   ".length]") == [None, 0], "a <script> in the memory stays inert text"
        assert await text(page, "#final-answer") == ANSWER
        ARTIFACTS.mkdir(exist_ok=True)
        shot = await page.screenshot(full_page=True)
        (ARTIFACTS / "console-job.png").write_bytes(shot)
        if os.environ.get("BROWSERD_DOCS_SCREENSHOT"):
            (ROOT / "docs").mkdir(exist_ok=True)
            (ROOT / "docs" / "console.png").write_bytes(shot)

        # the list shows it, with the live counters and the outcome chart
        await page.goto(s.url + "/ui/?label=suite%3Dconsole")
        rows = await page.evaluate("[...document.querySelectorAll('#jobs tr[data-job]')].map(r => r.dataset.job)")
        assert rows == [job_id]
        # the chart counts the store's recent jobs, of every test that shared this stack before (which ones
        # depends on how the run was split): the share the API gives for the same jobs
        status, recent = s.call("GET", "/v1/jobs?limit=200")
        assert status == 200
        finished = [j["state"] for j in recent["jobs"] if j["state"] in ("succeeded", "failed", "cancelled")]
        assert "succeeded" in finished
        assert await text(page, "#success-rate") == "%.0f%%" % (100 * finished.count("succeeded") / len(finished))
        assert await page.evaluate("+document.querySelector('#counters [data-state=succeeded]').textContent") >= 1

        # watch a running job's browser live, then cancel it from its page
        long = s.submit({"script": script(site.url("/console/ticking.html"), waits=30)})
        await page.goto(f"{s.url}/ui/jobs/{long['id']}")
        await until(page, "document.getElementById('job-state').textContent === 'running'", "the long job to run", 60)
        assert not s.redis.exists(f"browserd:job:{long['id']}:watched"), "nobody watches yet: no screencast"
        await click(page, "#live-toggle")
        await until(page, "document.getElementById('live-status').textContent === 'live' && "
                          "document.getElementById('live-frame').naturalWidth > 100", "a live frame", 30)
        first = await page.evaluate("document.getElementById('live-frame').src")
        assert first.startswith("data:image/jpeg;base64,")
        await until(page, f"document.getElementById('live-frame').src !== {json.dumps(first)}", "a second frame", 15)
        (ARTIFACTS / "console-live.png").write_bytes(await page.screenshot())
        await click(page, "#live-toggle")
        assert await text(page, "#live-status") == "off"
        await click(page, "#cancel")
        await until(page, "location.pathname.endsWith('" + long["id"] + "') && "
                          "(document.getElementById('job-state') || {}).textContent === 'cancelled'", "the cancel", 30)
        assert s.job(long["id"])["state"] == "cancelled"

        # open a batch: progress and counters, live until it completes
        status, batch = s.call("POST", "/v1/batches", [
            {"script": script(site.url("/cdp/basic.html"), waits=0, text=f"b{i}")} for i in range(3)])
        assert status == 201, batch
        await page.goto(s.url + "/ui/batches")
        await until(page, f"!!document.querySelector('#batches tr[data-batch=\"{batch['id']}\"]')", "the batch in the list")
        await click(page, f"#batches tr[data-batch=\"{batch['id']}\"] a")
        await until(page, f"location.pathname === '/ui/batches/{batch['id']}'", "the batch page")
        await until(page, "document.getElementById('batch-state').textContent === 'completed'", "the batch to complete", 60)
        assert await text(page, "#batch-done") == "3 of 3 done"
        assert await page.evaluate("+document.querySelector('#batch-counts [data-state=succeeded]').textContent") == 3
        assert await page.evaluate("document.getElementById('batch-results').getAttribute('href')") == \
            f"/ui/batches/{batch['id']}/results"


async def test_an_operator_follows_a_crawl(frontend_stack: tuple[Stack, LLMServer], pool: BrowserPool,
                                           site: StaticServer) -> None:
    s, _ = frontend_stack
    status, crawl = s.call("POST", "/v1/crawls", {"start_urls": [site.url("/cdp/basic.html")], "max_depth": 1,
                                                  "max_pages": 5})
    assert status == 201, crawl
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(s.url + "/ui/login")
        await fill(page, {"token": TOKEN})
        await click(page, "form[action='/ui/login'] button")
        await until(page, "location.pathname === '/ui/' && !!document.querySelector(\"nav a[href='/ui/crawls']\")",
                    "the jobs page, its nav linking the crawls")
        await click(page, "nav a[href='/ui/crawls']")
        await until(page, f"!!document.querySelector('#crawls tr[data-crawl=\"{crawl['id']}\"]')", "the crawl in the list")
        await click(page, f"#crawls tr[data-crawl=\"{crawl['id']}\"] a")
        await until(page, f"location.pathname === '/ui/crawls/{crawl['id']}'", "the crawl page")
        # the counters refresh in place (htmx) until the crawl completes: the page is not reloaded
        await page.evaluate("window.sameDocument = true")
        await until(page, "document.getElementById('crawl-state').textContent === 'completed'", "the crawl to complete", 90)
        assert await page.evaluate("window.sameDocument") is True
        counters = await page.evaluate("Object.fromEntries([...document.querySelectorAll('[data-counter]')]"
                                       ".map(n => [n.dataset.counter, +n.textContent]))")
        assert counters["discovered"] == counters["queued"] == counters["visited"] == 2 and counters["failed"] == 0
        assert await page.evaluate("!document.getElementById('cancel-crawl')")
        await page.goto(f"{s.url}/ui/crawls/{crawl['id']}")  # the lines are read when the page is
        urls = await page.evaluate("[...document.querySelectorAll('#crawl-lines tr[data-job] td.url a')]"
                                   ".map(a => a.title)")
        assert sorted(urls) == sorted([site.url("/cdp/basic.html"), site.url("/cdp/basic.html?tab=2")])
