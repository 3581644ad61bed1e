"""The pipeline: claim -> prepare -> acquire -> attach -> run -> settle -> record -> after.

Every job runs through here, wherever it runs: a Celery worker (``workers.runtime``, records in
Redis), ``browserd run``, the benches and the tests (``workers.pipeline.local``, records in this
process). What differs between them is the ``RunRecords`` and the ``Services`` the features get,
never the stages. The stages and the hooks features plug into them are described in
``workers.pipeline.feature``; this module only sequences them, makes the run's time budget, and
turns whatever ended a stage into a result through the failure table (``workers.agent.failures``).

A result is recorded the moment it exists: the contexts around the run (the live view) are closed
after the record, never before it, and a feature's cleanup cannot hold the result back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import cdp
from config import bind, note
from config.logs import current
from config.tasks import cancel_and_wait
from workers.agent import AgentEvent, JobInputs, JobSession
from workers.agent.failures import failure
from workers.jobs.budget import TimeBudget
from workers.jobs.errors import (
    BrowserWaitExpired,
    HardLimitReached,
    JobVanished,
    RunBackstop,
)
from workers.jobs.metrics import observe_step
from workers.jobs.model.record import EventType
from workers.jobs.model.result import JobResult, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.store.outcomes import ClaimOutcome
from workers.pipeline.feature import Feature, Services
from workers.pipeline.records import RunRecords
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")

CLEANUP_SECONDS = 5.0  # how long a run's surrounding contexts may take to close, after its record


class Browsers(Protocol):
    """Where leases come from: a ``cdp.BrowserPool``, or ``GivenLease`` (a caller's own)."""

    def lease(self, timeout: float = 60.0) -> AbstractAsyncContextManager[cdp.Lease]: ...


class GivenLease:
    """One lease the caller holds (and releases): a test or bench reads the page after the job."""

    def __init__(self, lease: cdp.Lease) -> None:
        self._lease = lease

    @contextlib.asynccontextmanager
    async def lease(self, timeout: float = 60.0):  # type: ignore[no-untyped-def]
        yield self._lease


class Abandoned(StrEnum):
    """A delivery that did not end by itself: the worker thread gave up on a run that ignored its
    limits (``WorkerRuntime.run``)."""

    hard_limit = "hard_limit"


@dataclass(frozen=True)
class Delivered:
    """What one delivery did (the claim's outcome: ``run`` when it ran the job, else why not; or
    ``Abandoned``), and the job's status when this delivery made it final."""

    outcome: ClaimOutcome | Abandoned
    status: JobStatus | None = None


CLAIM_FINALS = {ClaimOutcome.cancelled: JobStatus.cancelled, ClaimOutcome.lost: JobStatus.failed}
"""Claims that themselves ended the job (cancelled while queued; lost too often), and as what."""


def job_limit(spec: JobSpec, services: Services) -> float:
    """The job's wall-clock limit: its own ``timeout``, else ``BROWSERD_JOB_TIMEOUT``."""
    return spec.timeout or services.settings.job_timeout


class Pipeline:
    """Runs deliveries of jobs kept in ``records``, in leases from ``browsers``, with ``features``
    (their classes, in registry order) built on ``services``."""

    def __init__(self, records: RunRecords, browsers: Browsers, services: Services,
                 features: Sequence[type[Feature]]) -> None:
        self.records = records
        self.browsers = browsers
        self.services = services
        self.settings = services.settings
        self.features = [kind(services) for kind in features]
        self.runs: dict[str, JobRun] = {}  # running now: what the heartbeat and the flags cover
        for feature in self.features:
            feature.started(self)

    # --- one delivery ----------------------------------------------------------------------

    async def deliver(self, job_id: str) -> Delivered:
        """Handle one delivery of ``job_id``; says whether it ran the job and how the job stands now."""
        with bind(job_id=job_id):
            claim = await self.records.claim(job_id, worker=self.services.worker_id,
                                             max_attempts=self.settings.max_attempts,
                                             stale_after=self.services.stale_after)
            note(attempt=claim.attempt)
            if claim.outcome is not ClaimOutcome.run:
                log.info("job %s not run: %s (attempts=%s)", job_id, claim.outcome, claim.attempt)
                return Delivered(claim.outcome, CLAIM_FINALS.get(claim.outcome))
            spec = await self.records.spec(job_id)
            run = self._begin(job_id, claim.attempt, spec)
            run.tenant = await self.records.tenant(job_id)
            try:
                result = await self._first_run(run, spec)
            finally:
                self.runs.pop(job_id, None)
                await run.stack.aclose()  # unless a kept session took it over
            log.info("job %s attempt %s: %s %s", job_id, run.attempt, result.status.value, result.category or "")
            return Delivered(ClaimOutcome.run, result.status)

    def _begin(self, job_id: str, attempt: int, spec: JobSpec | None) -> JobRun:
        shown = spec or JobSpec(task="(the job record vanished)")
        budget = TimeBudget(job_limit(shown, self.services))
        # The record's tenant (``RunRecords.spec`` put it in the context): its egress is its own networks only.
        run = JobRun(job_id, attempt, shown, budget, JobInputs(spec=shown, config=self.services.agent,
                                                               telemetry=self.services.telemetry,
                                                               tenant=current().get("tenant")))
        run.inputs.is_cancelled, run.inputs.is_paused = run.is_cancelled, run.is_paused
        run.owner_cancel = self.records.owner_cancel()
        self.runs[job_id] = run
        return run

    async def _first_run(self, run: JobRun, spec: JobSpec | None) -> JobResult:
        around = AsyncExitStack()
        try:
            if spec is None:
                result = failure(JobVanished(run.job_id), started=run.started_at)
            else:
                result = await self._opened(run, around)
            return await self._conclude(run, result)
        finally:
            await self._close(around)

    async def _opened(self, run: JobRun, around: AsyncExitStack) -> JobResult:
        """Prepare, acquire and attach; then the run itself. A stage's failure is the run's result."""
        try:
            for feature in self.features:
                await feature.prepare(run)
            await self._acquire(run)
            for feature in self.features:
                await feature.attach(run)
            run.session = JobSession(run.inputs)
            run.stack.push_async_callback(run.session.close)
        except Exception as exc:
            return failure(exc, lease=run.lease, started=run.started_at)
        return await self._run(run, around)

    async def _acquire(self, run: JobRun) -> None:
        """The features' holds (a politeness slot), then the lease: all within the job's budget."""
        budget = run.budget
        try:
            async with budget.until_deadline():
                for feature in self.features:
                    held = feature.hold(run)
                    if held is not None:
                        await run.stack.enter_async_context(held)
                run.lease = await run.stack.enter_async_context(self.browsers.lease(max(0.1, budget.remaining())))
        except TimeoutError:
            raise BrowserWaitExpired(budget.limit) from None
        run.inputs.lease = run.lease

    async def _run(self, run: JobRun, around: AsyncExitStack) -> JobResult:
        """One run of the session (its own task, or a follow-up's) under the backstop; the contexts
        features put around it are entered into ``around``, which the caller closes after the record."""
        assert run.session is not None
        budget = run.budget
        try:
            for feature in self.features:
                context = feature.during(run)
                if context is not None:
                    await around.enter_async_context(context)
            # the session stops at the budget's deadline itself; this is the backstop for everything around it
            async with budget.until_backstop():
                return await run.session.run(budget, run.task, on_step=lambda step: self._step(run, step),
                                             on_event=lambda event: self._event(run, event))
        except TimeoutError:
            return failure(RunBackstop(budget.limit), started=run.started_at)
        except Exception as exc:  # a bug must fail the job, not leave it "running" until redelivery
            return failure(exc, lease=run.lease, started=run.started_at)

    async def _step(self, run: JobRun, step: StepRecord) -> None:
        observe_step(step)
        await self.records.progress(run.job_id, run.attempt, step=step)
        for feature in self.features:
            await feature.step(run, step)

    async def _event(self, run: JobRun, event: AgentEvent) -> None:
        await self.records.event(run.job_id, run.attempt, EventType.agent, event.model_dump_json())

    async def _conclude(self, run: JobRun, result: JobResult) -> JobResult:
        """Settle, record, after: the result as features shape it, written, then learnt from."""
        for feature in self.features:
            result = await feature.settle(run, result)
        run.recorded = await self.records.finish(run, result)
        if run.recorded:
            for feature in self.features:
                try:
                    await feature.after(run, result)
                except Exception:  # the result stands, recorded; what follows it must not undo that
                    log.exception("job %s: %s after the result failed", run.job_id, type(feature).__name__)
        return result

    async def _close(self, around: AsyncExitStack) -> None:
        """Close what stood around a run, after its result is recorded, within ``CLEANUP_SECONDS``."""
        closing = asyncio.ensure_future(around.aclose())  # its own task: a swallowed cancel cannot hold us
        done, _ = await asyncio.wait({closing}, timeout=CLEANUP_SECONDS)
        if not done:
            await cancel_and_wait(closing, "cleanup after the run")
        elif not closing.cancelled() and closing.exception() is not None:
            exc = closing.exception()
            log.warning("cleanup after the run did not finish: %s: %s", type(exc).__name__, exc)

    # --- follow-ups (kept sessions) --------------------------------------------------------

    async def follow_up(self, run: JobRun) -> JobResult:
        """Run ``run.task`` as run ``run.number`` in the session its first run left open: the job's
        whole limit again, then settle, record and after like any run."""
        run.budget = TimeBudget(job_limit(run.spec, self.services))
        run.cancelled = run.paused = False
        self.runs[run.job_id] = run
        around = AsyncExitStack()
        try:
            return await self._conclude(run, await self._run(run, around))
        finally:
            self.runs.pop(run.job_id, None)
            await self._close(around)

    # --- the worker's ticks ----------------------------------------------------------------

    async def abandon(self, job_id: str, seconds: float) -> None:
        """Give up on a run that outlived its hard limit (``seconds``): stop heartbeating it and fail it."""
        run = self.runs.pop(job_id, None)
        if run is not None:
            run.keep = None
            await self.records.finish(run, failure(HardLimitReached(seconds), started=run.started_at))

    async def heartbeat(self) -> None:
        """Refresh every running job's heartbeat in one round trip, then what features hold."""
        await self.records.heartbeat(list(self.runs.values()))
        for feature in self.features:
            await feature.beat()

    async def check_flags(self) -> None:
        """Pick up cancel and pause requests for the running jobs in one round trip."""
        for job_id, flags in (await self.records.flags(list(self.runs))).items():
            run = self.runs.get(job_id)
            if run is None:
                continue
            if flags.cancel and not run.cancelled:
                log.info("job %s: cancel requested", job_id)
                run.cancelled = True
            if flags.pause != run.paused:
                log.info("job %s: %s", job_id, "pause requested" if flags.pause else "resume requested")
                run.paused = flags.pause

    async def stop(self) -> None:
        """At shutdown: every feature lets go of what it holds (kept sessions close)."""
        for feature in self.features:
            try:
                await feature.stop()
            except Exception:
                log.exception("%s did not stop cleanly", type(feature).__name__)
