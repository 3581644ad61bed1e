"""The kernel's side of follow-ups and pause: the Lua transitions, against a real redis-server."""

from __future__ import annotations

import time

from workers.jobs.model.result import JobResult, RunRecord
from workers.jobs.model.spec import FollowUpRequest, JobSpec
from workers.jobs.model.status import JobStatus, SessionState
from workers.jobs.store.codec import now
from workers.jobs.store.jobs import JobStore

KEEP = {"keep_session": 30}


async def _kept(store: JobStore, until: float | None = None) -> str:
    """A job whose first run finished with its session kept (until ``until``, default 30 s on)."""
    job_id = (await store.create(JobSpec(task="t", options=KEEP), max_steps=5)).job_id
    assert (await store.start(job_id, worker="w1", max_attempts=3, stale_after=30)).outcome == "run"
    result = JobResult(status=JobStatus.succeeded, final_answer="one")
    run = RunRecord(run=1, task="t", state=result.status, result=result)
    assert await store.finish(job_id, 1, result, run=run, session_until=until or now() + 30)
    return job_id


async def test_a_follow_up_reopens_a_kept_session_once_and_the_worker_pops_it(store: JobStore) -> None:
    job_id = await _kept(store)
    claim = await store.follow_up(job_id, FollowUpRequest(task="two"), fresh_within=10)
    assert claim.outcome == "accepted" and claim.run == 2 and claim.event_id
    record = await store.get(job_id)
    assert record is not None and record.state is JobStatus.running and record.result is None
    assert [r.state for r in record.runs] == [JobStatus.succeeded, JobStatus.running]
    assert await store.redis.ttl(store.keys.job(job_id)) == -1, "a running job's record does not expire"
    again = await store.follow_up(job_id, FollowUpRequest(task="three"), fresh_within=10)
    assert again.outcome == "not_finished"
    popped = await store.next_follow_up(job_id, 1)
    assert popped is not None and (popped.run, popped.task) == (2, "two")
    assert not await store.end_session(job_id, 2, "idle"), "another attempt's run cannot close it"
    # the same attempt's run finishes the follow-up; the session closes for good
    result = JobResult(status=JobStatus.succeeded, final_answer="two")
    assert await store.finish(job_id, 1, result, run=RunRecord(run=2, task="two", state=result.status, result=result),
                              session_closed="the job was cancelled")
    record = await store.get(job_id)
    assert record is not None and record.session is SessionState.closed and record.result is not None
    assert record.result.final_answer == "two"
    assert [r.result.final_answer for r in record.runs if r.result] == ["one", "two"]
    assert (await store.follow_up(job_id, FollowUpRequest(task="x"), fresh_within=10)).outcome == "closed"


async def test_follow_up_refusals(store: JobStore) -> None:
    plain = (await store.create(JobSpec(task="t"), max_steps=5)).job_id
    assert (await store.follow_up(plain, FollowUpRequest(task="x"), fresh_within=10)).outcome == "not_finished"
    await store.start(plain, worker="w", max_attempts=1, stale_after=30)
    await store.finish(plain, 1, JobResult(status=JobStatus.succeeded))
    assert (await store.follow_up(plain, FollowUpRequest(task="x"), fresh_within=10)).outcome == "not_kept"
    assert (await store.follow_up("0" * 32, FollowUpRequest(task="x"), fresh_within=10)).outcome == "missing"
    expired = await _kept(store, until=now() - 1)
    assert (await store.follow_up(expired, FollowUpRequest(task="x"), fresh_within=10)).outcome == "closed"
    silent = await _kept(store)
    time.sleep(0.2)
    assert (await store.follow_up(silent, FollowUpRequest(task="x"), fresh_within=0.1)).outcome == "lost"
    idle = await _kept(store)
    assert await store.end_session(idle, 1, "no follow-up came within 30s")
    record = await store.get(idle)
    assert record is not None and record.session is SessionState.closed and "within 30s" in (record.session_note or "")


async def test_a_follow_up_whose_worker_died_fails_worker_lost_instead_of_running_again(store: JobStore) -> None:
    job_id = await _kept(store)
    assert (await store.follow_up(job_id, FollowUpRequest(task="two"), fresh_within=10)).outcome == "accepted"
    claim = await store.start(job_id, worker="w2", max_attempts=3, stale_after=0)
    assert claim.outcome == "lost"
    record = await store.get(job_id)
    assert record is not None and record.state is JobStatus.failed and record.category == "worker_lost"
    assert "session" in (record.error or "") and record.runs[-1].state is JobStatus.failed
    assert record.session is SessionState.closed


async def test_pause_is_a_flag_on_a_running_job(store: JobStore) -> None:
    job_id = (await store.create(JobSpec(task="t"), max_steps=5)).job_id
    assert await store.pause(job_id) == ("not_running", "queued")
    await store.start(job_id, worker="w", max_attempts=1, stale_after=30)
    assert await store.resume(job_id) == ("not_paused", "running")
    assert await store.pause(job_id) == ("paused", "running")
    assert await store.pause(job_id) == ("already", "running")
    assert (await store.run_flags([job_id]))[job_id].pause
    record = await store.get(job_id)
    assert record is not None and record.paused and record.paused_at is not None
    assert await store.resume(job_id) == ("resumed", "running")
    await store.pause(job_id)
    await store.finish(job_id, 1, JobResult(status=JobStatus.failed, category="timeout", error="paused too long"))
    record = await store.get(job_id)
    assert record is not None and not record.paused, "a finished job is not paused"
    assert await store.pause(job_id) == ("finished", "failed")
    assert await store.resume("nope") == ("missing", "")


async def test_cancel_closes_a_kept_session_and_wakes_its_worker(store: JobStore) -> None:
    job_id = await _kept(store)
    assert await store.cancel(job_id) == ("session_closed", "succeeded")
    popped = await store.next_follow_up(job_id, 1)
    assert popped is not None and popped.close
    assert (await store.follow_up(job_id, FollowUpRequest(task="x"), fresh_within=10)).outcome == "closed"
    assert await store.cancel(job_id) == ("finished", "succeeded")
