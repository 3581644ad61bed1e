"""Fair dispatch across tenants (``tenants.dispatch``) against a real redis-server: a tenant's jobs
are parked and released round-robin within its cap, so another tenant's first job is not queued
behind a flood; cancelled parked jobs never reach the broker; the reconciler neither republishes
parked jobs nor loses a tenant's orphan."""

from __future__ import annotations

import asyncio
import base64
import json

from config import load_settings
from tests.support.redis_server import RedisServer
from workers.jobs.lifecycle.submission import submit_batch, submit_job
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.queue.names import QUEUES
from workers.jobs.reconcile import Reconciler
from workers.jobs.store.jobs import JobStore
from workers.jobs.tenants.dispatch import Dispatcher
from workers.jobs.tenants.models import TenantLimits
from workers.jobs.tenants.store import TenantStore


def job_of(message: str) -> str:
    return json.loads(base64.b64decode(json.loads(message)["body"]))[0][0]


async def broker(store: JobStore) -> list[str]:
    """Job ids on the broker's normal queue, in the order workers take them (oldest first)."""
    return [job_of(m) for m in reversed(await store.redis.lrange("normal", 0, -1))]


async def take_and_finish(store: JobStore, dispatcher: Dispatcher) -> str:
    """What a worker does with one slot: take the next message, run the job to its end, release."""
    message = await store.redis.rpop("normal")
    job_id = job_of(message)
    claim = await store.start(job_id, worker="w", max_attempts=3, stale_after=30)
    if claim.attempt:
        await store.finish(job_id, claim.attempt, JobResult(status=JobStatus.succeeded))
    await dispatcher.release()
    return job_id


def scripts(n: int) -> list[JobSpec]:
    return [JobSpec(script=[{"go_to_url": {"url": f"http://127.0.0.1:9/{i}"}}]) for i in range(n)]


async def clean(store: JobStore) -> None:
    await store.redis.delete(*QUEUES)


async def test_a_flood_does_not_hold_another_tenants_first_job(store: JobStore, redis: RedisServer) -> None:
    await clean(store)
    settings = load_settings(redis_url=redis.url, tenant_release=2)
    dispatcher = Dispatcher(store, settings)
    flood = await submit_batch(store, scripts(200), settings, tenant="acme")
    assert len(await broker(store)) == 2  # a fleet's worth of acme's jobs in the broker, the rest parked
    assert await dispatcher.parked("acme") == 198
    first = await submit_job(store, JobSpec(task="beta's first"), settings, tenant="beta")
    assert (await broker(store))[-1] == first.job_id  # released at once, behind at most the 2 of acme's
    taken = [await take_and_finish(store, dispatcher) for _ in range(3)]
    assert first.job_id in taken
    assert (await store.get(first.job_id)).state == "succeeded"  # type: ignore[union-attr]
    batch = await store.redis.hget(store.keys.batch(flood.id), "queued")
    assert int(batch) == 198  # acme's jobs still wait, none lost


async def test_max_running_caps_releases_and_turns_alternate(store: JobStore, redis: RedisServer) -> None:
    await clean(store)
    settings = load_settings(redis_url=redis.url, tenant_release=5)
    dispatcher = Dispatcher(store, settings)
    tenants = TenantStore(store.redis, store.keys)
    await tenants.create("acme", TenantLimits(max_running=1))
    await submit_batch(store, scripts(4), settings, tenant="acme")
    await submit_batch(store, scripts(4), settings, tenant="beta")
    owners = [(await store.get(j)).tenant for j in await broker(store)]  # type: ignore[union-attr]
    assert owners.count("acme") == 1 and owners.count("beta") == 4  # acme's quota of 1 running, beta the fleet's 5
    done = [await take_and_finish(store, dispatcher) for _ in range(5)]
    owners = [(await store.get(j)).tenant for j in await broker(store)]  # type: ignore[union-attr]
    assert owners == ["acme"] and len(done) == 5


async def test_a_job_cancelled_while_parked_never_reaches_the_broker(store: JobStore, redis: RedisServer) -> None:
    await clean(store)
    settings = load_settings(redis_url=redis.url, tenant_release=1)
    dispatcher = Dispatcher(store, settings)
    batch = await submit_batch(store, scripts(3), settings, tenant="acme")
    ids = await store.redis.lrange(store.keys.batch_jobs(batch.id), 0, -1)
    await store.cancel(ids[1])
    seen = [await take_and_finish(store, dispatcher) for _ in range(2)]
    assert seen == [ids[0], ids[2]] and await broker(store) == []
    assert await dispatcher.parked("acme") == 0
    assert await store.redis.zcard(store.keys.tenant_inflight("acme")) == 0


async def test_the_reconciler_leaves_parked_jobs_and_parks_a_tenants_orphan(store: JobStore, redis: RedisServer) -> None:
    await clean(store)
    settings = load_settings(redis_url=redis.url, tenant_release=1, orphan_job_seconds=0.01)
    await submit_batch(store, scripts(3), settings, tenant="acme")
    orphan = await store.create(JobSpec(task="its submitter died"), max_steps=3, tenant="beta")  # no message
    await asyncio.sleep(0.05)  # every job older than BROWSERD_ORPHAN_JOB_SECONDS (a clock threshold, not a sync)
    report = await Reconciler(store, settings).run_once()
    assert report is not None and report.published_queued == 1  # beta's orphan only, parked then released
    on_broker = await broker(store)
    assert orphan.job_id in on_broker
    assert len(on_broker) == 2 and await Dispatcher(store, settings).parked("acme") == 2
