"""A schedule's change feed over HTTP (the API in process, a real redis-server, no worker): each run
of the schedule (a batch whose jobs are finished here through the store's own scripts) compared with
the one before; the route's bad input; another tenant's schedule answers 404; crawl schedules are
the operator's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from bench.tenancy import deployed
from tests.frontends.tenancy import ADMIN
from workers.jobs.batches.store import BatchStore
from workers.jobs.lifecycle.finishing import Finisher
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys

SCHEMA = {"type": "object", "properties": {"products": {"type": "array", "items": {
    "type": "object", "x-key": "sku", "properties": {"sku": {"type": "string"}, "price": {"type": "number"}}}}}}


@pytest.fixture
def deployment() -> Iterator[tuple[TestClient, str]]:
    with deployed() as (c, url):  # RedBeat pointed at this Redis, as schedules need
        yield c, url


@pytest.fixture
def api(deployment: tuple[TestClient, str]) -> TestClient:
    return deployment[0]


@pytest.fixture
def redis_url(deployment: tuple[TestClient, str]) -> str:
    return deployment[1]


def tenant(api: TestClient, name: str) -> dict[str, str]:
    made = api.post("/v1/tenants", json={"name": name})
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['key']}"}


def a_run(redis_url: str, schedule_id: str, template: dict[str, Any], data: list[Any]) -> str:
    """One run of the schedule: a batch of its template's jobs, each finished with ``data`` (None: failed),
    as a worker would (``finish`` then the ``Finisher``, which compares the completed run)."""
    async def go() -> str:
        redis = connect(redis_url)
        store = JobStore(redis, result_ttl=3600, keys=Keys())
        try:
            specs = [JobSpec.model_validate({**template, "start_url": f"https://shop.example/{n}"})
                     for n in range(len(data))]
            made = await BatchStore(store).create(specs, [5] * len(specs), schedule_id=schedule_id)
            for job_id, value in zip(made.job_ids, data):
                claim = await store.start(job_id, worker="w", max_attempts=1, stale_after=60)
                result = (JobResult(status=JobStatus.succeeded, data=value) if value is not None
                          else JobResult(status=JobStatus.failed, error="the page did not load"))
                assert await store.finish(job_id, claim.attempt, result)
                await Finisher(store).finished(job_id)
            return made.batch_id
        finally:
            await redis.aclose()
    return asyncio.run(go())


def products(*pairs: tuple[str, float]) -> dict[str, Any]:
    return {"products": [{"sku": sku, "price": price} for sku, price in pairs]}


def test_each_run_is_compared_with_the_one_before_and_only_its_owner_sees_it(api: TestClient, redis_url: str) -> None:
    acme, beta = tenant(api, "acme"), tenant(api, "beta")
    template = {"task": "the products and their prices", "output_schema": SCHEMA}
    made = api.post("/v1/schedules", json={"every": 3600, "enabled": False, "batch": {"jobs": [
        {**template, "start_url": "https://shop.example/0"}, {**template, "start_url": "https://shop.example/1"}]}},
        headers=acme)
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    path = f"/v1/schedules/{sid}/changes"
    assert api.get(path, headers=acme).json() == []

    first = a_run(redis_url, sid, template, [products(("A1", 10), ("A2", 5)), products(("B1", 1))])
    second = a_run(redis_url, sid, template, [products(("A1", 12), ("A3", 7)), None])
    third = a_run(redis_url, sid, template, [products(("A1", 12), ("A3", 7)), products(("B1", 1))])

    feed = api.get(path, headers=acme)
    assert feed.status_code == 200, feed.text
    runs = feed.json()
    assert [r["run"] for r in runs] == [first, second, third]
    assert runs[0]["previous_run"] is None  # the baseline
    two = runs[1]
    assert two["previous_run"] == first
    assert [i["key"] for i in two["added"]] == ["A3"] and [i["key"] for i in two["removed"]] == ["A2"]
    assert two["changed"] == [{"key": "A1", "page": "https://shop.example/0", "item": None,
                               "fields": {"price": {"before": 10, "after": 12}}}]
    assert two["pages_failed"] == ["https://shop.example/1"]  # its B1 is not reported removed
    assert runs[2]["counts"] == {"added": 0, "changed": 0, "removed": 0, "pages_added": 0, "pages_removed": 0,
                                 "pages_failed": 0}

    since = api.get(path, params={"since": runs[1]["at"]}, headers=acme).json()
    assert [r["run"] for r in since] == [third]
    assert [r["run"] for r in api.get(path, params={"limit": 1}, headers=acme).json()] == [third]
    assert len(api.get(path).json()) == 3  # the operator sees every schedule

    login = api.post("/ui/login", data={"token": ADMIN, "next": "/ui/"}, headers={"Origin": str(api.base_url)})
    assert login.status_code == 303, login.text
    page = api.get(f"/ui/schedules/{sid}")  # the console shows the diff, newest run first
    assert page.status_code == 200
    shown = page.text[page.text.index('id="changes"'):]
    assert shown.index(third) < shown.index(second) < shown.index(first)
    assert "1 added, 1 changed, 1 removed, 0 pages gone" in " ".join(shown.split())
    assert "+ A3" in shown and "− A2" in shown and "<del>10</del> → <ins>12</ins>" in shown
    assert "the baseline (first run)" in shown

    hidden = api.get(path, headers=beta)  # another tenant: exactly as if there were none
    assert hidden.status_code == 404 and sid in hidden.json()["message"] and first not in hidden.text
    assert api.delete(f"/v1/schedules/{sid}", headers=acme).status_code == 204
    assert api.get(path, headers=acme).status_code == 404


@pytest.mark.parametrize(("query", "field"), [
    ({"since": "last tuesday"}, "since"), ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": "x"}, "limit"),
])
def test_bad_input_to_the_change_feed_gets_422_naming_the_parameter(api: TestClient, query: dict[str, Any],
                                                                     field: str) -> None:
    sid = api.post("/v1/schedules", json={"every": 3600, "enabled": False, "job": {"task": "x"}}).json()["id"]
    refused = api.get(f"/v1/schedules/{sid}/changes", params=query)
    assert refused.status_code == 422, refused.text
    assert field in [f["field"] for f in refused.json()["fields"]], refused.json()


@pytest.mark.parametrize("schedule_id", ["0" * 32, "../../keys", "%2e%2e"])
def test_the_change_feed_of_no_schedule_is_404(api: TestClient, schedule_id: str) -> None:
    assert api.get(f"/v1/schedules/{schedule_id}/changes").status_code == 404


def test_a_crawl_schedule_is_checked_like_a_crawl_and_is_its_tenants(api: TestClient) -> None:
    crawl = {"start_urls": ["https://shop.example/"], "max_pages": 5}
    made = api.post("/v1/schedules", json={"every": 3600, "enabled": False, "crawl": crawl})
    assert made.status_code == 201, made.text
    assert made.json()["crawl"] == crawl
    for body, field in [
        ({"crawl": {**crawl, "max_depth": -1}}, "crawl.max_depth"),
        ({"crawl": {**crawl, "include": ["("]}}, "crawl.include"),
        ({"crawl": {"max_pages": 5}}, "crawl"),
        ({"crawl": crawl, "job": {"task": "x"}}, "body"),
        ({"crawl": crawl, "mode": "auto"}, "body"),
    ]:
        refused = api.post("/v1/schedules", json={"every": 3600, **body})
        assert refused.status_code == 422, (body, refused.text)
        assert field in [f["field"] for f in refused.json()["fields"]], (body, refused.json())
    acme = tenant(api, "acme")  # crawls are owned by tenants now: a tenant's crawl schedule is its own
    mine = api.post("/v1/schedules", json={"every": 3600, "enabled": False, "crawl": crawl}, headers=acme)
    assert mine.status_code == 201 and mine.json()["tenant"] == "acme", mine.text
    refused = api.post("/v1/schedules", json={"every": 3600, "crawl": {**crawl, "allowed_networks": ["127.0.0.1/32"]}},
                       headers=acme)  # within its ceiling (no network of its own), not only the operator's
    assert refused.status_code == 422 and refused.json()["fields"][0]["field"] == "crawl.allowed_networks"
    assert "tenant 'acme'" in refused.json()["message"]
