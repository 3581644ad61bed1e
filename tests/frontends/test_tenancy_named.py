"""Credential sets, auth profiles and recipes are owned (the API in process, a real redis-server):
a tenant reaches only its own, by name; another tenant's name answers 404 on every route and is
refused at submission as if it did not exist; two tenants may use one name; the admin sees all
(``?tenant=`` filters, ``operator`` its own); what single-tenant browserd stored stays the operator's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from tests.frontends.tenancy import api_client, tenant

KEY = Fernet.generate_key().decode()
STATE = {"cookies": [{"name": "sid", "value": "v", "domain": "shop.example", "path": "/"}], "origins": []}


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url, secrets_key=KEY) as c:
        yield c


def _names(answer: Any) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [item["name"] if "name" in item else item["recipe"]["name"] for item in answer.json()]


def test_credential_sets_are_their_tenants(api: TestClient, redis_url: str) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta")
    made = api.post("/v1/credentials", json={"name": "shop", "secrets": {"password": "acme-secret-1"},
                                             "domains": ["Shop.Example."]}, headers=a)
    assert made.status_code == 201, made.text
    assert made.json()["tenant"] == "acme" and made.json()["domains"] == ["shop.example"]
    assert api.post("/v1/credentials", json={"name": "shop", "secrets": {"password": "beta-secret-2"}},
                    headers=b).status_code == 201  # one name, two owners
    assert api.post("/v1/credentials", json={"name": "legacy", "secrets": {"password": "operator-pw"}}
                    ).status_code == 201  # the admin's own: the operator's, as single-tenant browserd kept it
    assert redis.Redis.from_url(redis_url).hexists("browserd:credentials", "legacy")  # where it always was
    assert _names(api.get("/v1/credentials", headers=a)) == ["shop"]
    assert api.get("/v1/credentials/legacy", headers=a).status_code == 404
    assert api.get("/v1/credentials?tenant=beta", headers=a).json()[0]["tenant"] == "acme"  # ?tenant= is the admin's
    assert api.get("/v1/credentials/shop", headers=b).json()["domains"] == []  # beta's own, not acme's
    everyone = api.get("/v1/credentials").json()
    assert sorted((c["tenant"], c["name"]) for c in everyone if c["tenant"]) == [("acme", "shop"), ("beta", "shop")]
    assert [c["name"] for c in api.get("/v1/credentials?tenant=operator").json()] == ["legacy"]
    assert api.get("/v1/credentials/shop?tenant=acme").json()["domains"] == ["shop.example"]
    # another tenant's set is as absent as none: delete, and naming it in a job, batch and schedule
    assert api.delete("/v1/credentials/legacy", headers=a).status_code == 404
    assert api.get("/v1/credentials/legacy").status_code == 200
    for path, body in (("/v1/jobs", {"task": "x", "credentials": "legacy"}),
                       ("/v1/batches", {"jobs": [{"task": "x", "credentials": "legacy"}]}),
                       ("/v1/schedules", {"every": 3600, "job": {"task": "x", "credentials": "legacy"}})):
        refused = api.post(path, json=body, headers=a)
        assert refused.status_code == 422 and "no credential set named 'legacy'" in refused.json()["message"], refused.text
    assert api.post("/v1/jobs", json={"task": "x", "credentials": "shop"}, headers=a).status_code == 201
    assert api.delete("/v1/credentials/shop", headers=b).status_code == 204
    assert api.get("/v1/credentials/shop", headers=a).status_code == 200  # beta deleted its own only


def test_credential_set_bad_input(api: TestClient) -> None:
    a = tenant(api, "acme")
    for body in ({"name": "s", "secrets": {"pw": "long-enough-1"}, "domains": ["https://shop.example/login"]},
                 {"name": "s", "secrets": {"pw": "long-enough-1"}, "domains": "shop.example"},
                 {"name": "s", "secrets": {"pw": "long-enough-1"}, "domains": ["x.example"] * 65},
                 {"name": "bad name", "secrets": {"pw": "long-enough-1"}}):
        assert api.post("/v1/credentials", json=body, headers=a).status_code == 422, body
    assert api.get("/v1/credentials?tenant=NOT%20A%20NAME").status_code == 422
    refused = api.post("/v1/jobs", json={"task": "x", "secret_domains": ["shop.example"]}, headers=a)
    assert refused.status_code == 422 and "secret_domains" in refused.text  # binds nothing: refused, not ignored


def test_profiles_are_their_tenants(api: TestClient) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta")
    assert api.put("/v1/profiles/login", json=STATE, headers=a).json()["tenant"] == "acme"
    assert api.put("/v1/profiles/op-login", json=STATE).status_code == 200
    assert _names(api.get("/v1/profiles", headers=a)) == ["login"]
    assert _names(api.get("/v1/profiles", headers=b)) == []
    for method, path in (("GET", "/v1/profiles/login"), ("DELETE", "/v1/profiles/login"),
                         ("GET", "/v1/profiles/op-login"), ("DELETE", "/v1/profiles/op-login")):
        assert api.request(method, path, headers=b).status_code == 404, (method, path)
    assert api.put("/v1/profiles/login?if_version=0", json=STATE, headers=b).json()["version"] == 1  # its own
    assert api.get("/v1/profiles/login?tenant=acme").status_code == 200
    assert sorted((p["tenant"] or "", p["name"]) for p in api.get("/v1/profiles").json()) == [
        ("", "op-login"), ("acme", "login"), ("beta", "login")]
    refused = api.post("/v1/jobs", json={"task": "x", "profile": "op-login"}, headers=a)
    assert refused.status_code == 422 and "no auth profile named 'op-login'" in refused.json()["message"]
    assert api.post("/v1/jobs", json={"task": "x", "profile": "login"}, headers=a).status_code == 201


def test_recipes_are_their_tenants(api: TestClient, redis_url: str) -> None:
    import asyncio

    from redis.asyncio import Redis

    from workers.jobs.recipes.models import Recipe, RecipeStep
    from workers.jobs.recipes.store import RecipeStore

    a, b = tenant(api, "acme"), tenant(api, "beta")

    async def make(owner: str | None, name: str) -> None:
        client = Redis.from_url(redis_url, decode_responses=True)
        try:
            await RecipeStore(client, tenant=owner).save(Recipe(
                name=name, version=1, task="open {{x}}", params={"x": "https://shop.example/"},
                steps=[RecipeStep(action="go_to_url", params={"url": "{{x}}"})]))
        finally:
            await client.aclose()

    asyncio.run(make("acme", "prices"))
    asyncio.run(make(None, "op-prices"))
    assert _names(api.get("/v1/recipes", headers=a)) == ["prices"]
    assert _names(api.get("/v1/recipes", headers=b)) == []
    assert api.get("/v1/recipes/prices", headers=b).status_code == 404
    assert api.get("/v1/recipes/op-prices", headers=a).status_code == 404
    assert api.delete("/v1/recipes/prices", headers=b).status_code == 404
    assert api.get("/v1/recipes/prices", headers=a).json()["tenant"] == "acme"
    assert sorted(r["recipe"]["name"] for r in api.get("/v1/recipes").json()) == ["op-prices", "prices"]
    assert [r["recipe"]["name"] for r in api.get("/v1/recipes?tenant=acme").json()] == ["prices"]
    refused = api.post("/v1/jobs", json={"recipe": "prices", "params": {"x": "https://shop.example/"}}, headers=b)
    assert refused.status_code == 422 and "prices" in refused.json()["message"]
    assert api.post("/v1/jobs", json={"recipe": "prices", "params": {"x": "https://shop.example/"}}, headers=a).status_code == 201
    job = api.post("/v1/jobs", json={"task": "x"}, headers=a).json()
    assert api.post(f"/v1/jobs/{job['id']}/recipe", json={"name": "mine"}, headers=b).status_code == 404
