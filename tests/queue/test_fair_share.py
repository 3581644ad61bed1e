"""Fair share across tenants end to end (real redis-server, ``browserd serve``, one worker with one
slot, Chromium): while tenant A has a queue of jobs, tenant B's first job takes the next slot that
frees, and every job of both runs exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.queue.stack import Stack, script, stack, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=60, visibility_timeout=120) as s:
        s.start_worker(1)
        yield s


def ok(s: Stack, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    status, answer = s.call(method, path, body, **({"token": token} if token else {}))
    assert 200 <= status < 300, (method, path, status, answer)
    return answer


def test_another_tenants_first_job_takes_the_next_free_slot(deploy: Stack, site: StaticServer) -> None:
    keys = {name: ok(deploy, "POST", "/v1/tenants", {"name": name, "limits": {"allowed_networks": ["127.0.0.1/32"]}})
            ["key"] for name in ("acme", "beta")}
    page = site.url("/cdp/basic.html")
    loopback = {"allowed_networks": ["127.0.0.1/32"]}  # a tenant's job opens only what it names, in its ceiling
    flood = ok(deploy, "POST", "/v1/batches", [{"script": script(page, waits=1, text=f"A{n}"), **loopback}
                                               for n in range(6)], token=keys["acme"])
    wait_until(lambda: ok(deploy, "GET", f"/v1/batches/{flood['id']}")["counts"]["running"] == 1, 60,
               "acme's first job to run")
    first = ok(deploy, "POST", "/v1/jobs", {"script": script(page, waits=1, text="B"), **loopback}, token=keys["beta"])
    done = deploy.wait_state(first["id"], {"succeeded"}, timeout=120)
    wait_until(lambda: ok(deploy, "GET", f"/v1/batches/{flood['id']}")["state"] == "completed", 120,
               "acme's batch to complete")
    acme = ok(deploy, "GET", "/v1/jobs?tenant=acme&limit=50")["jobs"]
    started_before_b = [j for j in acme if j["started_at"] < done["started_at"]]
    assert len(started_before_b) == 1  # only the one running when B came: one slot, so one job in flight per tenant
    assert all(j["state"] == "succeeded" and j["attempts"] == 1 for j in [*acme, done])  # each ran once
    used = ok(deploy, "GET", "/v1/tenants/acme/usage")
    assert (used["queued"], used["running"], used["released"], used["waiting_dispatch"]) == (0, 0, 0, 0)
