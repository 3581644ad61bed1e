"""Where the pipeline keeps a job's record: the shared store (a worker), or this process (a local run).

The pipeline talks to one narrow interface, ``RunRecords``: claim a job, read its spec, report
progress and events, record the result, heartbeat and read the owner's flags. Two stores serve it:

* ``StoreRecords``: the job store in Redis (``workers.jobs.store``), every transition a Lua call
  fenced by the attempt. Recording rides out a Redis restart (``RECORD_PATIENCE``), and what a
  final transition owes (metrics, its webhooks' outbox) follows it (``Finisher``).
* ``LocalRecords``: ``browserd run``, the benches and the tests: the record lives in memory, and a
  listener hears each step and event as a worker's stream would carry them.

Everything else a job needs from Redis (auth profiles, credential sets, recipes, politeness) is
the features' business (``Services.redis``), so a local run with ``BROWSERD_REDIS_URL`` set uses
the same profiles and recipes as the workers while its own record stays local.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from config.logs import note
from workers.agent import AgentEvent
from workers.agent.recorder import OnStep
from workers.jobs.ids import new_id
from workers.jobs.lifecycle.finishing import Finisher
from workers.jobs.model.record import EventType
from workers.jobs.model.result import EncodedResult, JobResult, RunRecord, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.store.codec import RunFlags
from workers.jobs.store.jobs import JobAttempt, JobStore
from workers.jobs.store.outcomes import Claim, ClaimOutcome
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")

RECORD_PATIENCE = 60.0  # seconds a result write keeps retrying while Redis is away

OnAgentEvent = Callable[[AgentEvent], Awaitable[None]]


class RunRecords(Protocol):
    """The job record as the pipeline sees it."""

    async def claim(self, job_id: str, *, worker: str, max_attempts: int, stale_after: float) -> Claim:
        """Whether this delivery runs the job, as which attempt (``Claim.outcome``)."""
        ...

    async def spec(self, job_id: str) -> JobSpec | None:
        ...

    async def tenant(self, job_id: str) -> str | None:
        """The tenant whose job it is (None: the operator's), asked once after ``spec``: what the
        features look its named objects up under (credential sets, profiles, recipes)."""
        ...

    async def progress(self, job_id: str, attempt: int, *, step: StepRecord | None = None,
                       first_command_at: float | None = None) -> bool:
        """A step (``StepRecord``) or the first command's time; False once the run lost the job."""
        ...

    async def event(self, job_id: str, attempt: int, kind: EventType, data_json: str) -> bool:
        ...

    async def finish(self, run: JobRun, result: JobResult) -> bool:
        """Record the run's result (and a kept session's word, ``run.keep``); False when the run no
        longer owned the job (a later attempt took it over)."""
        ...

    async def heartbeat(self, runs: Iterable[JobRun]) -> None:
        ...

    async def flags(self, job_ids: list[str]) -> dict[str, RunFlags]:
        """What the jobs' owners asked (cancel, pause), read every tick of a worker."""
        ...

    def owner_cancel(self) -> Callable[[], bool] | None:
        """A cancel the runs may read directly, at every check (a local run's Ctrl-C), if any."""
        ...


class StoreRecords:
    """Job records in the shared Redis store (a worker's)."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.finisher = Finisher(store)
        self._tenants: dict[str, str | None] = {}  # job id -> its tenant, from ``spec`` until ``tenant`` takes it

    async def claim(self, job_id: str, *, worker: str, max_attempts: int, stale_after: float) -> Claim:
        claim = await self.store.start(job_id, worker=worker, max_attempts=max_attempts, stale_after=stale_after)
        if claim.outcome in (ClaimOutcome.cancelled, ClaimOutcome.lost):  # this claim made the job final: what that owes follows
            await self.finisher.finished(job_id)
        elif claim.outcome is ClaimOutcome.finished:  # a redelivery: what the finishing process owed may be unsent
            await self.finisher.settle(job_id)
        return claim

    async def spec(self, job_id: str) -> JobSpec | None:
        """The job's spec; the record is read here once, so its tenant joins the log context (never a key)."""
        record = await self.store.get(job_id)
        if record is not None:
            self._tenants[job_id] = record.tenant
            if record.tenant is not None:
                note(tenant=record.tenant)
        return record.spec if record is not None else None

    async def tenant(self, job_id: str) -> str | None:
        """Read with the spec (``spec``); a job read no other way is read again."""
        if job_id in self._tenants:
            return self._tenants.pop(job_id)
        record = await self.store.get(job_id)
        return record.tenant if record is not None else None

    async def progress(self, job_id: str, attempt: int, *, step: StepRecord | None = None,
                       first_command_at: float | None = None) -> bool:
        return await self.store.progress(job_id, attempt, step=step,
                                         first_command_at=first_command_at)

    async def event(self, job_id: str, attempt: int, kind: EventType, data_json: str) -> bool:
        return await self.store.event(job_id, attempt, kind, data_json)

    async def finish(self, run: JobRun, result: JobResult) -> bool:
        """Record the result, riding out a Redis restart: retried with backoff for ``RECORD_PATIENCE``
        seconds (the client itself retries each command briefly); then the error escapes, and the
        reconciler runs the job again once its heartbeat is stale. What the transition owes follows."""
        delay, deadline = 0.5, time.monotonic() + RECORD_PATIENCE
        while True:
            try:
                won = await self._finish(run, result)
                break
            except (RedisConnectionError, RedisTimeoutError) as exc:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning("job %s: recording its result failed (%s); retrying in %.1fs", run.job_id, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        if won:
            await self.finisher.finished(run.job_id, result)
        else:
            log.warning("job %s attempt %s finished but no longer owned the job", run.job_id, run.attempt)
            await self.finisher.settle(run.job_id)
        return won

    async def _finish(self, run: JobRun, result: JobResult) -> bool:
        made = run.get(EncodedResult)  # the result limits' JSON of this very result, if they made one
        encoded = made if made is not None and made.result is result else result
        if run.keep is None:
            return await self.store.finish(run.job_id, run.attempt, encoded)
        record = RunRecord(run=run.number, task=run.task or run.spec.task or "", state=result.status,
                           category=result.category, error=result.error, started_at=result.started_at,
                           finished_at=result.finished_at, result=result)
        return await self.store.finish(run.job_id, run.attempt, encoded, run=record,
                                       session_until=None if run.keep.closed else run.keep.until,
                                       session_closed=run.keep.closed)

    async def heartbeat(self, runs: Iterable[JobRun]) -> None:
        running = [JobAttempt(run.job_id, run.attempt) for run in runs]
        if running:
            await self.store.heartbeat_many(running)

    async def flags(self, job_ids: list[str]) -> dict[str, RunFlags]:
        return await self.store.run_flags(job_ids)

    def owner_cancel(self) -> Callable[[], bool] | None:
        return None  # a cancel is a flag in Redis, read by the worker's ticker


@dataclass
class LocalRecords:
    """Job records in this process (``browserd run``, benches, tests). ``on_step`` and ``on_event``
    hear each step and agent event as it happens; ``is_cancelled`` is the owner's cancel (Ctrl-C)."""

    on_step: OnStep | None = None
    on_event: OnAgentEvent | None = None
    is_cancelled: Callable[[], bool] | None = None
    specs: dict[str, JobSpec] = field(default_factory=dict)
    results: dict[str, JobResult] = field(default_factory=dict)

    def add(self, spec: JobSpec, job_id: str | None = None) -> str:
        """A queued job (named ``job_id``, else a new id); its id."""
        job_id = job_id or new_id()
        self.specs[job_id] = spec
        return job_id

    async def claim(self, job_id: str, *, worker: str, max_attempts: int, stale_after: float) -> Claim:
        if job_id not in self.specs:
            return Claim(ClaimOutcome.missing, 0)
        if job_id in self.results:
            return Claim(ClaimOutcome.finished, 1)
        return Claim(ClaimOutcome.run, 1)

    async def spec(self, job_id: str) -> JobSpec | None:
        return self.specs.get(job_id)

    async def tenant(self, job_id: str) -> str | None:
        return None  # a local run is the operator's

    async def progress(self, job_id: str, attempt: int, *, step: StepRecord | None = None,
                       first_command_at: float | None = None) -> bool:
        if step is not None and self.on_step is not None:
            await self.on_step(step)
        return True

    async def event(self, job_id: str, attempt: int, kind: EventType, data_json: str) -> bool:
        if kind is EventType.agent and self.on_event is not None:
            await self.on_event(AgentEvent.model_validate_json(data_json))
        return True

    async def finish(self, run: JobRun, result: JobResult) -> bool:
        self.results[run.job_id] = result
        return True

    async def heartbeat(self, runs: Iterable[JobRun]) -> None:
        return None

    async def flags(self, job_ids: list[str]) -> dict[str, RunFlags]:
        return {}

    def owner_cancel(self) -> Callable[[], bool] | None:
        return self.is_cancelled
