"""Tenants' quotas (the API in process, a real redis-server, no worker): over a quota the API answers
429 naming it, with Retry-After when it frees; the admin sets and reads them; other tenants and the
operator are not held by one tenant's quota; bad limits are refused."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from tests.frontends.tenancy import api_client, tenant
from workers.jobs.store.keys import Keys
from workers.jobs.tenants.quotas import until_midnight


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url) as c:
        yield c


def over(answer: Any, quota: str) -> dict[str, Any]:
    assert answer.status_code == 429, answer.text
    body = answer.json()
    assert body["error"] == "quota_exceeded" and body["quota"] == quota and quota in body["message"]
    return body


def script(n: int) -> list[dict[str, Any]]:
    return [{"script": [{"go_to_url": {"url": f"http://127.0.0.1:9/{i}"}}]} for i in range(n)]


def test_queued_quota_refuses_with_429_and_frees_when_a_job_ends(api: TestClient) -> None:
    a = tenant(api, "acme", max_queued=2)
    b = tenant(api, "beta")
    first = api.post("/v1/jobs", json={"task": "one"}, headers=a).json()
    api.post("/v1/jobs", json={"task": "two"}, headers=a)
    body = over(api.post("/v1/jobs", json={"task": "three"}, headers=a), "queued")
    answer = api.post("/v1/jobs", json={"task": "three"}, headers=a)
    assert answer.headers["Retry-After"] == str(int(body["retry_after"])) and body["retry_after"] > 0
    over(api.post("/v1/batches", json=script(1), headers=a), "queued")  # a batch counts too
    assert api.post("/v1/jobs", json={"task": "b"}, headers=b).status_code == 201  # another tenant is not held
    assert api.post("/v1/jobs", json={"task": "op"}).status_code == 201  # nor is the operator
    assert api.get("/v1/jobs", headers=a).json()["jobs"].__len__() == 2  # nothing of the refused was recorded
    api.post(f"/v1/jobs/{first['id']}/cancel", json={}, headers=a)  # one leaves the queue: room for one
    assert api.post("/v1/jobs", json={"task": "three"}, headers=a).status_code == 201
    used = api.get("/v1/tenants/acme/usage").json()
    assert used["queued"] == 2 and used["jobs_today"] == 3


def test_batch_size_quota_never_frees_for_that_batch(api: TestClient) -> None:
    a = tenant(api, "acme", max_batch_size=3)
    answer = api.post("/v1/batches", json=script(4), headers=a)
    body = over(answer, "batch_size")
    assert "retry_after" not in body and "Retry-After" not in answer.headers and "split it" in body["message"]
    assert api.post("/v1/batches", json=script(3), headers=a).status_code == 201
    assert api.post("/v1/batches", json=script(4)).status_code == 201  # the operator has no quota


def test_jobs_per_day_frees_at_midnight_utc(api: TestClient) -> None:
    a = tenant(api, "acme", max_jobs_per_day=3)
    assert api.post("/v1/batches", json=script(2), headers=a).status_code == 201
    body = over(api.post("/v1/batches", json=script(2), headers=a), "jobs_per_day")  # 2 + 2 > 3: none of them
    assert 0 < body["retry_after"] <= until_midnight(datetime.now(UTC)) + 1
    assert api.post("/v1/jobs", json={"task": "third"}, headers=a).status_code == 201
    over(api.post("/v1/jobs", json={"task": "fourth"}, headers=a), "jobs_per_day")
    assert api.get("/v1/tenants/acme/usage").json()["jobs_today"] == 3


def test_the_admin_changes_quotas_and_bad_limits_are_refused(api: TestClient) -> None:
    a = tenant(api, "acme", max_queued=0)
    over(api.post("/v1/jobs", json={"task": "x"}, headers=a), "queued")
    changed = api.put("/v1/tenants/acme/limits", json={"max_queued": 5, "max_running": 2})
    assert changed.status_code == 200 and changed.json()["limits"]["max_running"] == 2
    assert api.post("/v1/jobs", json={"task": "x"}, headers=a).status_code == 201
    for bad in ({"max_queued": -1}, {"max_running": 0}, {"max_batch_size": "many"}, {"max_sessions": 1.5},
                {"quota": 3}, {"allowed_networks": ["0.0.0.0/0"]}):
        assert api.put("/v1/tenants/acme/limits", json=bad).status_code == 422, bad
    assert api.put("/v1/tenants/nobody/limits", json={}).status_code == 404
    assert api.get("/v1/tenants/nobody/usage").status_code == 404
    assert api.put("/v1/tenants/acme/limits", json={}, headers=a).status_code == 404  # a tenant sets none
    assert api.get("/v1/tenants/acme/usage", headers=a).status_code == 404
    b = tenant(api, "beta")
    assert api.get("/v1/tenants/acme/usage", headers=b).status_code == 404  # nor reads another's


def test_sessions_quota(api: TestClient) -> None:
    a = tenant(api, "acme", max_sessions=0)
    over(api.post("/v1/sessions", json={}, headers=a), "sessions")


def test_max_cost_usd_is_checked_at_submission(api: TestClient) -> None:
    a = tenant(api, "acme")
    for bad in (0, -1, "a lot"):
        refused = api.post("/v1/jobs", json={"task": "x", "max_cost_usd": bad}, headers=a)
        assert refused.status_code == 422 and refused.json()["fields"][0]["field"] == "max_cost_usd", refused.text
    made = api.post("/v1/jobs", json={"task": "x", "max_cost_usd": 0.5}, headers=a).json()
    assert made["spec"]["max_cost_usd"] == 0.5
    b = tenant(api, "beta")
    assert api.get(f"/v1/jobs/{made['id']}", headers=b).status_code == 404


def test_a_batch_and_a_schedule_take_a_max_cost_usd(api: TestClient) -> None:
    a = tenant(api, "acme")
    for bad in (0, -2, "ten", True):
        refused = api.post("/v1/batches", json={"jobs": [{"task": "x"}], "max_cost_usd": bad}, headers=a)
        assert refused.status_code == 422 and refused.json()["fields"][0]["field"] == "max_cost_usd", refused.text
    made = api.post("/v1/batches", json={"jobs": [{"task": "x"}], "max_cost_usd": 2.5}, headers=a).json()
    assert made["max_cost_usd"] == 2.5 and made["cost_usd"] == 0 and made["budget_stopped"] is False
    lines = '{"defaults": {}, "max_cost_usd": 1}\n{"task": "y"}\n'
    jsonl = api.post("/v1/batches", content=lines, headers={**a, "Content-Type": "application/x-ndjson"}).json()
    assert jsonl["max_cost_usd"] == 1
    assert api.post("/v1/schedules", json={"every": 3600, "job": {"task": "s"}, "max_cost_usd": -1},
                    headers=a).status_code == 422


def test_a_tenants_daily_budget_in_dollars(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme", max_cost_usd_per_day=0.05)
    b = tenant(api, "beta", max_cost_usd_per_day=0.05)
    assert api.post("/v1/jobs", json={"task": "x"}, headers=a).status_code == 201
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    redis.Redis.from_url(redis_url).incrbyfloat(Keys().tenant_cost("acme", today), 0.05)  # what its workers spent
    body = over(api.post("/v1/jobs", json={"task": "y"}, headers=a), "cost_per_day")
    assert 0 < body["retry_after"] <= until_midnight(datetime.now(UTC)) + 1 and "$0.05" in body["message"]
    assert api.post("/v1/jobs", json={"task": "y"}, headers=b).status_code == 201  # beta's budget is its own
    assert api.get("/v1/tenants/acme/usage").json()["cost_today_usd"] == 0.05
    assert api.put("/v1/tenants/acme/limits", json={"max_cost_usd_per_day": -1}).status_code == 422
