"""The network ceiling end to end (real redis-server, ``browserd serve``, a Celery worker, Chromium,
the fixture site on 127.0.0.1): the operator's ``BROWSERD_ALLOWED_NETWORKS`` (the stack's
127.0.0.1/32) is the upper bound of what a tenant's job may open, never opened for it: a tenant's job
reaches the loopback site only when it names 127.0.0.1/32 itself, inside its tenant's ceiling; a
job asking 0.0.0.0/0, ::/0 or the metadata address is refused at submission. The operator's own
jobs (single-tenant browserd) keep what they always had. A tenant's job's artifacts count in its
artifact bytes."""

from __future__ import annotations

from collections.abc import Iterator
import pytest

from tests.queue.stack import Stack, script, stack, wait_until
from tests.queue.test_fair_share import ok
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=60, visibility_timeout=120) as s:
        s.start_worker(2)
        yield s


def test_a_tenants_job_opens_only_what_it_names_inside_its_ceiling(deploy: Stack, site: StaticServer) -> None:
    key = ok(deploy, "POST", "/v1/tenants", {"name": "egress-a", "limits": {"allowed_networks": ["127.0.0.1/32"]}})["key"]
    shut = ok(deploy, "POST", "/v1/tenants", {"name": "egress-b"})["key"]  # no network of its own
    page = site.url("/cdp/basic.html")
    for wide in (["0.0.0.0/0"], ["::/0"], ["169.254.169.254/32"], ["127.0.0.0/8"]):
        status, body = deploy.call("POST", "/v1/jobs", {"script": script(page), "allowed_networks": wide}, token=key)
        assert status == 422 and wide[0] in body["message"], (wide, status, body)
        assert "BROWSERD_ALLOWED_NETWORKS" in body["message"] or "tenant 'egress-a'" in body["message"], body
    status, body = deploy.call("POST", "/v1/jobs", {"script": script(page), "allowed_networks": ["127.0.0.1/32"]},
                               token=shut)
    assert status == 422 and "tenant 'egress-b'" in body["message"], body  # the operator's bound is not B's
    status, body = deploy.call("POST", "/v1/sessions", {"allowed_networks": ["169.254.169.254/32"]}, token=key)
    assert status == 422 and "169.254.169.254/32" in body["message"], body

    unnamed = ok(deploy, "POST", "/v1/jobs", {"script": script(page)}, token=key)
    named = ok(deploy, "POST", "/v1/jobs", {"script": script(page), "allowed_networks": ["127.0.0.1/32"],
                                            "artifacts": {"screenshots": "every_step", "page": "always"}}, token=key)
    operator = ok(deploy, "POST", "/v1/jobs", {"script": script(page)})
    refused = deploy.wait_state(unnamed["id"], {"succeeded", "failed"}, timeout=90)
    assert refused["state"] == "failed", refused  # the operator's 127.0.0.1/32 is not opened for a tenant's job
    assert "127.0.0.1" in (refused.get("error") or "") and "private network" in refused["error"], refused
    reached = deploy.wait_state(named["id"], {"succeeded", "failed"}, timeout=90)
    assert reached["state"] == "succeeded", reached
    mine = deploy.wait_state(operator["id"], {"succeeded", "failed"}, timeout=90)
    assert mine["state"] == "succeeded", mine  # single-tenant browserd: as before
    stored = ok(deploy, "GET", f"/v1/jobs/{named['id']}/artifacts", token=key)
    total = sum(a["size"] for a in stored)
    assert total > 0
    wait_until(lambda: ok(deploy, "GET", "/v1/tenants/egress-a/usage")["artifact_bytes"] >= total, 30,
               "the job's artifact bytes to be counted")
