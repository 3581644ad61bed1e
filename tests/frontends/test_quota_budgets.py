"""The quotas added beside the first ones (the API in process, a real redis-server, no worker): the
queued quota holds under concurrent submissions (its check and count are one atomic reservation),
a monthly budget in dollars beside the daily one, and artifact bytes per tenant."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from redis.asyncio import Redis

from tests.frontends.tenancy import api_client, tenant
from tests.frontends.test_quotas import over, script
from workers.jobs.batches.store import BatchStore
from workers.jobs.model.spec import JobSpec
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys
from workers.jobs.tenants.models import QuotaExceeded, TenantLimits
from workers.jobs.tenants.quotas import RESERVATION_SECONDS, Quotas, admitted, until_next_month


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url) as c:
        yield c


def concurrently(api: TestClient, calls: list[tuple[str, str, dict[str, Any]]]) -> list[int]:
    """Every call at once (threads released together), their statuses in order."""
    statuses: list[int] = [0] * len(calls)
    gate = threading.Barrier(len(calls))

    def one(i: int) -> None:
        method, path, kwargs = calls[i]
        gate.wait()
        statuses[i] = api.request(method, path, **kwargs).status_code

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return statuses


def test_concurrent_submissions_never_pass_the_queued_quota_together(api: TestClient) -> None:
    a = tenant(api, "acme", max_queued=5)
    jobs = [("POST", "/v1/jobs", {"json": {"task": f"job {i}"}, "headers": a}) for i in range(12)]
    batches = [("POST", "/v1/batches", {"json": script(2), "headers": a}) for _ in range(6)]
    statuses = concurrently(api, jobs + batches)
    assert set(statuses) <= {201, 429}, statuses
    used = api.get("/v1/tenants/acme/usage").json()
    assert used["queued"] <= 5, (used, statuses)  # before: each request read 0 queued, and most passed
    made = sum(1 for s in statuses[:12] if s == 201) + 2 * sum(1 for s in statuses[12:] if s == 201)
    assert made == used["queued"] == used["jobs_today"]  # refused ones are not counted for the day either
    assert used["queued"] >= 4  # the quota is used, not refused wholesale (at most one batch of 2 misses)
    assert redis.Redis.from_url(api.app.state.settings.redis_url).zcard(Keys().tenant_reserved("acme")) == 0


def test_an_idempotent_repeat_gives_its_reservation_and_its_day_back(api: TestClient) -> None:
    a = tenant(api, "acme", max_queued=2, max_jobs_per_day=5)
    first = api.post("/v1/jobs", json={"task": "x", "idempotency_key": "k"}, headers=a)
    again = api.post("/v1/jobs", json={"task": "x", "idempotency_key": "k"}, headers=a)
    assert first.status_code == 201 and again.json()["id"] == first.json()["id"]
    assert api.get("/v1/tenants/acme/usage").json()["jobs_today"] == 1


def test_a_reservation_whose_submitter_died_lapses(redis_url: str) -> None:
    async def go() -> None:
        client = connect(redis_url)
        try:
            await client.flushall()
            quotas = Quotas(client, Keys())
            limits = TenantLimits(max_queued=3)
            await quotas.admit_jobs("acme", limits, 3)  # never settled: its submitter died
            with pytest.raises(Exception, match="queued"):
                await quotas.admit_jobs("acme", limits, 1)
            member = (await client.zrange(Keys().tenant_reserved("acme"), 0, -1))[0]
            await client.zadd(Keys().tenant_reserved("acme"), {member: 1.0})  # as if RESERVATION_SECONDS had passed
            reservation = await quotas.admit_jobs("acme", limits, 1)
            await reservation.settle(1)
            assert RESERVATION_SECONDS >= 60
        finally:
            await client.aclose()

    asyncio.run(go())


def on_fresh_redis(redis_url: str, body: Callable[[Redis, JobStore, Quotas], Awaitable[None]]) -> None:
    """Run ``body`` on an emptied Redis with a job store and the quotas over it."""
    async def go() -> None:
        client = connect(redis_url)
        try:
            await client.flushall()
            await body(client, JobStore(client, result_ttl=60, keys=Keys()), Quotas(client, Keys()))
        finally:
            await client.aclose()

    asyncio.run(go())


def test_a_job_recorded_under_its_reservation_is_counted_once_before_the_settle(redis_url: str) -> None:
    """Between recording its jobs and settling, a submission's recorded jobs are queued and no
    longer reserved (their creation counted them off in the same call): before, they were counted
    twice, and a concurrent submission got a spurious 429."""
    async def body(client: Redis, store: JobStore, quotas: Quotas) -> None:
        keys, limits = Keys(), TenantLimits(max_queued=6)
        async with admitted(quotas, "acme", limits, 3) as admission:
            assert admission.token
            for i in range(2):  # two of its three recorded, the third not yet
                made = await store.create(JobSpec(task=f"j{i}"), max_steps=3, tenant="acme",
                                          admission=admission.token)
                admission.created += int(made.created)
            assert int((await client.hget(keys.tenant_usage("acme"), "queued")) or 0) == 2
            assert await client.hget(keys.tenant_admitted("acme"), admission.token) == "2"
            other = await quotas.admit_jobs("acme", limits, 3)  # 2 queued + 1 reserved + 3 = 6: fits
            with pytest.raises(QuotaExceeded, match="6 queued now"):  # 2 queued + 1 + 3 reserved
                await quotas.admit_jobs("acme", limits, 1)
            batch = await BatchStore(store).create([JobSpec(task="b0"), JobSpec(task="b1")], [3, 3],
                                                   tenant="acme", admission=other.token)
            assert all(batch.created)
            with pytest.raises(QuotaExceeded, match="6 queued now"):  # 4 queued + 1 + 1 reserved
                await quotas.admit_jobs("acme", limits, 1)
            await other.settle(2)
        assert await client.hgetall(keys.tenant_admitted("acme")) == {}  # settled: both forgotten
        assert await client.zcard(keys.tenant_reserved("acme")) == 0
        late = await quotas.admit_jobs("acme", limits, 2)  # 4 queued + 2 = 6
        await late.settle(0)

    on_fresh_redis(redis_url, body)


def test_a_lapsed_reservation_forgets_its_recorded_jobs_and_a_late_record_is_queued_only(redis_url: str) -> None:
    async def body(client: Redis, store: JobStore, quotas: Quotas) -> None:
        keys, limits = Keys(), TenantLimits(max_queued=4)
        dead = await quotas.admit_jobs("acme", limits, 3)  # its submitter records one job, then dies
        await store.create(JobSpec(task="j0"), max_steps=3, tenant="acme", admission=dead.token)
        with pytest.raises(QuotaExceeded, match="3 queued now"):  # 1 queued + 2 still reserved
            await quotas.admit_jobs("acme", limits, 2)
        await client.zadd(keys.tenant_reserved("acme"), {f"{dead.token}|3": 1.0})  # RESERVATION_SECONDS passed
        fresh = await quotas.admit_jobs("acme", limits, 2)  # 1 queued + 2: the lapsed one counts nothing
        assert await client.hget(keys.tenant_admitted("acme"), dead.token) is None  # dropped with its member
        await store.create(JobSpec(task="j1"), max_steps=3, tenant="acme", admission=dead.token)  # too late
        assert await client.hget(keys.tenant_admitted("acme"), dead.token) is None  # not brought back
        with pytest.raises(QuotaExceeded, match="4 queued now"):  # 2 queued + 2 reserved
            await quotas.admit_jobs("acme", limits, 1)
        await fresh.settle(0)

    on_fresh_redis(redis_url, body)


def test_a_tenants_monthly_budget_in_dollars(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme", max_cost_usd_per_month=0.10)
    b = tenant(api, "beta", max_cost_usd_per_month=0.10)

    async def spend(name: str, usd: float) -> None:
        client = connect(redis_url)
        try:
            await Quotas(client, Keys()).add_cost(name, usd)  # what its workers' cost feature adds per run
        finally:
            await client.aclose()

    asyncio.run(spend("acme", 0.06))
    assert api.post("/v1/jobs", json={"task": "x"}, headers=a).status_code == 201
    asyncio.run(spend("acme", 0.04))
    body = over(api.post("/v1/jobs", json={"task": "y"}, headers=a), "cost_per_month")
    assert 0 < body["retry_after"] <= until_next_month(datetime.now(UTC)) + 1 and "$0.1" in body["message"]
    over(api.post("/v1/batches", json=script(1), headers=a), "cost_per_month")
    assert api.post("/v1/jobs", json={"task": "y"}, headers=b).status_code == 201  # beta's budget is its own
    assert api.post("/v1/jobs", json={"task": "y"}).status_code == 201  # the operator has none
    used = api.get("/v1/tenants/acme/usage").json()
    assert used["cost_month_usd"] == pytest.approx(0.10) and used["cost_today_usd"] == pytest.approx(0.10)
    for bad in (-1, "much", [1]):
        assert api.put("/v1/tenants/acme/limits", json={"max_cost_usd_per_month": bad}).status_code == 422


def test_artifact_bytes_per_tenant(api: TestClient, redis_url: str) -> None:
    a = tenant(api, "acme", max_artifact_bytes=1000)
    b = tenant(api, "beta", max_artifact_bytes=1000)
    job = api.post("/v1/jobs", json={"task": "x"}, headers=a).json()["id"]

    async def written(size: int) -> None:
        client = connect(redis_url)
        try:
            await Quotas(client, Keys()).set_artifact_bytes("acme", job, size)
        finally:
            await client.aclose()

    asyncio.run(written(600))
    assert api.post("/v1/jobs", json={"task": "y"}, headers=a).status_code == 201
    asyncio.run(written(1200))  # a follow-up wrote more: the job holds 1200 now, not 1800
    assert api.get("/v1/tenants/acme/usage").json()["artifact_bytes"] == 1200
    body = over(api.post("/v1/jobs", json={"task": "z"}, headers=a), "artifact_bytes")
    assert body["retry_after"] > 0 and "1200 bytes" in body["message"]
    assert api.post("/v1/jobs", json={"task": "z"}, headers=b).status_code == 201  # beta's quota is its own

    async def expired() -> None:
        client = connect(redis_url)
        try:
            await Quotas(client, Keys()).forget_artifacts([job, "0" * 32])  # the reconciler deleted its folder
        finally:
            await client.aclose()

    asyncio.run(expired())
    assert api.get("/v1/tenants/acme/usage").json()["artifact_bytes"] == 0
    assert api.post("/v1/jobs", json={"task": "z"}, headers=a).status_code == 201
    for bad in (-1, 1.5, "big"):
        assert api.put("/v1/tenants/acme/limits", json={"max_artifact_bytes": bad}).status_code == 422
