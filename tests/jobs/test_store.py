"""workers.jobs.store (JobStore) on a real redis-server: the transitions, their fencing, idempotency and listing."""

from __future__ import annotations

from config.logs import bind, current
from workers.jobs.model.result import JobResult, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.store.jobs import JobStore
from workers.pipeline.records import StoreRecords


async def test_a_job_runs_once_and_finishes_once(store: JobStore) -> None:
    made = await store.create(JobSpec(task="a"), max_steps=3)
    job_id, created = made.job_id, made.created
    assert created and (await store.get(job_id)).state == JobStatus.queued  # type: ignore[union-attr]
    claim = await store.start(job_id, worker="w1", max_attempts=2, stale_after=30)
    assert (claim.outcome, claim.attempt) == ("run", 1)
    assert (await store.start(job_id, worker="w2", max_attempts=2, stale_after=30)).outcome == "busy"
    assert await store.progress(job_id, 1, step=StepRecord(step=1, url="http://x/"))
    assert await store.finish(job_id, 1, JobResult(status=JobStatus.succeeded, final_answer="done"))
    assert not await store.finish(job_id, 1, JobResult(status=JobStatus.failed)), "a job finishes once"
    record = await store.get(job_id)
    assert record is not None and record.state == JobStatus.succeeded and record.result.final_answer == "done"
    assert [e.type for e in await store.events(job_id)] == ["state", "state", "step", "state"]


async def test_a_stale_run_loses_the_job_to_the_next_delivery(store: JobStore) -> None:
    job_id = (await store.create(JobSpec(task="a"), max_steps=3)).job_id
    await store.start(job_id, worker="w1", max_attempts=3, stale_after=30)
    claim = await store.start(job_id, worker="w2", max_attempts=3, stale_after=0)
    assert (claim.outcome, claim.attempt) == ("run", 2)
    assert not await store.progress(job_id, 1), "the first run no longer owns the job"
    assert not await store.finish(job_id, 1, JobResult(status=JobStatus.succeeded))


async def test_cancel_before_start_and_idempotency(store: JobStore) -> None:
    spec = JobSpec(task="a", idempotency_key="k1")
    made = await store.create(spec, max_steps=3)
    first, created = made.job_id, made.created
    made = await store.create(spec, max_steps=3)
    again, created_again = made.job_id, made.created
    assert (first, created, created_again) == (again, True, False)
    assert await store.cancel(first) == ("cancelled", "cancelled")
    assert await store.cancel(first) == ("finished", "cancelled")
    assert (await store.start(first, worker="w", max_attempts=1, stale_after=30)).outcome == "finished"
    assert await store.cancel("../not-an-id") == ("missing", "")


async def test_listing_is_newest_first_by_state_and_label(store: JobStore) -> None:
    ids = [(await store.create(JobSpec(task="a", labels={"team": t}), max_steps=1)).job_id for t in "xyx"]
    page = await store.list(labels={"team": "x"}, limit=1)
    assert [j.id for j in page.jobs] == [ids[2]] and page.next_cursor is not None
    rest = await store.list(labels={"team": "x"}, limit=5, cursor=page.next_cursor)
    assert [j.id for j in rest.jobs] == [ids[0]] and rest.next_cursor is None
    assert {j.id for j in (await store.list(state="queued", limit=50)).jobs} >= set(ids)


async def test_a_tenants_job_is_its_own_and_its_worker_logs_name_the_tenant(store: JobStore) -> None:
    spec = JobSpec(task="x", idempotency_key="same")
    mine = await store.create(spec, max_steps=5, tenant="acme")
    theirs = await store.create(spec, max_steps=5, tenant="beta")
    operator = await store.create(spec, max_steps=5)
    assert len({mine.job_id, theirs.job_id, operator.job_id}) == 3  # idempotency keys are per tenant
    assert (await store.create(spec, max_steps=5, tenant="acme")).job_id == mine.job_id
    assert [j.id for j in (await store.list(tenant="acme")).jobs] == [mine.job_id]
    assert len((await store.list()).jobs) == 3
    with bind(job_id=mine.job_id):
        await StoreRecords(store).spec(mine.job_id)
        assert current()["tenant"] == "acme"
    ended = (await store.ends([mine.job_id, operator.job_id]))
    assert [e.tenant for e in ended if e] == ["acme", None]
