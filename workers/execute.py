"""One delivery of one job: claim it, run it in its own lease, record how it ended.

The claim (``JobStore.start``) decides whether this delivery runs at all: a job that already
finished, was cancelled while queued, or is still running elsewhere is left alone, and a job whose
earlier workers were lost too often fails as ``worker_lost`` instead of running again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import cdp
from config import Settings
from daemon import Claim, JobStore
from daemon.finishing import Finisher
from daemon.metrics import observe_step
from workers.models import FailureCategory, JobResult, JobSpec, JobStatus, StepRecord

log = logging.getLogger("browserd.worker")

SOFT_LIMIT_SLACK = 2.0  # seconds the executor waits past the job's own timeout (below the hard limit)


@dataclass
class Run:
    """A job this process is running: what the ticker heartbeats and checks for a cancel."""

    job_id: str
    attempt: int
    cancelled: bool = False
    started: float = field(default_factory=time.monotonic)


def failed(category: FailureCategory, error: str, started: datetime | None = None) -> JobResult:
    return JobResult(
        status=JobStatus.failed, category=category, error=error, started_at=started, finished_at=datetime.now(UTC)
    )


def soft_limit(spec: JobSpec, settings: Settings) -> float:
    return spec.timeout or settings.job_timeout


class FirstCommandProbe:
    """Notes when the job's tab sends its first CDP command, then gets out of the way.

    It shadows ``send`` on the lease's page session for one call; enqueue -> first command is the
    queue's overhead per job as a user would feel it.
    """

    def __init__(self, session: cdp.CDPSession, on_first: Callable[[float], None]) -> None:
        self.session = session
        self.on_first = on_first
        session.send = self._send  # type: ignore[method-assign]

    async def _send(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.restore()
        self.on_first(time.time())
        return await self.session.send(*args, **kwargs)

    def restore(self) -> None:
        self.session.__dict__.pop("send", None)


class JobExecutor:
    """Runs deliveries on the worker's event loop, against its pool and store."""

    def __init__(self, store: JobStore, pool: cdp.BrowserPool, settings: Settings, worker_id: str,
                 stale_after: float) -> None:
        self.store = store
        self.pool = pool
        self.settings = settings
        self.worker_id = worker_id
        self.stale_after = stale_after
        self.runs: dict[str, Run] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.finisher = Finisher(store)

    async def deliver(self, job_id: str) -> str:
        """Handle one delivery; returns the claim's outcome (``run`` once the job ran)."""
        claim: Claim = await self.store.start(
            job_id, worker=self.worker_id, max_attempts=self.settings.max_attempts, stale_after=self.stale_after
        )
        if claim.outcome != "run":
            log.info("job %s not run: %s (attempts=%s)", job_id, claim.outcome, claim.attempt)
            if claim.outcome in ("cancelled", "lost"):  # this delivery made it final
                await self.finisher.finished(job_id)
            return claim.outcome
        run = Run(job_id, claim.attempt)
        self.runs[job_id] = run
        try:
            result = await self._run(run)
            if await self.store.finish(job_id, run.attempt, result):
                await self.finisher.finished(job_id, result)
            else:
                log.warning("job %s attempt %s finished but no longer owned the job", job_id, run.attempt)
        finally:
            self.runs.pop(job_id, None)
        log.info("job %s attempt %s: %s %s", job_id, run.attempt, result.status.value, result.category or "")
        return "run"

    async def _run(self, run: Run) -> JobResult:
        started = datetime.now(UTC)
        record = await self.store.get(run.job_id)
        if record is None or record.spec is None:
            return failed(FailureCategory.internal, "the job record vanished before it could run", started)
        spec = record.spec
        limit = soft_limit(spec, self.settings)
        try:
            # run_job applies the soft limit itself and reports its steps; this is the backstop
            # for the lease and anything around it.
            async with asyncio.timeout(limit + SOFT_LIMIT_SLACK):
                return await self._in_lease(run, spec)
        except TimeoutError:
            return failed(FailureCategory.timeout, f"the job exceeded its {limit:g}s limit", started)
        except (cdp.BrowserGone, cdp.TargetCrashed) as exc:
            return failed(FailureCategory.browser_crash, f"the browser failed: {exc}", started)
        except Exception as exc:  # a bug must fail the job, not leave it "running" until redelivery
            log.exception("job %s crashed", run.job_id)
            return failed(FailureCategory.internal, f"internal error: {type(exc).__name__}: {exc}", started)

    async def _in_lease(self, run: Run, spec: JobSpec) -> JobResult:
        from workers.agent import run_job  # the agent pulls in the LLM stack; import it where used

        async def on_step(step: StepRecord) -> None:
            observe_step(step)
            await self.store.progress(run.job_id, run.attempt, step=step)

        async with self.pool.lease() as lease:
            probe = FirstCommandProbe(lease.page.session, lambda at: self._record_first_command(run, at))
            try:
                return await run_job(
                    spec, lease, settings=self.settings, on_step=on_step, is_cancelled=lambda: run.cancelled
                )
            finally:
                probe.restore()

    def _record_first_command(self, run: Run, at: float) -> None:
        task = asyncio.get_running_loop().create_task(self.store.progress(run.job_id, run.attempt, first_command_at=at))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def abandon(self, job_id: str, reason: str) -> None:
        """Give up on a run that outlived its hard limit: stop heartbeating it and fail it."""
        run = self.runs.pop(job_id, None)
        result = failed(FailureCategory.timeout, reason)
        if run is not None and await self.store.finish(job_id, run.attempt, result):
            await self.finisher.finished(job_id, result)

    async def heartbeat(self) -> None:
        """Refresh every running job's heartbeat in one round trip."""
        if self.runs:
            await self.store.heartbeat_many([(r.job_id, r.attempt) for r in self.runs.values()])

    async def check_cancels(self) -> None:
        """Pick up cancel requests for the running jobs in one round trip."""
        for job_id in await self.store.cancel_flags(list(self.runs)):
            run = self.runs.get(job_id)
            if run is not None and not run.cancelled:
                log.info("job %s: cancel requested", job_id)
                run.cancelled = True
