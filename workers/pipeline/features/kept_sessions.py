"""Kept sessions: a job's browser context and history held open for follow-up tasks.

A job with ``options.keep_session`` keeps its session after its task ends (Nanobrowser's
``addFollowUpTask``): before the result is recorded (``settle``) this feature decides whether the
session can stay open (not after a cancel, a crash, a memory stop or an internal failure) and for
how long; the record says so. Once the result is recorded (``after``) the feature takes over what
the job holds (its lease, slot and session) and waits in its own task for a follow-up
(``POST /v1/jobs/{id}/follow-up``, a Redis list); each follow-up runs through the pipeline again
as run 2, 3, ... of the same attempt. The session closes when no follow-up comes within its idle
time, when a run ends it, on a cancel, or when the worker stops.

A run whose record is not in a shared store (``browserd run``) keeps no session: nobody could
send it a follow-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from contextlib import AsyncExitStack

from config import bind
from config.tasks import cancel_and_wait
from workers.agent.failures import SESSION_ENDERS
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import JobStatus
from workers.jobs.store.jobs import FollowUp, JobAttempt, JobStore
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun, Keep

log = logging.getLogger("browserd.worker")


class KeptSessions(Feature):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.sessions: dict[str, asyncio.Task[None]] = {}  # job id -> the task holding its session
        self.idle: dict[str, JobRun] = {}  # sessions waiting for a follow-up (their heartbeat is ours)

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        idle = run.spec.options.keep_session
        if idle is None:
            return result
        if self.services.store is None:
            if run.number == 1:
                log.info("job %s: a local run keeps no session for follow-ups", run.job_id)
            return result
        run.keep = _judge(run, result, idle)
        return result

    async def after(self, run: JobRun, result: JobResult) -> None:
        if run.keep is None or run.keep.closed or run.number != 1:
            return
        held = run.stack.pop_all()  # the session owns the lease (and slot) from now on
        task = asyncio.get_running_loop().create_task(self._hold(run, held), name=f"session-{run.job_id}")
        self.sessions[run.job_id] = task

    async def _hold(self, run: JobRun, held: AsyncExitStack) -> None:
        """Wait for follow-ups and run them, until the idle time passes or a run ends the session."""
        store = self.services.store
        assert store is not None and self.pipeline is not None
        job_id = run.job_id
        try:
            with bind(job_id=job_id, attempt=run.attempt):
                while run.keep is not None and not run.keep.closed:
                    follow = await self._next(store, run)
                    if follow is None or follow.close:
                        log.info("job %s: session closed%s", job_id, " by a cancel" if follow else "")
                        return
                    run.number, run.task = follow.run, follow.task
                    log.info("job %s: follow-up run %s", job_id, follow.run)
                    await self.pipeline.follow_up(run)
                    if not run.recorded:
                        run.keep = Keep(closed="the run no longer owned the job")
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(store.end_session(job_id, run.attempt, "its worker stopped"))
            raise
        except Exception:
            log.exception("job %s: its kept session failed; closing it", job_id)
            with contextlib.suppress(Exception):
                await store.end_session(job_id, run.attempt, "its worker failed to keep it")
        finally:
            self.sessions.pop(job_id, None)
            self.idle.pop(job_id, None)
            await held.aclose()

    async def _next(self, store: JobStore, run: JobRun) -> FollowUp | None:
        """Block on the job's follow-up list until one comes, or close the session once idle too long."""
        assert run.keep is not None and run.keep.until is not None
        self.idle[run.job_id] = run
        try:
            while True:
                remaining = run.keep.until - time.time()
                if remaining <= 0:
                    idle = run.spec.options.keep_session or 0
                    if await store.end_session(run.job_id, run.attempt, f"no follow-up came within {idle:g}s"):
                        return None
                    remaining = 1.0  # a follow-up was accepted just in time: it is in the list
                follow = await store.next_follow_up(run.job_id, remaining)
                if follow is not None:
                    return follow
        finally:
            self.idle.pop(run.job_id, None)

    async def beat(self) -> None:
        """Refresh the heartbeat of every idle session this process holds, in one round trip."""
        if self.idle and self.services.store is not None:
            await self.services.store.session_beats([JobAttempt(r.job_id, r.attempt) for r in self.idle.values()])

    def report(self) -> dict[str, int]:
        return {"sessions": len(self.sessions)}  # kept for follow-ups (each holds a browser context)

    async def stop(self) -> None:
        """At shutdown: close every kept session (their follow-ups are refused from now on)."""
        await cancel_and_wait(list(self.sessions.values()), "kept session")


def _judge(run: JobRun, result: JobResult, idle: float) -> Keep:
    """Whether the session stays open after ``result``, and until when."""
    if result.status is JobStatus.cancelled:
        return Keep(closed="the job was cancelled")
    if result.category in SESSION_ENDERS or run.session is None or not run.session.usable:
        return Keep(closed=f"the run ended {result.category}: its browser cannot be kept")
    return Keep(until=time.time() + float(idle))
