"""Crash-safe finishing and index maintenance, on a real redis-server (no worker needed).

The Lua call that records a job's end also completes its batch and records the webhooks owed
(issue 12, fault 3: a worker dying right after the result leaves nothing half-done); expired
records leave no index entries behind once the reconciler ran (fault 7).
"""

from __future__ import annotations

import asyncio
import json
import pytest
import redis as redis_py

from config import load_settings
from tests.support.redis_server import RedisServer
from workers.jobs.batches.store import BatchStore
from workers.jobs.ids import new_id
from workers.jobs.metrics import RedisCollector
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs import reconcile
from workers.jobs.reconcile import Reconciler
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys


async def run_to_end(store: JobStore, job_id: str, status: JobStatus = JobStatus.succeeded) -> None:
    claim = await store.start(job_id, worker="w", max_attempts=2, stale_after=30)
    assert claim.outcome == "run"
    assert await store.finish(job_id, claim.attempt, JobResult(status=status, final_answer="ok"))


async def test_the_call_recording_the_last_result_completes_the_batch_and_owes_its_webhooks(store: JobStore) -> None:
    hook = "http://127.0.0.1:9/hook"
    specs = [JobSpec(script=[{"done": {"text": "a"}}], webhook_url=hook), JobSpec(script=[{"done": {"text": "b"}}])]
    batches = BatchStore(store)
    made = await batches.create(specs, [3, 3], webhook_url=hook)
    batch_id, job_ids = made.batch_id, made.job_ids
    await run_to_end(store, job_ids[0])
    assert not (await batches.get(batch_id)).finished  # type: ignore[union-attr]
    await run_to_end(store, job_ids[1], JobStatus.failed)

    # Nothing ran after the two FINISH calls (as if the worker died right after the second one):
    record = await batches.get(batch_id)
    assert record is not None and record.state == "completed" and record.done == record.total == 2
    owed = await store.redis.hgetall(store.keys.outbox)
    assert set(owed) == {f"job.finished:{job_ids[0]}", f"batch.finished:{batch_id}"}
    assert json.loads(owed[f"batch.finished:{batch_id}"])["url"] == hook
    assert await store.redis.zcard(store.keys.outbox_due) == 2


async def test_a_cancel_of_the_last_queued_job_completes_the_batch(store: JobStore) -> None:
    batches = BatchStore(store)
    made = await batches.create([JobSpec(task="a"), JobSpec(task="b")], [3, 3], webhook_url="http://127.0.0.1:9/h")
    batch_id, job_ids = made.batch_id, made.job_ids
    await run_to_end(store, job_ids[0])
    assert (await store.cancel(job_ids[1]))[0] == "cancelled"
    assert (await batches.get(batch_id)).state == "completed"  # type: ignore[union-attr]
    assert await store.redis.hexists(store.keys.outbox, f"batch.finished:{batch_id}")


async def test_expired_records_leave_no_index_entries_after_a_reconciler_pass(redis: RedisServer) -> None:
    keys = Keys(prefix=f"t{new_id()[:8]}:")
    client = connect(redis.url)
    store = JobStore(client, result_ttl=1, keys=keys)
    try:
        ids = []
        for n in range(5):
            job_id = (await store.create(JobSpec(task=f"t{n}", labels={"customer": "acme"}), max_steps=3)).job_id
            await run_to_end(store, job_id, JobStatus.succeeded if n % 2 else JobStatus.failed)
            ids.append(job_id)
        await BatchStore(store).create([JobSpec(task="x")], [3])
        assert await client.zcard(keys.all_jobs) == 6
        await asyncio.sleep(1.5)  # past BROWSERD_RESULT_TTL: the records are gone, the indexes not yet
        assert not await client.exists(keys.job(ids[0]))

        settings = load_settings(redis_url=redis.url, result_ttl=1)
        report = await Reconciler(store, settings).run_once()
        assert report is not None and report.index_entries_trimmed == 5
        assert await client.zcard(keys.all_jobs) == 1  # the queued batch job stays
        for state in ("succeeded", "failed"):
            assert await client.zcard(keys.state_index(state)) == 0
        assert await client.zcard(keys.label_index("customer", "acme")) == 0
        assert await client.zcard(keys.expiring) == 0

        sync = redis_py.Redis.from_url(redis.url, decode_responses=True)
        gauge = next(m for m in RedisCollector(sync, keys).collect() if m.name == "browserd_jobs_in_state")
        assert {s.labels["state"]: s.value for s in gauge.samples} == {
            "queued": 1, "running": 0, "retrying": 0, "succeeded": 0, "failed": 0, "cancelled": 0}
        sync.close()
    finally:
        await client.aclose()


async def test_one_reconciler_pass_at_a_time(store: JobStore) -> None:
    settings = load_settings(redis_url="redis://127.0.0.1:1/0")
    await store.redis.set(store.keys.reconciler_lock, "another pass", ex=30)
    assert await Reconciler(store, settings).run_once() is None


class SlowPass(Reconciler):
    """A pass that takes 1.5 s (its first step waits), as a large one on a busy Redis does."""

    async def _resend_stale(self, t: float) -> int:
        await asyncio.sleep(1.5)
        return await super()._resend_stale(t)


async def test_a_pass_renews_its_short_lock_and_a_dead_holders_lock_frees_soon(
        store: JobStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconcile, "LOCK_SECONDS", 0.6)
    settings = load_settings(redis_url="redis://127.0.0.1:1/0")
    running = asyncio.create_task(SlowPass(store, settings).run_once())
    await asyncio.sleep(1.2)  # twice the lock's life: held only because the pass renews it
    assert await Reconciler(store, settings).run_once() is None
    assert 0 < await store.redis.pttl(store.keys.reconciler_lock) <= 600
    assert await running is not None
    assert not await store.redis.exists(store.keys.reconciler_lock)  # released at the end
    # a worker killed mid-pass leaves its lock to expire: another pass runs LOCK_SECONDS later
    await store.redis.set(store.keys.reconciler_lock, "a killed worker's pass", px=600)
    assert await Reconciler(store, settings).run_once() is None
    await asyncio.sleep(0.7)
    assert await Reconciler(store, settings).run_once() is not None


async def test_a_schedules_expired_jobs_leave_its_index_too(redis: RedisServer) -> None:
    keys = Keys(prefix=f"t{new_id()[:8]}:")
    client = connect(redis.url)
    store = JobStore(client, result_ttl=1, keys=keys)
    schedule = new_id()
    try:
        made = await BatchStore(store).create([JobSpec(task="a", labels={"k": "v"}), JobSpec(task="b")],
                                              [3, 3], schedule_id=schedule)
        job_ids = made.job_ids
        assert [j.id for j in (await store.list(schedule=schedule)).jobs] == job_ids[::-1]
        assert (await store.list(schedule=new_id())).jobs == [] and (await store.list(schedule="x:y")).jobs == []
        for job_id in job_ids:
            await run_to_end(store, job_id)
        await asyncio.sleep(1.5)  # past BROWSERD_RESULT_TTL: the records are gone, the indexes not yet
        assert await client.zcard(keys.schedule_jobs(schedule)) == 2
        report = await Reconciler(store, load_settings(redis_url=redis.url, result_ttl=1)).run_once()
        assert report is not None and report.index_entries_trimmed == 3  # the two jobs and their batch
        for index in (keys.schedule_jobs(schedule), keys.label_index("k", "v"), keys.all_jobs, keys.expiring):
            assert await client.zcard(index) == 0, index
    finally:
        await client.aclose()
