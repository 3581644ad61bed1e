"""Incremental runs end to end: a scheduled crawl with an agent task on each page (the scripted
model reads the page's sentence), run, changes planted, run again. The second run asks the model
only about the pages that changed or are new; every other page's result says it reused the first
run's extraction; the change feed still lists exactly the planted changes. A scheduled batch's job
on an unchanged page reuses its read the same way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.batches.helpers import results, wait_completed
from tests.queue.stack import Stack, stack, wait_until
from tests.support.crawl_site import READ_SCHEMA, READ_TASK, CrawlSite, Shape, read_page
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def llm() -> Iterator[LLMServer]:
    with LLMServer() as server:
        server.responder = read_page
        yield server


@pytest.fixture(scope="module")
def crawler(llm: LLMServer) -> Iterator[Stack]:
    with stack(llm_base_url=llm.base_url, openai_api_key="sk-test") as s:
        s.start_worker(concurrency=4)
        yield s


def run_schedule(s: Stack, schedule_id: str, n: int) -> str:
    status, run = s.call("POST", f"/v1/schedules/{schedule_id}/run")
    assert status == 201, run
    wait_completed(s, run["id"], 600)
    wait_until(lambda: len(s.call("GET", f"/v1/schedules/{schedule_id}/changes")[1]) == n, 60, f"run {n} compared")
    return str(run["id"])


def test_a_second_run_asks_the_model_only_about_changed_pages(crawler: Stack, llm: LLMServer) -> None:
    with CrawlSite(Shape(sections=2, items=4, orphans=4)) as site:
        crawl = {"start_urls": [site.url("/")], "max_depth": 2, "max_pages": 200, "task": READ_TASK,
                 "output_schema": READ_SCHEMA}
        status, made = crawler.call("POST", "/v1/schedules", {"every": 3600, "enabled": False, "crawl": crawl})
        assert status == 201, made
        sid = made["id"]
        first = run_schedule(crawler, sid, 1)
        calls_first = len(llm.requests)
        lines = results(crawler, first, "batches")
        assert all(line["status"] == "succeeded" for line in lines), [(l["status"], l["error"]) for l in lines
                                                                      if l["status"] != "succeeded"]
        assert not any(line["reused_from"] for line in lines)
        site.plant(changed=2, gone=1, added=1)
        second = run_schedule(crawler, sid, 2)
        calls_second = len(llm.requests) - calls_first

    again = results(crawler, second, "batches")
    assert all(line["status"] == "succeeded" for line in again), again
    fresh = [line for line in again if not line["reused_from"]]
    revised = {f"Text of Item {s}/{i}, revised." for s, i in site.revised}
    assert {line["data"]["text"] for line in fresh} == revised | {f"Text of Orphan {site.orphans}."}, fresh
    reused = [line for line in again if line["reused_from"]]
    firsts = {line["id"] for line in lines}
    assert reused and all(line["reused_from"] in firsts for line in reused)
    per_page = calls_first / len(lines)
    assert calls_second <= per_page * len(fresh) + 1, (calls_first, calls_second, len(lines), len(fresh))

    feed = crawler.call("GET", f"/v1/schedules/{sid}/changes")[1]
    got = feed[1]["counts"]
    assert {k: got[k] for k in site.planted()} == site.planted() and got["pages_failed"] == 0, got
    assert {c["key"] for c in feed[1]["changed"]} == {site.url(f"/item/{s}/{i}") for s, i in site.revised}

    job = crawler.job(reused[0]["id"])
    step = job["result"]["steps"][0]
    assert job["result"]["reused_from"] == reused[0]["reused_from"] and step["replayed"]
    assert step["actions"][0]["name"] == "reuse_unchanged" and job["result"]["totals"]["llm_calls"] == 0


def test_a_scheduled_batch_job_on_an_unchanged_page_reuses_its_read(crawler: Stack, llm: LLMServer) -> None:
    with CrawlSite(Shape(sections=1, items=2, orphans=0)) as site:
        job: dict[str, Any] = {"start_url": site.url("/item/0/1"), "task": READ_TASK, "output_schema": READ_SCHEMA}
        status, made = crawler.call("POST", "/v1/schedules", {"every": 3600, "enabled": False,
                                                             "batch": {"jobs": [job]}})
        assert status == 201, made
        sid = made["id"]
        before = len(llm.requests)
        first = results(crawler, run_schedule(crawler, sid, 1), "batches")[0]
        assert first["status"] == "succeeded" and first["data"] == {"text": "Text of Item 0/1."}, first
        asked = len(llm.requests) - before
        assert asked > 0
        second = results(crawler, run_schedule(crawler, sid, 2), "batches")[0]
        assert second["reused_from"] == first["id"] and second["data"] == first["data"]
        assert len(llm.requests) - before == asked  # no model call in the second run
        site.plant(changed=1, gone=0, added=0)  # item 0/1 is the one reworded
        third = results(crawler, run_schedule(crawler, sid, 3), "batches")[0]
        assert third["reused_from"] is None and third["data"] == {"text": "Text of Item 0/1, revised."}, third
        changes = crawler.call("GET", f"/v1/schedules/{sid}/changes")[1]
        assert [c["counts"]["changed"] for c in changes] == [0, 0, 1]
