"""Tenants (the API in process, a real redis-server): keys made, shown once, kept hashed, rotated and
revoked (at once, an open event stream too); another tenant's objects answer 404 on every route,
MCP tool and console page (``bench.tenancy`` walks them); each tenant within its ceilings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

import workers.jobs.metrics as metrics
from bench.tenancy import Report, deployed, seed, walk, walk_routes
from daemon.mcp.http import CALLER
from tests.frontends.tenancy import ADMIN, api_client, tenant


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url) as c:
        yield c


def test_keys_are_shown_once_kept_hashed_rotated_and_revoked(api: TestClient, redis_url: str) -> None:
    made = api.post("/v1/tenants", json={"name": "acme"}).json()
    key = made["key"]
    assert key.startswith(f"bdk_{made['key_id']}_")
    listed = api.get("/v1/tenants").json()["tenants"]
    assert [t["name"] for t in listed] == ["acme"] and "key" not in listed[0]
    dump = str(redis.Redis.from_url(redis_url).hgetall("browserd:tenants"))
    assert key.split("_", 2)[2] not in dump and key not in dump  # only the hash is kept
    assert api.post("/v1/tenants", json={"name": "acme"}).status_code == 409
    assert api.post("/v1/tenants", json={"name": "Not A Name"}).status_code == 422
    a = {"Authorization": f"Bearer {key}"}
    assert api.get("/v1/jobs", headers=a).status_code == 200
    assert api.get("/v1/tenants", headers=a).status_code == 404  # the operator's routes do not exist for a tenant
    new = api.post("/v1/tenants/acme/rotate", json={}).json()["key"]
    assert api.get("/v1/jobs", headers=a).status_code == 401  # the old key fails at once
    a = {"Authorization": f"Bearer {new}"}
    assert api.get("/v1/jobs", headers=a).status_code == 200
    assert api.post("/v1/tenants/acme/revoke", json={}).json()["revoked"] is True
    refused = api.get("/v1/jobs", headers=a)
    assert refused.status_code == 401 and "revoked" in refused.json()["message"]
    forged = {"Authorization": f"Bearer bdk_{made['key_id']}_guess"}
    assert api.get("/v1/jobs", headers=forged).status_code == 401
    assert api.post("/v1/tenants/nobody/revoke", json={}).status_code == 404


def test_without_an_admin_token_no_tenant_can_be_made(redis_url: str) -> None:
    with api_client(redis_url, api_token=None) as c:
        refused = c.post("/v1/tenants", json={"name": "acme"})
        assert refused.status_code == 409 and "BROWSERD_API_TOKEN" in refused.json()["message"]
        assert c.post("/v1/jobs", json={"task": "x"}).status_code == 201  # single-tenant, as before


def test_lists_show_only_ones_own_and_the_admin_filters(api: TestClient) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta")
    mine = api.post("/v1/jobs", json={"task": "A", "idempotency_key": "k"}, headers=a).json()
    theirs = api.post("/v1/jobs", json={"task": "B", "idempotency_key": "k"}, headers=b).json()
    operator = api.post("/v1/jobs", json={"task": "op", "idempotency_key": "k"}).json()
    assert len({mine["id"], theirs["id"], operator["id"]}) == 3  # one idempotency key, three owners, three jobs
    assert mine["tenant"] == "acme" and operator["tenant"] is None
    assert [j["id"] for j in api.get("/v1/jobs", headers=a).json()["jobs"]] == [mine["id"]]
    assert [j["id"] for j in api.get("/v1/jobs?tenant=beta", headers=a).json()["jobs"]] == [mine["id"]]
    assert {j["id"] for j in api.get("/v1/jobs").json()["jobs"]} == {mine["id"], theirs["id"], operator["id"]}
    assert [j["id"] for j in api.get("/v1/jobs?tenant=beta").json()["jobs"]] == [theirs["id"]]
    for path in (f"/v1/jobs/{theirs['id']}", f"/v1/jobs/{operator['id']}"):
        gone = api.get(path, headers=a)
        assert gone.status_code == 404 and gone.json()["message"] == api.get("/v1/jobs/" + "0" * 32).json()["message"].replace("0" * 32, path.rsplit("/", 1)[1])
    assert api.post(f"/v1/jobs/{theirs['id']}/cancel", json={}, headers=a).status_code == 404
    assert api.get(f"/v1/jobs/{theirs['id']}", headers=b).json()["state"] == "queued"  # not cancelled


def test_no_route_tool_or_page_shows_another_tenants_objects() -> None:
    with deployed() as (c, redis_url):
        key_b, victims = seed(c, redis_url)
        report = walk(c, key_b, victims)
        control = Report()  # the same walk with the admin's token does see them: the walk can find a leak
        walk_routes(c, ADMIN, victims, control, under="/v1/jobs")  # (not /v1/sessions: it would wait for a worker)
    operations = sum(len(methods) for path, methods in c.app.openapi()["paths"].items() if path.startswith("/v1/"))
    assert report.cross_tenant_leaks == []
    assert report.routes_checked > operations and report.mcp_tools_checked >= 15 and report.console_pages_checked >= 15
    assert report.console_actions_checked >= 8  # cancel (job, batch, crawl), pause, resume, hand-back, ...
    assert len(control.cross_tenant_leaks) >= 10


def test_a_revoked_key_ends_its_open_event_stream(api: TestClient) -> None:
    a = tenant(api, "acme")
    job = api.post("/v1/jobs", json={"task": "A"}, headers=a).json()
    with api.stream("GET", f"/v1/jobs/{job['id']}/events", headers=a) as stream:
        chunks = stream.iter_text()
        assert "event: state" in next(chunks)
        api.post("/v1/tenants/acme/revoke", json={})
        rest = "".join(chunks)  # ends at the next event or keep-alive, not at the job's end
    assert "event: end" not in rest
    assert api.get(f"/v1/jobs/{job['id']}/events?follow=false", headers=a).status_code == 401


def test_each_tenant_within_its_ceilings(api: TestClient) -> None:
    a = tenant(api, "acme", allowed_networks=["127.0.0.1/32"], allowed_domains=["example.com"], max_steps=5,
               timeout=60)
    b = tenant(api, "beta")

    def refused(body: dict[str, Any], headers: dict[str, str], field: str, needle: str) -> None:
        answer = api.post("/v1/jobs", json=body, headers=headers)
        assert answer.status_code == 422, answer.text
        assert answer.json()["fields"][0]["field"] == field and needle in answer.json()["message"], answer.text

    refused({"task": "x", "allowed_networks": ["0.0.0.0/0"]}, a, "allowed_networks", "BROWSERD_ALLOWED_NETWORKS")
    refused({"task": "x", "allowed_networks": ["127.0.0.1/32"]}, b, "allowed_networks", "tenant 'beta'")
    refused({"task": "x", "allowed_networks": ["169.254.169.254/32"]}, b, "allowed_networks", "BROWSERD_ALLOWED")
    refused({"task": "x", "allowed_domains": ["example.com"], "options": {"max_steps": 50}}, a,
            "options.max_steps", "tenant 'acme'")
    refused({"task": "x", "allowed_domains": ["example.com"], "timeout": 600}, a, "timeout", "tenant 'acme'")
    refused({"task": "x", "allowed_domains": ["evil.test"]}, a, "allowed_domains", "example.com")
    refused({"task": "x", "allowed_domains": ["example.com"], "start_url": "https://evil.test/"}, a,
            "allowed_domains", "evil.test")
    refused({"task": "x", "credentials": "victim_shop"}, b, "credentials", "BROWSERD_SECRETS_KEY")  # keyed: test_tenancy_named
    ok = api.post("/v1/jobs", json={"task": "x", "allowed_domains": ["shop.example.com"],
                                    "allowed_networks": ["127.0.0.1/32"]}, headers=a)
    assert ok.status_code == 201, ok.text
    spec = ok.json()["spec"]
    assert spec["timeout"] == 60 and spec["options"]["max_steps"] == 5  # left open: the ceiling's
    wide = api.post("/v1/tenants", json={"name": "wide", "limits": {"allowed_networks": ["10.0.0.0/8"]}})
    assert wide.status_code == 422 and "BROWSERD_ALLOWED_NETWORKS" in wide.json()["message"]


def open_over_mcp(api: TestClient, key: str, networks: list[str]) -> str:
    """MCP's open_session as ``key`` (the tool calls the API with it): its refusal, or "opened"."""
    server = api.app.state.mcp.server  # type: ignore[attr-defined]

    async def call() -> str:
        token = CALLER.set(key)
        try:
            await server.call_tool("open_session", {"allowed_networks": networks})
        except Exception as exc:
            return str(exc)
        finally:
            CALLER.reset(token)
        return "opened"

    return api.portal.call(call)  # type: ignore[union-attr]


