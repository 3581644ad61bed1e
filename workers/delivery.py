"""One delivery of one job (a Celery message): claim it, run it in its own lease, record how it ended.

The claim (``JobStore.start``) decides whether this delivery runs at all: a job that already
finished, was cancelled while queued, or is still running elsewhere is left alone, and a job whose
earlier workers were lost too often fails as ``worker_lost`` instead of running again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

import cdp
from config import Settings, bind, note
from workers.agent import AgentEvent, Around, JobSession, ProfileIO
from workers.instrument import PrometheusTelemetry
from workers.jobs.artifacts.offload import offload
from workers.jobs.artifacts.store import ArtifactStore, JobArtifacts
from workers.jobs.lifecycle.finishing import Finisher
from workers.jobs.metrics import observe_step
from workers.jobs.model.record import AGENT_EVENT
from workers.jobs.model.result import JobResult, RunRecord, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.politeness.domains import job_domain
from workers.jobs.politeness.options import limits_for
from workers.jobs.politeness.slots import SlotWaitCancelled, SlotWaitExpired
from workers.jobs.profiles.models import ProfileMissing, StorageState
from workers.jobs.profiles.store import ProfileStore
from workers.jobs.secrets.credentials import CredentialStore
from workers.jobs.secrets.sealing import SecretsUnavailable, open_secrets
from workers.jobs.store.jobs import FollowUp, JobStore
from workers.jobs.store.outcomes import Claim
from workers.politeness import Politeness
from workers.recipes import RecipeRun, Recipes, RecipeUnavailable
from workers.screencast import LiveView

log = logging.getLogger("browserd.worker")

SOFT_LIMIT_SLACK = 4.5  # seconds past the job's own timeout (its artifacts are taken then), below the hard limit
RECORD_PATIENCE = 60.0  # seconds a result write keeps retrying while Redis is away


@dataclass(frozen=True)
class Delivered:
    """What one delivery did: the claim's ``outcome`` (``run`` once it ran the job) and, when this
    delivery finished the job, its final ``status``."""

    outcome: str
    status: JobStatus | None = None


@dataclass
class Run:
    """A job this process is running: what the ticker heartbeats and checks for a cancel."""

    job_id: str
    attempt: int
    cancelled: bool = False
    paused: bool = False
    started: float = field(default_factory=time.monotonic)


SESSION_ENDERS = frozenset({FailureCategory.browser_crash, FailureCategory.resource_limit, FailureCategory.internal})
"""A run that failed this way leaves no browser worth keeping for a follow-up."""


@dataclass
class Held:
    """A job's browser session kept for follow-ups (``options.keep_session``): its lease and agent
    stay open in ``stack`` until ``until`` (epoch seconds) passes with no follow-up."""

    run: Run
    spec: JobSpec
    session: JobSession
    stack: AsyncExitStack
    task: str
    number: int = 1
    until: float = 0.0
    closed: str | None = None  # why the session is not kept past this run

    def record(self, result: JobResult) -> RunRecord:
        return RunRecord(run=self.number, task=self.task, state=result.status, category=result.category,
                         error=result.error, started_at=result.started_at, finished_at=result.finished_at,
                         result=result)

    def judge(self, result: JobResult) -> None:
        """Whether the session stays open after ``result``: ``until``, or ``closed`` says why not."""
        if result.status is JobStatus.cancelled:
            self.closed = "the job was cancelled"
        elif result.category in SESSION_ENDERS or not self.session.usable:
            self.closed = f"the run ended {result.category}: its browser cannot be kept"
        else:
            self.until = time.time() + float(self.spec.options.keep_session or 0)


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


class Deliveries:
    """Handles job deliveries on the worker's event loop, against its pool and store.

    (The agent's own loop is ``workers.agent.executor``; this is the queue's side of a job.)
    """

    def __init__(self, store: JobStore, pool: cdp.BrowserPool, settings: Settings, worker_id: str,
                 stale_after: float) -> None:
        self.store = store
        self.pool = pool
        self.settings = settings
        self.worker_id = worker_id
        self.stale_after = stale_after
        self.runs: dict[str, Run] = {}
        self.sessions: dict[str, asyncio.Task[None]] = {}  # kept sessions waiting for (or running) follow-ups
        self._idle: dict[str, Run] = {}  # the runs of kept sessions waiting for a follow-up
        self._background: set[asyncio.Task[Any]] = set()
        self.finisher = Finisher(store)
        self.telemetry = PrometheusTelemetry()
        self.politeness = Politeness(store, settings, lease=stale_after)
        self.artifacts = ArtifactStore.from_settings(settings)
        self.recipes = Recipes(store, settings)

    async def deliver(self, job_id: str) -> Delivered:
        """Handle one delivery; says whether it ran the job and how the job stands now."""
        with bind(job_id=job_id):
            return await self._deliver(job_id)

    async def _deliver(self, job_id: str) -> Delivered:
        claim: Claim = await self.store.start(
            job_id, worker=self.worker_id, max_attempts=self.settings.max_attempts, stale_after=self.stale_after
        )
        note(attempt=claim.attempt)
        if claim.outcome != "run":
            log.info("job %s not run: %s (attempts=%s)", job_id, claim.outcome, claim.attempt)
            if claim.outcome in ("cancelled", "lost"):  # this delivery made it final
                await self.finisher.finished(job_id)
                return Delivered(claim.outcome, JobStatus.cancelled if claim.outcome == "cancelled" else JobStatus.failed)
            if claim.outcome == "finished":  # a redelivery: what the finishing process owed may be unsent
                await self.finisher.settle(job_id)
            return Delivered(claim.outcome)
        run = Run(job_id, claim.attempt)
        self.runs[job_id] = run
        held: Held | None = None
        try:
            result, held = await self._run(run)
            result = await self._offloaded(run.job_id, self._within_limits(result))
            if held is not None:
                held.judge(result)
            if await self._record(run, result, held):
                await self.finisher.finished(job_id, result)
                held = self._keep(held)
            else:
                log.warning("job %s attempt %s finished but no longer owned the job", job_id, run.attempt)
                await self.finisher.settle(job_id)
        finally:
            self.runs.pop(job_id, None)
            if held is not None:  # not kept: close its lease now
                await held.stack.aclose()
        log.info("job %s attempt %s: %s %s", job_id, run.attempt, result.status.value, result.category or "")
        return Delivered("run", result.status)

    async def _record(self, run: Run, result: JobResult, held: Held | None = None) -> bool:
        """Record the result, riding out a Redis restart: retried with backoff for ``RECORD_PATIENCE``
        seconds (the client itself retries each command briefly); then the error escapes, and the
        reconciler runs the job again once its heartbeat is stale."""
        delay, deadline = 0.5, time.monotonic() + RECORD_PATIENCE
        while True:
            try:
                if held is None:
                    return await self.store.finish(run.job_id, run.attempt, result)
                return await self.store.finish(run.job_id, run.attempt, result, run=held.record(result),
                                               session_until=None if held.closed else held.until,
                                               session_closed=held.closed)
            except (RedisConnectionError, RedisTimeoutError) as exc:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning("job %s: recording its result failed (%s); retrying in %.1fs", run.job_id, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _offloaded(self, job_id: str, result: JobResult, run: int = 1) -> JobResult:
        """Final answer, data and steps above ``BROWSERD_ARTIFACT_INLINE_BYTES`` go to the artifact
        store (run ``run``'s own file), so the Redis record stays small; if the store cannot take
        them, the record keeps them."""
        try:
            return await asyncio.to_thread(offload, result, self.artifacts.job(job_id),
                                           self.settings.artifact_inline_bytes, run)
        except Exception as exc:
            log.warning("job %s: large result kept in the record (artifact store: %s: %s)", job_id,
                        type(exc).__name__, exc)
            return result

    def _within_limits(self, result: JobResult) -> JobResult:
        """A result larger than ``BROWSERD_MAX_RESULT_BYTES`` is refused (the artifact store takes
        results above ``BROWSERD_ARTIFACT_INLINE_BYTES``, up to this bound, off the record)."""
        size = len(result.model_dump_json())
        limit = self.settings.max_result_bytes
        if size <= limit:
            return result
        return failed(FailureCategory.invalid_output,
                      f"the result is {size} bytes, above the limit of {limit} (BROWSERD_MAX_RESULT_BYTES)",
                      result.started_at)

    async def _run(self, run: Run) -> tuple[JobResult, Held | None]:
        """The job's first run; with ``keep_session``, also its session, still open (the caller
        keeps it or closes it)."""
        started = datetime.now(UTC)
        record = await self.store.get(run.job_id)
        if record is None or record.spec is None:
            return failed(FailureCategory.internal, "the job record vanished before it could run", started), None
        spec = record.spec
        try:
            secrets = await self._secrets(spec)
            profiles = await self._profiles(spec)
        except (SecretsUnavailable, ProfileMissing) as exc:
            return failed(FailureCategory.internal, str(exc), started), None
        try:
            recipe = await self.recipes.before(spec)
        except RecipeUnavailable as exc:
            return failed(FailureCategory.action_error, str(exc), started), None
        result, held = await self._opened(run, spec, secrets, profiles, recipe, started)
        await self.recipes.after(run.job_id, spec, recipe, result)
        return result, held

    async def _opened(self, run: Run, spec: JobSpec, secrets: dict[str, str], profiles: ProfileIO,
                      recipe: RecipeRun, started: datetime) -> tuple[JobResult, Held | None]:
        """The job's slot on its domain and its lease, then its first run in a new session."""
        limits = limits_for(spec.politeness, self.settings, refuse=False)
        domain = job_domain(recipe.start_url(spec), spec.script)
        stack = AsyncExitStack()
        limit = soft_limit(spec, self.settings)
        began = time.monotonic()
        try:
            try:
                async with asyncio.timeout(limit):
                    await stack.enter_async_context(self.politeness.slot(
                        run.job_id, run.attempt, domain, limits, min(self.settings.politeness_max_wait, limit),
                        lambda: run.cancelled))
                    lease = await stack.enter_async_context(self.pool.lease())
            except TimeoutError:
                await stack.aclose()
                return failed(FailureCategory.timeout, f"no browser was free within the job's {limit:g}s limit",
                              started), None
            except SlotWaitExpired as exc:
                await stack.aclose()
                return failed(FailureCategory.timeout, str(exc), started), None
            except SlotWaitCancelled as exc:
                await stack.aclose()
                return JobResult(status=JobStatus.cancelled, error=str(exc), started_at=started,
                                 finished_at=datetime.now(UTC)), None
            # the waits for a politeness slot and a browser count against the job's limit, so that
            # waiting and running together stay within it (and the hard limit behind it)
            waited = time.monotonic() - began
            around = Around(self.politeness.gate(run.job_id, run.attempt, limits, lease.egress), profiles,
                            await self._artifacts(run))
            session = JobSession(spec, lease, settings=self.settings, is_cancelled=lambda: run.cancelled,
                                 is_paused=lambda: run.paused, telemetry=self.telemetry, secrets=secrets,
                                 around=around, replay=recipe.plan)
            stack.push_async_callback(session.close)
            probe = FirstCommandProbe(lease.page.session, lambda at: self._record_first_command(run, at))
            try:
                result = await self._bounded(run, session, None, waited)
            finally:
                probe.restore()
        except BaseException:
            await stack.aclose()
            raise
        if spec.options.keep_session is None:
            await stack.aclose()
            return result, None
        return result, Held(run, spec, session, stack, task=spec.task or "")

    async def _bounded(self, run: Run, session: JobSession, task: str | None, waited: float = 0.0) -> JobResult:
        """One run of the session (its own task, or a follow-up ``task``) under the backstop limit;
        ``waited`` seconds spent before it count against the limit."""
        started = datetime.now(UTC)
        limit = soft_limit(session.spec, self.settings)
        try:
            # the session applies the soft limit itself and reports its steps; this is the backstop
            # for the lease and anything around it.
            async with asyncio.timeout(limit - waited + SOFT_LIMIT_SLACK):
                return await self._in_lease(run, session, task, waited)
        except TimeoutError:
            return failed(FailureCategory.timeout, f"the job exceeded its {limit:g}s limit", started)
        except (cdp.BrowserGone, cdp.TargetCrashed) as exc:
            return failed(FailureCategory.browser_crash, f"the browser failed: {exc}", started)
        except Exception as exc:  # a bug must fail the job, not leave it "running" until redelivery
            log.exception("job %s crashed", run.job_id)
            return failed(FailureCategory.internal, f"internal error: {type(exc).__name__}: {exc}", started)

    async def _secrets(self, spec: JobSpec) -> dict[str, str]:
        """The values the job may type: its credential set's, then its own (opened with the key)."""
        stored = None
        if spec.credentials:
            stored = await CredentialStore(self.store.redis, self.settings, self.store.keys).values(spec.credentials)
            if stored is None:
                raise SecretsUnavailable(f"the credential set {spec.credentials!r} does not exist (deleted after "
                                         "the job was submitted?)")
        return open_secrets(spec, self.settings, stored)

    async def _profiles(self, spec: JobSpec) -> ProfileIO:
        """The job's auth profile, opened, and where its end state goes (``workers.jobs.profiles``)."""
        store = ProfileStore(self.store.redis, self.settings, self.store.keys)
        io = ProfileIO()
        if spec.profile:
            io.start = await store.state(spec.profile)
        if spec.save_profile:
            name = spec.save_profile

            async def save(state: StorageState) -> int:
                return (await store.put(name, state)).version

            io.save = save
        return io

    async def _artifacts(self, run: Run) -> JobArtifacts:
        """The job's artifact folder; a redelivered job's starts empty."""
        folder = self.artifacts.job(run.job_id)
        if run.attempt > 1:  # what a lost attempt left would pose as this one's
            try:
                await asyncio.to_thread(folder.delete)
            except Exception as exc:
                log.warning("job %s: artifacts of an earlier attempt not cleared: %s: %s", run.job_id,
                            type(exc).__name__, exc)
        return folder

    async def _in_lease(self, run: Run, session: JobSession, task: str | None, waited: float) -> JobResult:
        async def on_step(step: StepRecord) -> None:
            observe_step(step)
            await self.store.progress(run.job_id, run.attempt, step=step)

        async def on_event(event: AgentEvent) -> None:
            await self.store.event(run.job_id, run.attempt, AGENT_EVENT, event.model_dump_json())

        async with LiveView(self.store, run.job_id, lambda: session.lease.page):  # streams only while watched
            return await session.run(task, waited=waited, on_step=on_step, on_event=on_event)

    # --- kept sessions (options.keep_session) ------------------------------------------------------

    def _keep(self, held: Held | None) -> Held | None:
        """Hand a session that stays open to a task of its own (it owns the lease from now on);
        returns what the caller must still close: a session not kept, else None."""
        if held is None or held.closed:
            return held
        task = asyncio.get_running_loop().create_task(self._hold(held), name=f"session-{held.run.job_id}")
        self.sessions[held.run.job_id] = task
        return None

    async def _hold(self, held: Held) -> None:
        """Wait for follow-ups and run them, until the idle time passes or a run ends the session."""
        job_id = held.run.job_id
        try:
            with bind(job_id=job_id, attempt=held.run.attempt):
                while not held.closed:
                    follow = await self._next_follow_up(held)
                    if follow is None or follow.close:
                        log.info("job %s: session closed%s", job_id, " by a cancel" if follow else "")
                        return
                    await self._follow_up(held, follow)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.store.end_session(job_id, held.run.attempt, "its worker stopped"))
            raise
        except Exception:
            log.exception("job %s: its kept session failed; closing it", job_id)
            with contextlib.suppress(Exception):
                await self.store.end_session(job_id, held.run.attempt, "its worker failed to keep it")
        finally:
            self.sessions.pop(job_id, None)
            self._idle.pop(job_id, None)
            await held.stack.aclose()

    async def _next_follow_up(self, held: Held) -> FollowUp | None:
        """Block on the job's follow-up list until one comes, or close the session once idle too long."""
        run = held.run
        self._idle[run.job_id] = run
        try:
            while True:
                remaining = held.until - time.time()
                if remaining <= 0:
                    idle = held.spec.options.keep_session or 0
                    if await self.store.end_session(run.job_id, run.attempt, f"no follow-up came within {idle:g}s"):
                        return None
                    remaining = 1.0  # a follow-up was accepted just in time: it is in the list
                follow = await self.store.next_follow_up(run.job_id, remaining)
                if follow is not None:
                    return follow
        finally:
            self._idle.pop(run.job_id, None)

    async def _follow_up(self, held: Held, follow: FollowUp) -> None:
        """Run one follow-up in the kept session, as run ``follow.run`` of the same attempt."""
        run = held.run
        run.cancelled = run.paused = False
        held.number, held.task = follow.run, follow.task
        self.runs[run.job_id] = run
        log.info("job %s: follow-up run %s", run.job_id, follow.run)
        try:
            result = await self._offloaded(run.job_id, self._within_limits(
                await self._bounded(run, held.session, follow.task)), held.session.runs)
            held.judge(result)
            if await self._record(run, result, held):
                await self.finisher.finished(run.job_id, result)
            else:
                held.closed = "the run no longer owned the job"
        finally:
            self.runs.pop(run.job_id, None)

    async def close_sessions(self) -> None:
        """At shutdown: close every kept session (their follow-ups are refused from now on)."""
        tasks = list(self.sessions.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    def _record_first_command(self, run: Run, at: float) -> None:
        task = asyncio.get_running_loop().create_task(self.store.progress(run.job_id, run.attempt, first_command_at=at))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def abandon(self, job_id: str, reason: str) -> None:
        """Give up on a run that outlived its hard limit: stop heartbeating it and fail it."""
        run = self.runs.pop(job_id, None)
        result = failed(FailureCategory.timeout, reason)
        if run is not None and await self._record(run, result):
            await self.finisher.finished(job_id, result)

    async def heartbeat(self) -> None:
        """Refresh every running job's heartbeat in one round trip, every idle kept session's, and the
        politeness slots they hold."""
        if self.runs:
            await self.store.heartbeat_many([(r.job_id, r.attempt) for r in self.runs.values()])
        if self._idle:
            await self.store.session_beats([(r.job_id, r.attempt) for r in self._idle.values()])
        await self.politeness.renew()

    async def check_cancels(self) -> None:
        """Pick up cancel and pause requests for the running jobs in one round trip."""
        for job_id, flags in (await self.store.run_flags(list(self.runs))).items():
            run = self.runs.get(job_id)
            if run is None:
                continue
            if flags.cancel and not run.cancelled:
                log.info("job %s: cancel requested", job_id)
                run.cancelled = True
            if flags.pause != run.paused:
                log.info("job %s: %s", job_id, "pause requested" if flags.pause else "resume requested")
                run.paused = flags.pause
