"""A cancelled crawl resumed (issue 28), the API in process on a real redis-server, no worker (pages
stay queued, so the cancel finds them queued): the cancel keeps the frontier (queued pages cancelled
before they ran, links a running page found after it), the resume queues each of them once, the
counters stay right, the tenant's ownership, quotas and the crawl's budget apply; bad input is
refused (unknown id 404, another tenant's 404, a crawl not cancelled 409, a second resume 409)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from fastapi.testclient import TestClient

from config import load_settings
from tests.frontends.tenancy import tenant
from tests.frontends.test_tenant_crawls import api  # noqa: F401  (the fixture: the API in process)
from tests.frontends.test_tenant_crawls import started as started_crawl
from workers.jobs.crawls.store import CrawlStore, FoundURL
from workers.jobs.lifecycle.crawling import grow
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys

TWO = {"start_urls": ["https://shop.example/", "https://shop.example/b"], "max_pages": 10}


def started(api: TestClient, headers: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A crawl of shop.example's two start pages (they stay queued: no worker)."""
    return started_crawl(api, headers, **{**TWO, **spec})


def found_by_a_page(redis_url: str, crawl_id: str, urls: list[str]) -> int:
    """A page still running when the cancel came ends and hands its links to the crawl."""
    found = [FoundURL(u, 1, "https://shop.example/") for u in urls]

    async def run() -> int:
        redis = connect(redis_url)
        try:
            return await grow(CrawlStore(JobStore(redis, result_ttl=3600, keys=Keys())), crawl_id, found,
                              load_settings(redis_url=redis_url, allowed_networks="127.0.0.1/32"))
        finally:
            await redis.aclose()

    return asyncio.run(run())


def lines(api: TestClient, crawl_id: str, headers: dict[str, str]) -> list[str]:
    return api.get(f"/v1/crawls/{crawl_id}/results", headers=headers).text.splitlines()


def test_a_cancelled_crawl_resumes_its_whole_frontier_once(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme")
    crawl = started(api, a)
    cid = crawl["id"]
    cancelled = api.post(f"/v1/crawls/{cid}/cancel", json={}, headers=a).json()
    assert cancelled["counts"]["cancelled"] == 2 and cancelled["frontier"] == 2 and cancelled["state"] == "completed"
    links = ["https://shop.example/p1", "https://shop.example/p2", "https://shop.example/b"]  # /b: seen already
    assert found_by_a_page(redis_url, cid, links) == 0  # queued nothing: held
    held = api.get(f"/v1/crawls/{cid}", headers=a).json()
    assert held["frontier"] == 4 and held["skipped"]["budget"] == 0 and held["discovered"] == 4
    assert held["skipped"]["dedup"] == 1

    resumed = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a)
    assert resumed.status_code == 202, resumed.text
    record = resumed.json()
    assert record["state"] == "running" and record["frontier"] == 0 and record["resumed"] == 4
    assert record["queued"] == 4 and record["counts"]["queued"] == 4 and record["counts"]["cancelled"] == 0
    assert record["discovered"] == 4 and record["visited"] == 0
    rows = lines(api, cid, a)
    urls = Counter(json.loads(r)["url"] for r in rows)
    assert set(urls) == {"https://shop.example/", "https://shop.example/b", "https://shop.example/p1",
                         "https://shop.example/p2"} and max(urls.values()) == 1  # one line per page
    jobs = api.get("/v1/jobs?state=queued", headers=a).json()["jobs"]
    assert len(jobs) == 4 and all(j["tenant"] == "acme" for j in jobs)
    assert api.get("/v1/tenants/acme/usage").json()["queued"] == 4  # its quotas count them

    again = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a)  # running again: nothing to resume
    assert again.status_code == 409 and again.json()["error"] == "conflict", again.text
    assert api.get(f"/v1/crawls/{cid}", headers=a).json()["queued"] == 4

    # cancelled and resumed a second time: the same four pages, still once each
    api.post(f"/v1/crawls/{cid}/cancel", json={}, headers=a)
    second = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a).json()
    assert second["queued"] == 4 and second["counts"]["queued"] == 4 and second["counts"]["cancelled"] == 0
    assert len(lines(api, cid, a)) == 4


def test_resume_refuses_what_is_not_the_callers_cancelled_crawl(api: TestClient) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta")
    crawl = started(api, a)
    cid = crawl["id"]
    running = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a)
    assert running.status_code == 409 and "not cancelled" in running.json()["message"], running.text
    api.post(f"/v1/crawls/{cid}/cancel", json={}, headers=a)
    other = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=b)  # another tenant's: as unknown
    assert other.status_code == 404 and cid in other.text and "acme" not in other.text, other.text
    for bad in ("0" * 32, "not-an-id", "..%2F..%2Fjobs"):
        assert api.post(f"/v1/crawls/{bad}/resume", json={}, headers=a).status_code == 404, bad
    assert api.get(f"/v1/crawls/{cid}", headers=a).json()["frontier"] == 2  # nothing of it moved
    assert api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a).status_code == 202


def test_quotas_and_the_budget_apply_as_at_the_start(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme", max_queued=3)
    crawl = started(api, a, max_pages=3)
    cid = crawl["id"]
    api.post(f"/v1/crawls/{cid}/cancel", json={}, headers=a)
    found_by_a_page(redis_url, cid, ["https://shop.example/p1", "https://shop.example/p2"])
    assert api.get(f"/v1/crawls/{cid}", headers=a).json()["frontier"] == 4
    api.put("/v1/tenants/acme/limits", json={"max_queued": 2})
    over = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a)
    assert over.status_code == 429 and over.json()["quota"] == "queued", over.text
    kept = api.get(f"/v1/crawls/{cid}", headers=a).json()
    assert kept["frontier"] == 4 and kept["state"] == "completed" and kept["counts"]["cancelled"] == 2  # unchanged
    api.put("/v1/tenants/acme/limits", json={"max_queued": 10})
    record = api.post(f"/v1/crawls/{cid}/resume", json={}, headers=a).json()
    # the two start pages were queued before (budget taken once); one of the links fits max_pages 3
    assert record["queued"] == 3 and record["skipped"]["budget"] == 1 and record["frontier"] == 0
    assert record["counts"]["queued"] == 3


def test_a_crawl_whose_tenant_lost_its_ceiling_is_refused_whole(api: TestClient) -> None:
    a = tenant(api, "acme")
    crawl = started(api, a)
    api.post(f"/v1/crawls/{crawl['id']}/cancel", json={}, headers=a)
    api.put("/v1/tenants/acme/limits", json={"allowed_domains": ["other.example"]})
    refused = api.post(f"/v1/crawls/{crawl['id']}/resume", json={}, headers=a)
    assert refused.status_code == 422 and "shop.example" in refused.json()["message"], refused.text
    assert api.get(f"/v1/crawls/{crawl['id']}", headers=a).json()["frontier"] == 2
