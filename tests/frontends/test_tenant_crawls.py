"""Crawls are owned by tenants (the API in process, a real redis-server, no worker: pages stay
queued): a tenant starts, lists, reads, cancels and streams only its own crawls, another tenant's
crawl id answers 404 everywhere, and every page job carries the crawl's tenant, so its ceilings,
quotas and fair dispatch apply to each page, also to the pages the crawl finds as it grows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from config import load_settings
from bench.tenancy import deployed
from tests.frontends.tenancy import api_client, tenant
from workers.jobs.crawls.store import CrawlStore, FoundURL
from workers.jobs.lifecycle.crawling import grow
from workers.jobs.recipes.models import Recipe, RecipeStep
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys

SHOP = {"start_urls": ["https://shop.example/"], "max_pages": 5, "allowed_domains": ["shop.example"]}


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url) as c:
        yield c


def started(api: TestClient, headers: dict[str, str], **spec: Any) -> dict[str, Any]:
    answer = api.post("/v1/crawls", json={**SHOP, **spec}, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_a_tenant_sees_and_acts_on_only_its_own_crawls(api: TestClient) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta")
    crawl = started(api, a)
    assert crawl["tenant"] == "acme"
    mine = started(api, b)
    operator = started(api, {})
    assert operator["tenant"] is None
    cid = crawl["id"]
    for method, path in (("GET", f"/v1/crawls/{cid}"), ("POST", f"/v1/crawls/{cid}/cancel"),
                         ("GET", f"/v1/crawls/{cid}/results")):
        refused = api.request(method, path, headers=b, **({"json": {}} if method == "POST" else {}))
        assert refused.status_code == 404 and refused.json()["error"] == "not_found", (path, refused.text)
        assert cid in refused.text and "acme" not in refused.text  # the id it was asked for, nothing of A's
    assert api.get(f"/v1/crawls/{operator['id']}", headers=b).status_code == 404  # nor the operator's
    assert [c["id"] for c in api.get("/v1/crawls", headers=b).json()] == [mine["id"]]
    assert [c["id"] for c in api.get("/v1/crawls?tenant=acme", headers=b).json()] == [mine["id"]]  # not a filter for B
    assert [c["id"] for c in api.get("/v1/crawls", headers=a).json()] == [cid]
    # the admin sees all of them, and filters by tenant
    assert {c["id"] for c in api.get("/v1/crawls").json()} == {cid, mine["id"], operator["id"]}
    assert [c["id"] for c in api.get("/v1/crawls?tenant=acme").json()] == [cid]
    # A reads, streams and cancels its own
    assert api.get(f"/v1/crawls/{cid}", headers=a).json()["queued"] == 1
    lines = api.get(f"/v1/crawls/{cid}/results", headers=a).text.splitlines()
    assert len(lines) == 1 and "shop.example" in lines[0]
    cancelled = api.post(f"/v1/crawls/{cid}/cancel", json={}, headers=a)
    assert cancelled.status_code == 202 and cancelled.json()["counts"]["cancelled"] == 1
    assert api.get(f"/v1/crawls/{mine['id']}", headers=b).json()["counts"]["queued"] == 1  # B's untouched


def test_its_page_jobs_are_the_tenants_parked_for_fair_dispatch(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme")
    crawl = started(api, a, start_urls=["https://shop.example/", "https://shop.example/b"])
    jobs = api.get("/v1/jobs", headers=a).json()["jobs"]
    assert len(jobs) == 2 and all(j["tenant"] == "acme" for j in jobs)
    for job in jobs:
        assert api.get(f"/v1/jobs/{job['id']}", headers=a).json()["spec"]["labels"]["crawl"] == crawl["id"]
    assert api.get("/v1/jobs", headers=tenant(api, "beta")).json()["jobs"] == []
    used = api.get("/v1/tenants/acme/usage").json()
    assert used["queued"] == 2 and used["jobs_today"] == 2 and used["waiting_dispatch"] + used["released"] == 2
    assert api.get(f"/v1/batches/{crawl['batch_id']}", headers=a).json()["tenant"] == "acme"  # its batch too


@pytest.mark.parametrize("networks", [["0.0.0.0/0"], ["::/0"], ["169.254.169.254/32"], ["127.0.0.1/32"]])
def test_a_tenants_crawl_within_its_ceilings(api: TestClient, networks: list[str]) -> None:
    a = tenant(api, "acme")  # no network of its own: even the operator's loopback is past its ceiling
    refused = api.post("/v1/crawls", json={**SHOP, "allowed_networks": networks}, headers=a)
    assert refused.status_code == 422, refused.text
    message = refused.json()["message"]  # the ceiling it is past: the operator's, else the tenant's
    assert networks[0] in message and ("BROWSERD_ALLOWED_NETWORKS" in message or "tenant 'acme'" in message)
    assert refused.json()["fields"][0]["field"] == "allowed_networks"
    assert api.get("/v1/crawls", headers=a).json() == [] and api.get("/v1/jobs", headers=a).json()["jobs"] == []


def test_domain_steps_and_timeout_ceilings_apply_to_each_page(api: TestClient) -> None:
    a = tenant(api, "acme", allowed_domains=["shop.example"], max_steps=5, timeout=30)
    outside = api.post("/v1/crawls", json={"start_urls": ["https://other.example/"],
                                           "allowed_domains": ["other.example"]}, headers=a)
    assert outside.status_code == 422 and "other.example" in outside.json()["message"], outside.text
    long = api.post("/v1/crawls", json={**SHOP, "timeout": 60}, headers=a)
    assert long.status_code == 422 and "timeout" in long.json()["message"], long.text
    crawl = started(api, a, task="read the page")
    job = api.get(f"/v1/jobs/{api.get('/v1/jobs', headers=a).json()['jobs'][0]['id']}", headers=a).json()
    assert job["spec"]["timeout"] == 30 and job["spec"]["options"]["max_steps"] == 5  # filled from its ceiling
    assert crawl["tenant"] == "acme"


def test_quotas_refuse_a_crawl_whole_and_skip_pages_found_past_them(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme", max_queued=2)
    refused = api.post("/v1/crawls", json={**SHOP, "start_urls": [f"https://shop.example/{i}" for i in range(3)]},
                       headers=a)
    assert refused.status_code == 429 and refused.json()["quota"] == "queued", refused.text
    assert api.get("/v1/crawls", headers=a).json() == [] and api.get("/v1/crawls").json() == []  # nothing stays
    crawl = started(api, a)  # one page queued: one more fits
    found = [FoundURL(f"https://shop.example/p{i}", 1, "https://shop.example/") for i in range(3)]

    async def found_by_a_page() -> int:
        redis = connect(redis_url)
        try:
            return await grow(CrawlStore(JobStore(redis, result_ttl=3600, keys=Keys())), crawl["id"], found,
                              load_settings(redis_url=redis_url, allowed_networks="127.0.0.1/32"))
        finally:
            await redis.aclose()

    assert asyncio.run(found_by_a_page()) == 0  # 1 + 3 > 2: none of them, counted, not marked seen
    record = api.get(f"/v1/crawls/{crawl['id']}", headers=a).json()
    assert record["skipped"]["quota"] == 3 and record["queued"] == 1 and record["discovered"] == 1
    api.put("/v1/tenants/acme/limits", json={"max_queued": 10})
    assert asyncio.run(found_by_a_page()) == 3  # found again later, once the quota has room
    assert api.get("/v1/tenants/acme/usage").json()["jobs_today"] == 4  # a refused admission counts nothing


def test_a_tenants_crawl_schedule_runs_as_its_crawl() -> None:
    with deployed() as (api, _):  # RedBeat pointed at this Redis: schedules are written there
        a, b = tenant(api, "acme"), tenant(api, "beta")
        bad = api.post("/v1/schedules", json={"every": 3600, "crawl": {**SHOP, "allowed_networks": ["10.0.0.0/8"]}},
                       headers=a)
        assert bad.status_code == 422 and bad.json()["fields"][0]["field"].startswith("crawl"), bad.text
        schedule = api.post("/v1/schedules", json={"every": 3600, "crawl": SHOP}, headers=a)
        assert schedule.status_code == 201 and schedule.json()["tenant"] == "acme", schedule.text
        sid = schedule.json()["id"]
        assert api.post(f"/v1/schedules/{sid}/run", json={}, headers=b).status_code == 404
        run = api.post(f"/v1/schedules/{sid}/run", json={}, headers=a)
        assert run.status_code == 201 and run.json()["tenant"] == "acme", run.text
        crawls = api.get("/v1/crawls", headers=a).json()
        assert len(crawls) == 1 and crawls[0]["batch_id"] == run.json()["id"] and crawls[0]["tenant"] == "acme"
        assert api.get("/v1/crawls", headers=b).json() == []
        jobs = api.get(f"/v1/jobs?schedule={sid}", headers=a).json()["jobs"]
        assert api.get("/v1/jobs", headers=a).json()["jobs"][0]["tenant"] == "acme" and jobs == []  # pages: the crawl's


def test_bad_input_is_refused_for_a_tenant_too(api: TestClient) -> None:
    a = tenant(api, "acme")
    for bad in ({}, {"start_urls": ["not a url"]}, {**SHOP, "max_pages": 0}, {**SHOP, "include": ["(unclosed"]}):
        assert api.post("/v1/crawls", json=bad, headers=a).status_code == 422, bad
    assert api.get("/v1/crawls?limit=0", headers=a).status_code == 422
    assert api.get("/v1/crawls/not-an-id", headers=a).status_code == 404
    assert api.get("/v1/crawls", headers={"Authorization": "Bearer bdk_nope_nope"}).status_code == 401


def _save_recipe(redis_url: str, tenant: str | None, name: str = "read-item") -> None:
    """A recipe reading each page's heading, saved as ``tenant``'s (None: the operator's)."""
    async def save() -> None:
        redis = connect(redis_url)
        try:
            recipe = Recipe(name=name, task="read the item on the page", start_url="https://shop.example/item/1",
                            params={"section": "books"},
                            steps=[RecipeStep(action="extract_fields", params={"fields": {"title": "h1"}})])
            assert await RecipeStore(redis, Keys(), tenant=tenant).save(recipe) is not None
        finally:
            await redis.aclose()
    asyncio.run(save())


def test_a_crawls_recipe_is_its_tenants_own(api: TestClient, redis_url: str) -> None:
    """Each page replays the tenant's recipe: one only another tenant (or the operator) has is refused
    at submission as a job naming it is, before anything is queued; so are wrong parameters."""
    a, b = tenant(api, "acme"), tenant(api, "beta")
    _save_recipe(redis_url, "beta", "beta-only")
    _save_recipe(redis_url, None, "operators")
    for name in ("beta-only", "operators", "no-such-recipe"):
        refused = api.post("/v1/crawls", json={**SHOP, "recipe": name, "params": {"section": "x"}}, headers=a)
        assert refused.status_code == 422, refused.text
        assert refused.json()["fields"][0]["field"] == "recipe" and "beta" not in refused.json()["message"].replace(
            "beta-only", ""), refused.text
    _save_recipe(redis_url, "acme")
    wrong = api.post("/v1/crawls", json={**SHOP, "recipe": "read-item", "params": {"nope": "1"}}, headers=a)
    assert wrong.status_code == 422 and wrong.json()["fields"][0]["field"].startswith("params."), wrong.text
    assert api.get("/v1/crawls", headers=a).json() == []  # nothing stays of a refused crawl
    crawl = started(api, a, recipe="read-item", params={"section": "books"}, heal=False)
    jobs = api.get("/v1/jobs", headers=a).json()["jobs"]
    spec = api.get(f"/v1/jobs/{jobs[0]['id']}", headers=a).json()["spec"]
    assert (spec["recipe"], spec["params"], spec["heal"], spec["start_url"]) == (
        "read-item", {"section": "books"}, False, "https://shop.example/")
    assert crawl["spec"]["recipe"] == "read-item"
    # B's schedule holding a crawl with A's recipe is refused too; with B's own, taken
    sched = api.post("/v1/schedules", json={"every": 3600, "crawl": {**SHOP, "recipe": "read-item",
                                                                     "params": {"section": "books"}}}, headers=b)
    assert sched.status_code == 422 and sched.json()["fields"][0]["field"] == "crawl.recipe", sched.text


def test_a_crawls_page_webhook_is_checked_as_a_jobs(api: TestClient) -> None:
    a = tenant(api, "acme")
    for url in ("http://127.0.0.1:9/hook", "http://10.0.0.1/hook", "http://169.254.169.254/latest", "ftp://x.example/"):
        refused = api.post("/v1/crawls", json={**SHOP, "page_webhook_url": url}, headers=a)
        assert refused.status_code == 422 and refused.json()["fields"][0]["field"] == "page_webhook_url", refused.text
    started(api, a, page_webhook_url="https://hooks.example/pages")
    job = api.get("/v1/jobs", headers=a).json()["jobs"][0]
    assert api.get(f"/v1/jobs/{job['id']}", headers=a).json()["spec"]["webhook_url"] == "https://hooks.example/pages"


@pytest.mark.parametrize(("extra", "field"), [
    ({"recipe": "r", "task": "t"}, "body"), ({"params": {"a": "b"}}, "body"), ({"heal": False}, "body"),
    ({"llm_extraction": True}, "body"), ({"recipe": "no spaces allowed"}, "recipe"),
    ({"max_pages_per_pattern": 0}, "max_pages_per_pattern"), ({"max_pages_per_pattern": "many"}, "max_pages_per_pattern"),
])
def test_bad_recipe_and_cap_options_are_refused_naming_the_field(api: TestClient, extra: dict[str, Any],
                                                                 field: str) -> None:
    refused = api.post("/v1/crawls", json={**SHOP, **extra}, headers=tenant(api, "acme"))
    assert refused.status_code == 422 and field in [f["field"] for f in refused.json()["fields"]], refused.text
