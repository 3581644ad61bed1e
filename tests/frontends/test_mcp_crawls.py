"""The crawl tools over MCP (streamable HTTP), against the real stack: a crawl of the generated site
started, followed, read page by page, cancelled and resumed; bad input refused with the API's own words; a
hostile site's pages are data and its private links are never visited; a tenant's key sees no
crawl of the operator's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from tests.frontends.test_mcp import error_text, http_client, structured
from tests.queue.stack import Stack
from tests.support.crawl_site import CrawlSite, Manners, Shape
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.e2e


async def finished(client: Client, crawl_id: str, timeout: float = 300) -> dict[str, Any]:
    for _ in range(int(timeout * 4)):
        record = structured(await client.call_tool("crawl_status", {"crawl_id": crawl_id}))
        if record["state"] == "completed":
            return record
        await asyncio.sleep(0.25)
    raise AssertionError(f"crawl {crawl_id} did not complete: {record}")


async def test_a_crawl_is_started_followed_read_and_cancelled(frontend_stack: tuple[Stack, LLMServer]) -> None:
    s, _ = frontend_stack
    with CrawlSite(Shape(sections=2, items=2, orphans=2)) as site:
        async with http_client(s) as client:
            started = structured(await client.call_tool("start_crawl", {
                "start_urls": [site.url("/")], "max_depth": 2, "max_pages": 50, "labels": {"via": "mcp-crawl"}}))
            assert started["state"] == "running" and started["queued"] == 1, started
            done = await finished(client, started["id"])
            assert done["visited"] == done["queued"] and done["failed"] == 0, done
            first = structured(await client.call_tool("crawl_results", {"crawl_id": started["id"], "limit": 3}))
            assert first["total"] == done["queued"] and len(first["lines"]) == 3 and first["next_offset"] == 3
            rest = structured(await client.call_tool("crawl_results", {"crawl_id": started["id"], "offset": 3,
                                                                        "limit": 500}))
            assert rest["next_offset"] is None and len(rest["lines"]) == first["total"] - 3
            urls = {line["url"] for line in first["lines"] + rest["lines"]}
            assert urls == set(site.visits)  # one line per page the site answered
            assert "Text of Home." in first["lines"][0]["data"]["markdown"]

            long = structured(await client.call_tool("start_crawl", {"start_urls": [site.url("/")], "max_depth": 5,
                                                                      "max_pages": 500}))
            cancelled = structured(await client.call_tool("cancel_crawl", {"crawl_id": long["id"]}))
            assert cancelled["state"] in ("cancelling", "completed"), cancelled
            stopped = await finished(client, long["id"])
            assert stopped["counts"]["cancelled"] + stopped["visited"] == stopped["queued"], stopped
            again = structured(await client.call_tool("cancel_crawl", {"crawl_id": long["id"]}))
            assert again["id"] == long["id"]  # idempotent
            resumed = structured(await client.call_tool("resume_crawl", {"crawl_id": long["id"]}))
            assert resumed["state"] == "running" and resumed["frontier"] == 0, resumed
            # a page queued again stands for its cancelled job (queued counts it once); a page that was
            # running at the cancel was visited: its line stays (cancelled) and its links were held
            lines = structured(await client.call_tool("crawl_results", {"crawl_id": long["id"], "limit": 500}))
            ran_at_cancel = sum(line["status"] == "cancelled" for line in lines["lines"])
            requeued = stopped["counts"]["cancelled"] - ran_at_cancel
            assert resumed["queued"] == stopped["queued"] + resumed["resumed"] - requeued, (stopped, resumed, lines)
            assert "HTTP 409" in error_text(await client.call_tool("resume_crawl", {"crawl_id": long["id"]}))
            structured(await client.call_tool("cancel_crawl", {"crawl_id": long["id"]}))
            await finished(client, long["id"])


async def test_bad_crawl_input_is_refused_naming_the_field(frontend_stack: tuple[Stack, LLMServer]) -> None:
    s, _ = frontend_stack
    async with http_client(s) as client:
        assert "start_urls" in error_text(await client.call_tool("start_crawl", {"max_depth": 2}))
        assert "max_depth" in error_text(await client.call_tool("start_crawl", {
            "start_urls": ["http://shop.example/"], "max_depth": -1}))
        assert "include" in error_text(await client.call_tool("start_crawl", {
            "start_urls": ["http://shop.example/"], "include": ["(unclosed"]}))
        assert "output_schema" in error_text(await client.call_tool("start_crawl", {
            "start_urls": ["http://shop.example/"], "output_schema": {"type": "object"}}))
        assert "start_urls" in error_text(await client.call_tool("start_crawl", {"start_urls": ["ftp://x.example/"]}))
        assert "recipe" in error_text(await client.call_tool("start_crawl", {
            "start_urls": ["http://shop.example/"], "recipe": "no-such-recipe"}))
        assert "page_webhook_url" in error_text(await client.call_tool("start_crawl", {
            "start_urls": ["http://shop.example/"], "page_webhook_url": "http://169.254.169.254/latest"}))
        assert "max_pages_per_pattern" in error_text(await client.call_tool("start_crawl", {
            "start_urls": ["http://shop.example/"], "max_pages_per_pattern": 0}))
        for name, bad in (("trailing_slash", "sideways"), ("trailing_slash_sites", {"http://x/": "add"}),
                          ("sitemap_modified_since", "yesterday"), ("retry_blocked", 11)):
            assert name in error_text(await client.call_tool("start_crawl", {
                "start_urls": ["http://shop.example/"], name: bad})), name
        typo = error_text(await client.call_tool("start_crawl", {"start_url": "http://shop.example/"}))
        assert "unknown argument 'start_url'; start_crawl takes " in typo
        assert "no crawl with id" in error_text(await client.call_tool("crawl_status", {"crawl_id": "0" * 32}))
        assert "no crawl with id" in error_text(await client.call_tool("crawl_results", {"crawl_id": "0" * 32}))
        assert "HTTP 404" in error_text(await client.call_tool("cancel_crawl", {"crawl_id": "../../jobs"}))
        assert "no crawl with id" in error_text(await client.call_tool("resume_crawl", {"crawl_id": "0" * 32}))
        assert "HTTP 404" in error_text(await client.call_tool("resume_crawl", {"crawl_id": "../../jobs"}))
        assert "limit" in error_text(await client.call_tool("crawl_results", {"crawl_id": "0" * 32, "limit": 501}))


async def test_a_hostile_sites_private_links_are_not_visited(frontend_stack: tuple[Stack, LLMServer]) -> None:
    s, _ = frontend_stack
    with CrawlSite(Shape(sections=1, items=1, orphans=1), Manners(hostile=True)) as site:
        async with http_client(s) as client:
            started = structured(await client.call_tool("start_crawl", {"start_urls": [site.url("/")],
                                                                         "max_depth": 1, "max_pages": 50}))
            done = await finished(client, started["id"])
            lines = structured(await client.call_tool("crawl_results", {"crawl_id": started["id"],
                                                                         "limit": 500}))["lines"]
    assert done["failed"] == 0 and lines
    assert all(line["url"].startswith(site.origin) for line in lines), [line["url"] for line in lines]
    assert sum(1 for line in lines if "/about" in line["url"]) == 1  # 1,000 spellings of /about: one visit
    assert any("169.254.169.254" in e for e in done["sitemap_errors"]), done  # its robots.txt names it: refused


async def test_a_tenant_sees_no_crawl_of_the_operators(frontend_stack: tuple[Stack, LLMServer]) -> None:
    s, _ = frontend_stack
    with CrawlSite(Shape(sections=1, items=1, orphans=0)) as site:
        status, operator = s.call("POST", "/v1/crawls", {"start_urls": [site.url("/")], "max_depth": 0})
        assert status == 201, operator
        status, made = s.call("POST", "/v1/tenants", {"name": "mcp-crawl-tenant"})
        assert status == 201, made
        async with http_client(s, made["key"]) as client:
            unknown = "0" * 32
            for tool in ("crawl_status", "crawl_results", "cancel_crawl", "resume_crawl"):
                refused = error_text(await client.call_tool(tool, {"crawl_id": operator["id"]}))
                absent = error_text(await client.call_tool(tool, {"crawl_id": unknown}))
                # exactly the answer an unknown id gets (the id the caller sent is echoed, nothing more)
                assert "HTTP 404" in refused and refused.replace(operator["id"], unknown) == absent, (tool, refused)
    assert s.call("GET", f"/v1/crawls/{operator['id']}")[1]["state"] in ("running", "completed")