def test_mcp_open_session_is_refused_past_the_ceiling(api: TestClient) -> None:
    message = open_over_mcp(api, ADMIN, ["169.254.169.254/32"])
    assert "169.254.169.254/32 is outside" in message and "BROWSERD_ALLOWED_NETWORKS" in message


def test_metrics_count_each_tenants_jobs_and_never_show_a_key(api: TestClient) -> None:
    a = tenant(api, "acme")
    counted = metrics.TENANT_JOBS.labels("acme", "cancelled")
    before = counted._value.get()
    job = api.post("/v1/jobs", json={"task": "A"}, headers=a).json()
    assert api.post(f"/v1/jobs/{job['id']}/cancel", json={}, headers=a).json()["state"] == "cancelled"
    assert counted._value.get() == before + 1
    exposed = api.get("/metrics").text
    assert 'browserd_tenant_jobs_total{state="cancelled",tenant="acme"}' in exposed or \
        'browserd_tenant_jobs_total{tenant="acme",state="cancelled"}' in exposed
    assert a["Authorization"].split()[1] not in exposed


def test_batches_are_owned_too(api: TestClient) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta", allowed_networks=[])
    mine = api.post("/v1/batches", json={"jobs": [{"task": "1"}, {"task": "2", "idempotency_key": "k"}]}, headers=a)
    assert mine.status_code == 201 and mine.json()["tenant"] == "acme", mine.text
    batch = mine.json()["id"]
    theirs = api.post("/v1/batches", json={"jobs": [{"task": "3", "idempotency_key": "k"}]}, headers=b).json()
    assert theirs["duplicates"] == 0  # acme's idempotency key is not beta's
    assert [x["id"] for x in api.get("/v1/batches", headers=b).json()] == [theirs["id"]]
    assert [x["id"] for x in api.get("/v1/batches?tenant=acme", headers=b).json()] == [theirs["id"]]
    assert {x["id"] for x in api.get("/v1/batches").json()} == {batch, theirs["id"]}
    assert [x["id"] for x in api.get("/v1/batches?tenant=acme").json()] == [batch]
    for method, path in (("GET", ""), ("POST", "/cancel"), ("GET", "/results")):
        kwargs = {"json": {}} if method == "POST" else {}
        assert api.request(method, f"/v1/batches/{batch}{path}", headers=b, **kwargs).status_code == 404
    assert api.get(f"/v1/batches/{batch}", headers=a).json()["counts"]["queued"] == 2  # not cancelled by beta
    jobs = api.get("/v1/jobs", headers=a).json()["jobs"]
    assert len(jobs) == 2 and {j["tenant"] for j in jobs} == {"acme"}
    wide = api.post("/v1/batches", json={"jobs": [{"task": "x", "allowed_networks": ["127.0.0.1/32"]}]}, headers=b)
    assert wide.status_code == 422 and wide.json()["fields"][0]["field"] == "jobs[0].allowed_networks"
    assert "tenant 'beta'" in wide.json()["message"]
    assert api.post(f"/v1/batches/{batch}/cancel", json={}, headers=a).json()["counts"]["cancelled"] == 2


