"""Incremental runs: a scheduled run's page unchanged since the last run reuses that run's read.

At prepare, a job a schedule's run made (a scheduled batch's job, or a scheduled crawl's page),
doing an agent task on a page of its own (``schedules.reads.read_key``), gets the last run's read
of that page for the same work (``schedules.read_store``) as an ``UnchangedCheck``: the agent,
once the page is open and before any model call, fingerprints it and reuses the read when the page
is unchanged (``workers.agent.unchanged``). At settle, a successful run leaves its read (or the read
it reused, under its original job) for the next run, and a reused result names the job it reused.
A recipe replay is left alone: it asks no model already.
"""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

import workers.jobs.metrics as metrics
from workers.agent.unchanged import UnchangedCheck
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import JobStatus
from workers.jobs.schedules.read_store import PageReads
from workers.jobs.schedules.reads import PageRead, read_key
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")


class Tracked:
    """Where a job's read is kept: its schedule and its read key (``run.get(Tracked)``)."""

    def __init__(self, schedule_id: str, key: str, check: UnchangedCheck) -> None:
        self.schedule_id, self.key, self.check = schedule_id, key, check


class IncrementalRuns(Feature):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.reads = PageReads(services.store.redis, services.keys) if services.store is not None else None

    async def prepare(self, run: JobRun) -> None:
        key = read_key(run.inputs.spec)
        if self.reads is None or key is None or run.inputs.replay is not None:
            return
        try:
            schedule_id = await self.reads.schedule_of(run.job_id)
            if schedule_id is None:
                return
            previous = await self.reads.get(schedule_id, key)
        except (RedisError, ValueError) as exc:  # no read to reuse: the agent reads the page, as always
            log.warning("job %s: the last run's read could not be had: %s", run.job_id, exc)
            return
        check = UnchangedCheck(previous)
        run.put(Tracked(schedule_id, key, check))
        run.inputs.unchanged = check

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        tracked = run.get(Tracked)
        if tracked is None or run.number != 1:
            return result
        check = tracked.check
        if check.reused_from is not None and result.status is JobStatus.succeeded:
            result = result.model_copy(update={"reused_from": check.reused_from})
            metrics.observe_reused_page()
        if result.status is not JobStatus.succeeded or check.fingerprint is None:
            return result  # a failed visit leaves the last read as it was
        read = PageRead(fingerprint=check.fingerprint, data=result.data, final_answer=result.final_answer,
                        job_id=check.reused_from or run.job_id, run=None)
        try:
            await self.reads.put(tracked.schedule_id, tracked.key, read)  # type: ignore[union-attr]
        except RedisError as exc:  # the result stands; the next run reads the page with the model
            log.warning("job %s: its read was not kept for the next run: %s", run.job_id, exc)
        return result
