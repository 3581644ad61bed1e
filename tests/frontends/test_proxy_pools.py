"""Proxy pools at the API: an unknown pool is 422 naming the field (a job, a batch's job), a tenant
may name only the pools the operator granted it (and is not told the others), and the record
keeps the pool's name only, never a proxy's address or credentials."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.frontends.tenancy import api_client, tenant
from tests.jobs.test_proxy_pools import PASSWORD, POOLS


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url, proxy_pools=POOLS) as c:
        yield c


def test_the_api_answers_422_for_an_unknown_pool_and_keeps_only_the_name(api: TestClient):
    refused = api.post("/v1/jobs", json={"task": "x", "proxy_pool": "nope"})
    assert refused.status_code == 422 and refused.json()["fields"][0]["field"] == "proxy_pool", refused.text
    batch = api.post("/v1/batches", json={"jobs": [{"task": "a"}, {"task": "b", "proxy_pool": "nope"}]})
    assert batch.status_code == 422 and batch.json()["fields"][0]["field"] == "jobs[1].proxy_pool", batch.text
    made = api.post("/v1/jobs", json={"task": "x", "proxy_pool": "res"})
    assert made.status_code == 201, made.text
    record = api.get(f"/v1/jobs/{made.json()['id']}").text
    assert '"proxy_pool":"res"' in record.replace(" ", "")
    # the proxies' addresses, not a bare port: "3128" alone turned up once in a random id or timestamp
    addresses = [proxy["server"].split("://")[1] for proxy in POOLS["res"]["proxies"]]
    assert PASSWORD not in record and not [a for a in addresses if a in record], record


def test_a_tenant_may_name_only_the_pools_granted_to_it(api: TestClient):
    granted = tenant(api, "acme", proxy_pools=["res"])
    other = tenant(api, "globex")
    assert api.post("/v1/jobs", json={"task": "x", "proxy_pool": "res"}, headers=granted).status_code == 201
    refused = api.post("/v1/jobs", json={"task": "x", "proxy_pool": "dc"}, headers=granted)
    assert refused.status_code == 422 and "its pools: res" in refused.json()["message"], refused.text
    refused = api.post("/v1/jobs", json={"task": "x", "proxy_pool": "res"}, headers=other)
    assert refused.status_code == 422 and "its pools: none" in refused.json()["message"], refused.text
    assert "dc" not in refused.json()["message"]  # a tenant is not told the operator's other pools
    # the operator's own jobs may name any pool
    assert api.post("/v1/jobs", json={"task": "x", "proxy_pool": "dc"}).status_code == 201


def test_the_consoles_submit_form_offers_the_pools_and_never_echoes_a_secret(redis_url: str) -> None:
    from tests.frontends.console import console_client, login

    key = "Xa0aRsZ8Ed4vAwmE-ZQ9bMs4cP7bc-cUxsaOiLuhJvU="
    with console_client(redis_url, proxy_pools=POOLS, secrets_key=key) as c:
        csrf = login(c)
        page = c.get("/ui/submit").text
        assert '<select id="proxy_pool"' in page and "<option>res</option>" in page and PASSWORD not in page
        refused = c.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "sign in", "proxy_pool": "nope",
                                             "secrets": "password=hunter2-typed\notp=totp:JBSWY3DPEHPK3PXP"})
        assert refused.status_code == 422 and 'data-field="proxy_pool"' in refused.text
        assert "hunter2-typed" not in refused.text and "JBSWY3DPEHPK3PXP" not in refused.text  # enter them again
        made = c.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "sign in", "proxy_pool": "res",
                                          "secrets": "password=hunter2-typed\notp=totp:JBSWY3DPEHPK3PXP"})
        assert made.status_code == 303, made.text
        job = c.get("/v1/jobs/" + made.headers["location"].rsplit("/", 1)[1],
                    headers={"Authorization": "Bearer console-test-token"}).json()
        assert job["spec"]["proxy_pool"] == "res" and job["spec"]["secrets"] == {"password": "**********"}
        assert "JBSWY3DPEHPK3PXP" not in str(job) and job["spec"]["totp"] == {"otp": "**********"}