def test_a_tenants_session_within_its_ceiling_over_the_api_and_mcp(api: TestClient) -> None:
    b = tenant(api, "beta")
    wide = api.post("/v1/sessions", json={"allowed_networks": ["127.0.0.1/32"]}, headers=b)
    assert wide.status_code == 422 and "tenant 'beta'" in wide.json()["message"]
    assert api.get("/v1/sessions", headers=b).json() == {"sessions": []}
    assert "169.254.169.254/32 is outside" in open_over_mcp(api, b["Authorization"].split()[1], ["169.254.169.254/32"])
    assert "tenant 'beta'" in open_over_mcp(api, b["Authorization"].split()[1], ["127.0.0.1/32"])


def test_schedules_and_the_jobs_they_make_are_owned() -> None:
    with deployed() as (c, _):
        a = tenant(c, "acme", max_steps=5)
        b = tenant(c, "beta")
        made = c.post("/v1/schedules", json={"every": 3600, "job": {"task": "A's"}}, headers=a)
        assert made.status_code == 201 and made.json()["tenant"] == "acme", made.text
        schedule = made.json()["id"]
        too_many = c.post("/v1/schedules", json={"every": 3600, "job": {"task": "x", "options": {"max_steps": 9}}},
                          headers=a)
        assert too_many.status_code == 422 and "tenant 'acme'" in too_many.json()["message"]
        assert c.get("/v1/schedules", headers=b).json() == []
        assert [x["id"] for x in c.get("/v1/schedules?tenant=acme").json()] == [schedule]
        for method, path in (("GET", ""), ("POST", "/pause"), ("POST", "/resume"), ("POST", "/run"), ("GET", "/runs"),
                             ("DELETE", "")):
            kwargs = {"json": {}} if method == "POST" else {}
            assert c.request(method, f"/v1/schedules/{schedule}{path}", headers=b, **kwargs).status_code == 404
        run = c.post(f"/v1/schedules/{schedule}/run", json={}, headers=a).json()
        assert run["tenant"] == "acme"
        jobs = c.get(f"/v1/jobs?schedule={schedule}", headers=a).json()["jobs"]
        assert len(jobs) == 1 and jobs[0]["tenant"] == "acme"
        assert c.get(f"/v1/jobs?schedule={schedule}", headers=b).json()["jobs"] == []
        c.post("/v1/tenants/acme/revoke", json={})
        assert c.post(f"/v1/schedules/{schedule}/run", json={}).status_code == 404  # a revoked tenant's runs stop
        assert c.get(f"/v1/schedules/{schedule}").json()["runs"] == 1
