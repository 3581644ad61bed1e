"""``run_job``: one job on one lease, from spec to ``JobResult``. It never raises for the job's own
failures: they become a failed (or cancelled) result with a category."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cdp
from cdp.egress import NetworkPolicy
from config import Settings, get_settings
from workers.agent.artifacts import ArtifactRecorder
from workers.agent.browser import AgentBrowser
from workers.agent.cancel import CancelToken
from workers.agent.context import JobContext
from workers.agent.errors import (
    ActionError,
    AgentError,
    Cancelled,
    EgressUnavailable,
    InvalidOutput,
    JobTimeout,
    ProxyFailed,
    ResourceLimit,
)
from workers.agent.events import Actor, Events, ExecutionState, OnEvent
from workers.agent.emulation import PageSettings
from workers.agent.executor import Options, agent_history, run_agent
from workers.agent.firewall import RESOURCE_TYPES, Firewall, JobEgress, UrlPolicy
from workers.agent.horizon import horizon_history, run_rolling_horizon
from workers.agent.llm import Llms
from workers.agent.messages import MessageManager
from workers.agent.pacing import NavigationGate, OpenGate
from workers.agent.pause import PauseGate
from workers.agent.profiles import JobProfiles, ProfileIO, ProfileUnavailable
from workers.agent.recorder import OnStep, StepLog
from workers.agent.replay import run_replay
from workers.agent.script import run_script
from workers.agent.secrets import Secrets
from workers.agent.telemetry import SILENT, Telemetry
from workers.jobs.artifacts.store import JobArtifacts
from workers.jobs.errors import JobsError
from workers.jobs.model.result import JobResult, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.recipes.models import ReplayPlan
from workers.jobs.secrets.sealing import open_secrets, proxy_password
from workers.jobs.specs.output import validate

log = logging.getLogger("browserd.agent")


async def run_job(
    spec: JobSpec,
    lease: cdp.Lease,
    *,
    settings: Settings | None = None,
    on_step: OnStep | None = None,
    is_cancelled: Callable[[], bool] | None = None,
    llms: Llms | None = None,
    on_event: OnEvent | None = None,
    telemetry: Telemetry = SILENT,
    downloads_dir: Path | None = None,
    secrets: Mapping[str, str] | None = None,
    is_paused: Callable[[], bool] | None = None,
    navigation_gate: NavigationGate | None = None,
    profiles: ProfileIO | None = None,
    artifacts: JobArtifacts | None = None,
    replay: ReplayPlan | None = None,
) -> JobResult:
    """Run a task with the agent, or a script with no LLM, in ``lease``.

    ``on_step`` gets each step's record as it completes; ``on_event`` each of Nanobrowser's
    execution events (``AgentEvent``), from ``task.start`` to ``task.ok``/``task.fail``/``task.cancel``;
    ``telemetry`` hears what the agent measures (LLM calls, DOM captures). Files the job downloads
    are saved in ``downloads_dir`` (the caller keeps them); without one, in a temporary folder
    removed when the job ends (the result still lists them). ``secrets`` are the values the job
    may type (a worker opens them; by default the spec's own, in clear or sealed). While
    ``is_paused()`` is true the agent waits between steps (``pause``). ``profiles``
    loads the job's auth profile and saves its end state (a job naming one fails without it).
    ``navigation_gate`` is asked before each navigation the agent starts (politeness: it may wait,
    or refuse with ``URLBlocked``); by default every navigation goes at once. With an
    ``artifacts`` folder, the job keeps there what ``spec.artifacts`` asks for, its downloads
    among them, and its result and steps link to them. ``replay`` is the recipe a recipe job
    replays (``spec.recipe``; the worker loads it), with the job's parameters.
    """
    session = JobSession(spec, lease, settings=settings, is_cancelled=is_cancelled, is_paused=is_paused, llms=llms,
                         telemetry=telemetry, downloads_dir=downloads_dir, secrets=secrets,
                         around=Around(navigation_gate, profiles, artifacts), replay=replay)
    try:
        return await session.run(on_step=on_step, on_event=on_event)
    finally:
        await session.close()


@dataclass
class Around:
    """What the worker puts around a job's browser: the politeness gate its navigations ask, the
    auth profile it starts from and saves to, and the artifact folder it keeps its files in."""

    navigation_gate: NavigationGate | None = None
    profiles: ProfileIO | None = None
    artifacts: JobArtifacts | None = None


class JobSession:
    """One job's browser context, models and history, from its own task through its follow-ups
    (Nanobrowser's ``addFollowUpTask``): ``run()`` runs the spec's task, ``run(task)`` then runs a
    follow-up in the same context with the same history (the models see what came before); each run
    has its own steps, events and result. ``close()`` removes what the session kept on disk."""

    def __init__(self, spec: JobSpec, lease: cdp.Lease, *, settings: Settings | None = None,
                 is_cancelled: Callable[[], bool] | None = None, is_paused: Callable[[], bool] | None = None,
                 llms: Llms | None = None, telemetry: Telemetry = SILENT, downloads_dir: Path | None = None,
                 secrets: Mapping[str, str] | None = None, around: Around | None = None,
                 replay: ReplayPlan | None = None) -> None:
        self.spec = spec if replay is None else replay_spec(spec, replay)
        self.lease, self.replay = lease, replay
        self.settings = settings or get_settings()
        self.cancel = CancelToken(is_cancelled)
        self.pause = PauseGate(is_paused, max_seconds=self.settings.pause_max_seconds)
        self.llms, self.telemetry = llms, telemetry
        self.hidden = Secrets(open_secrets(self.spec, self.settings) if secrets is None else secrets)
        self.folder = downloads_dir or Path(tempfile.mkdtemp(prefix="browserd-downloads-"))
        self._own_folder = downloads_dir is None
        self.around = around or Around()
        self.recorder = ArtifactRecorder(self.around.artifacts, self.spec.artifacts, self.settings, self.hidden)
        self.profiles: JobProfiles | None = None
        self.ctx: JobContext | None = None
        self.history: MessageManager | None = None
        self.runs = 0

    @property
    def usable(self) -> bool:
        """Whether a follow-up can run: the context was prepared and the lease was not stopped."""
        return self.ctx is not None and self.lease.stopped is None

    async def run(self, task: str | None = None, *, waited: float = 0.0, on_step: OnStep | None = None,
                  on_event: OnEvent | None = None) -> JobResult:
        """The spec's task on the first call; a follow-up ``task`` on later ones. ``waited`` seconds
        the worker spent on the job before this run (for a politeness slot, for a browser) count
        against its time limit. Never raises for the run's own failures: they are a failed (or
        cancelled) result with a category."""
        if self.runs and (task is None or not self.usable):
            raise RuntimeError("a follow-up needs a task and a session whose first run prepared its browser")
        self.runs += 1
        self.recorder.begin_run(self.runs)
        started_at, started = datetime.now(UTC), time.monotonic()
        steps = StepLog(_screenshots_then(self.recorder, on_step), self.hidden)
        events = _events(self.spec, self.settings, on_event)
        if self.ctx is not None and task is not None:
            self.ctx.next_run(task, events)
        await events.emit(Actor.system, ExecutionState.TASK_START, task or _start_details(self.spec, self.replay))
        limit = self.spec.timeout or self.settings.job_timeout
        lease = self.lease
        try:
            async with asyncio.timeout(limit - waited) as deadline:
                self.pause.deadline = deadline
                try:
                    ctx = self.ctx or await self._prepare(events)
                    replay = self.replay if self.runs == 1 else None  # a follow-up is the agent's
                    await _run(ctx, steps, self._history(ctx, task), replay)
                    await ctx.browser.page_events()  # downloads still running end (or are cancelled) now
                    result = _succeeded(self.ctx)
                    if result.status == JobStatus.succeeded and self.profiles is not None:
                        await _save_profile(self.profiles)
                except TimeoutError:
                    if deadline.expired():
                        raise JobTimeout(limit) from None
                    raise
        except TimeoutError:
            result = _failed(JobTimeout(limit))
        except AgentError as exc:
            stopped = lease.stopped is not None and not isinstance(exc, Cancelled)
            result = _failed(ResourceLimit(str(lease.stopped)) if stopped else exc)
        except cdp.CDPException as exc:
            result = _browser_failure(exc, lease)
        except Exception as exc:
            log.exception("job failed unexpectedly")
            result = JobResult(status=JobStatus.failed, category=FailureCategory.internal,
                               error=f"{type(exc).__name__}: {exc}")
        finally:
            self.pause.deadline = None
        return await self._ended(result, steps, events, started_at, started)

    async def _ended(self, result: JobResult, steps: StepLog, events: Events, started_at: datetime,
                     started: float) -> JobResult:
        """The run's result completed: answer and data found, artifacts kept, secrets scrubbed."""
        result = _blame_proxy(result, self.lease)
        ctx = self.ctx
        if ctx is not None:
            result.final_answer = result.final_answer or ctx.final_answer
            result.data = ctx.data if result.data is None else result.data
        await self.recorder.finish(result, list(self.lease.downloads.items))
        if ctx is not None:
            result.downloads = ctx.browser.downloads(self.recorder.download_links)
        result = self.hidden.scrub_model(result)  # type: ignore[assignment]  # final answer, data, error
        result.steps = steps.steps
        result.totals = steps.totals(time.monotonic() - started)
        result.started_at, result.finished_at = started_at, datetime.now(UTC)
        log.info("job %s%s: %s%s in %.2fs, %d steps", "script" if self.spec.script else "agent",
                 f" follow-up {self.runs - 1}" if self.runs > 1 else "", result.status,
                 f" ({result.category})" if result.category else "", result.totals.seconds, result.totals.steps)
        await _ended(events, result)
        return result

    async def _prepare(self, events: Events) -> JobContext:
        self.profiles = JobProfiles.of(self.spec, self.around.profiles, self.lease)
        await self.profiles.load()
        ctx = await _prepare(self.spec, self.lease, self.settings, self.cancel, self.llms, self.telemetry, self.folder,
                             self.around.navigation_gate, self.recorder, _upstream(self.spec, self.settings, self.hidden))
        ctx.events, ctx.secrets, ctx.pause, ctx.artifacts = events, self.hidden, self.pause, self.recorder
        self.ctx = ctx
        return ctx

    def _history(self, ctx: JobContext, task: str | None) -> MessageManager | None:
        """The agent's history: new on the first run, the same one (with the follow-up task) after."""
        if ctx.spec.script is not None or (self.replay is not None and self.runs == 1):
            return None
        if self.history is None:
            horizon = ctx.spec.options.strategy == "rolling_horizon"
            self.history = horizon_history(ctx) if horizon else agent_history(ctx)
        elif task is not None:
            self.history.add_follow_up(task + ctx.secrets.task_note())
        return self.history

    async def close(self) -> None:
        if self.profiles is not None:
            self.profiles.close()
        if self._own_folder:
            await asyncio.to_thread(shutil.rmtree, self.folder, True)


def _screenshots_then(recorder: ArtifactRecorder, on_step: OnStep | None) -> OnStep:
    """Each step gets its screenshot (when the job keeps them) before it is reported."""
    async def step_ended(step: StepRecord) -> None:
        await recorder.step_ended(step)
        if on_step is not None:
            await on_step(step)

    return step_ended


def replay_spec(spec: JobSpec, replay: ReplayPlan) -> JobSpec:
    """A recipe job as the agent would run it: the recipe's task and start URL with the job's
    parameters (what a healing agent works on), its output schema unless the job gives one."""
    recipe, params = replay.recipe, replay.params
    fields = spec.model_dump(exclude={"recipe", "params", "llm_extraction", "heal"}, exclude_none=True)
    fields.update(task=recipe.task_for(params), start_url=recipe.start_url_for(params) or fields.get("start_url"),
                  output_schema=spec.output_schema or recipe.output_schema, secrets=spec.secrets)
    return JobSpec.model_validate({k: v for k, v in fields.items() if v is not None})


def _start_details(spec: JobSpec, replay: ReplayPlan | None) -> str:
    if replay is not None:
        return f"replaying recipe {replay.recipe.name!r} v{replay.recipe.version}: {spec.task}"
    return spec.task or f"script of {len(spec.script or [])} actions"


def _events(spec: JobSpec, settings: Settings, listener: OnEvent | None) -> Events:
    if spec.script is not None:
        return Events(listener, len(spec.script), acting=Actor.system)
    return Events(listener, Options.for_job(spec, settings).max_steps)


async def _ended(events: Events, result: JobResult) -> None:
    """The task's last event: ok with the final answer, cancel, or fail with the category and error."""
    if result.status == JobStatus.succeeded:
        await events.emit(Actor.system, ExecutionState.TASK_OK, result.final_answer or "")
    elif result.status == JobStatus.cancelled:
        await events.emit(Actor.system, ExecutionState.TASK_CANCEL, result.error or "")
    else:
        await events.emit(Actor.system, ExecutionState.TASK_FAIL, f"{result.category}: {result.error}")


def admit_egress(lease: cdp.Lease, settings: Settings, *, allowed_domains: Sequence[str] = (),
                 denied_domains: Sequence[str] = (), allowed_networks: Sequence[str] = (),
                 upstream: cdp.UpstreamProxy | None = None) -> UrlPolicy:
    """Put the lease's gate under one job's (or session's) rule: the settings' domain lists with its
    own, and private networks closed unless the settings or ``allowed_networks`` open them. A lease
    without a gate cannot enforce that rule on workers and sockets, so it is refused. ``upstream``
    is the job's own proxy, which the gate dials through (the rule still judges each destination)."""
    policy = UrlPolicy.build(job_allowed=allowed_domains, job_denied=denied_domains,
                             global_allowed=settings.allowed_domains, global_denied=settings.denied_domains)
    if lease.egress is None:
        raise EgressUnavailable()
    networks = NetworkPolicy.build(settings.allow_private_networks, [*settings.allowed_networks, *allowed_networks])
    lease.egress.admit(JobEgress(policy, networks), upstream)
    return policy


async def _prepare(spec: JobSpec, lease: cdp.Lease, settings: Settings, cancel: CancelToken,
                   llms: Llms | None, telemetry: Telemetry, downloads: Path,
                   gate: NavigationGate | None, recorder: ArtifactRecorder,
                   upstream: cdp.UpstreamProxy | None) -> JobContext:
    policy = admit_egress(lease, settings, allowed_domains=spec.allowed_domains, denied_domains=spec.denied_domains,
                          allowed_networks=spec.allowed_networks, upstream=upstream)
    expansion = spec.options.viewport_expansion
    limits = cdp.DownloadLimits(folder=downloads if settings.download_max_files else None,
                                max_bytes=settings.download_max_mb * 1024 * 1024,
                                max_files=settings.download_max_files)
    skip = frozenset(RESOURCE_TYPES[kind] for kind in spec.block_resources)
    browser = AgentBrowser(lease, Firewall(policy, gate or OpenGate(), skip), cancel,
                           viewport_expansion=settings.viewport_expansion if expansion is None else expansion,
                           telemetry=telemetry, accept_dialogs=spec.options.dialogs == "accept",
                           downloads=limits, page_settings=PageSettings.from_spec(spec))
    recorder.follow(lambda: browser.page, lambda: lease.known_pages)
    await browser.start()
    if spec.script is None and llms is None:
        llms = Llms.from_settings(settings, spec.models, spec.options.model_params)
    ctx = JobContext(spec=spec, settings=settings, browser=browser, cancel=cancel,
                     llms=llms if spec.script is None else None)
    if spec.start_url is not None:
        url = str(spec.start_url)
        try:
            await browser.goto(url)
        except ActionError as exc:
            raise ActionError(f"could not open the start URL: {exc}", action="start_url") from exc
    return ctx


async def _save_profile(profiles: JobProfiles) -> None:
    try:
        await profiles.save()
    except (cdp.CDPException, TimeoutError, ValueError, JobsError) as exc:
        raise ProfileUnavailable(f"the job succeeded but its end state could not be saved to auth profile "
                                 f"{profiles.spec.save_profile!r}: {type(exc).__name__}: {exc}") from exc
    if profiles.saved_version is not None:
        log.info("saved auth profile %r, version %s", profiles.spec.save_profile, profiles.saved_version)


def _upstream(spec: JobSpec, settings: Settings, secrets: Secrets) -> cdp.UpstreamProxy | None:
    """The job's own proxy, its password opened (it goes to the egress gate, nowhere else): its own,
    or the job's secret that ``password_secret`` names."""
    if spec.proxy is None:
        return None
    proxy = spec.proxy
    password = proxy_password(proxy, settings)
    if proxy.password_secret is not None:
        password = secrets.values.get(proxy.password_secret)
        if password is None:
            known = ", ".join(sorted(secrets.values)) or "none"
            raise ProxyFailed(f"its password_secret {proxy.password_secret!r} is not one of the job's secrets "
                              f"(they are: {known})")
    return cdp.UpstreamProxy(proxy.scheme, proxy.host, proxy.port, proxy.username, password)


async def _run(ctx: JobContext, steps: StepLog, history: MessageManager | None, replay: ReplayPlan | None) -> None:
    try:
        if replay is not None:
            await run_replay(ctx, steps, replay)
        elif ctx.spec.script is not None:
            await run_script(ctx, steps)
        elif ctx.spec.options.strategy == "rolling_horizon":
            await run_rolling_horizon(ctx, steps, history)
        else:
            await run_agent(ctx, steps, history)
    finally:  # whatever ended the job, its data is everything found
        ctx.data = ctx.findings.data(ctx.data, ctx.spec.output_schema)


def _succeeded(ctx: JobContext | None) -> JobResult:
    assert ctx is not None
    schema = ctx.spec.output_schema
    if schema is not None:
        ctx.data = _data_for_schema(ctx.data, ctx.final_answer)
        problems = schema_problems(ctx.data, schema)
        if problems:
            return _failed(InvalidOutput(problems))
    if ctx.success is False and ctx.spec.script is not None:
        return JobResult(status=JobStatus.failed, category=FailureCategory.action_error,
                         error="the script ended with done(success=false)")
    return JobResult(status=JobStatus.succeeded, final_answer=ctx.final_answer, data=ctx.data)


def _data_for_schema(data: Any, final_answer: str | None) -> Any:
    """With no extracted data, a final answer that is JSON is taken as the data."""
    if data is not None or not final_answer:
        return data
    try:
        return json.loads(final_answer)
    except ValueError:
        return None


def schema_problems(data: Any, schema: dict[str, Any]) -> list[str]:
    """What keeps ``data`` from satisfying ``schema``; with no data at all, the required fields it lacks."""
    if data is None:
        return ["$: no data was found", *(p for p in validate({}, schema) if "missing required" in p)]
    return validate(data, schema)


def _browser_failure(exc: cdp.CDPException, lease: cdp.Lease) -> JobResult:
    """A browser-level failure: the pool stopped the lease (resource_limit), or the browser or tab died."""
    if lease.stopped is not None:
        return _failed(ResourceLimit(str(lease.stopped)))
    if isinstance(exc, (cdp.BrowserGone, cdp.TargetCrashed)):
        return JobResult(status=JobStatus.failed, category=FailureCategory.browser_crash, error=str(exc))
    log.exception("job failed unexpectedly")
    return JobResult(status=JobStatus.failed, category=FailureCategory.internal, error=f"{type(exc).__name__}: {exc}")


def _blame_proxy(result: JobResult, lease: cdp.Lease) -> JobResult:
    """A job that failed after its own proxy failed failed because of it (whatever step noticed)."""
    failure = lease.egress.upstream_failure if lease.egress is not None else None
    if result.status != JobStatus.failed or failure is None or result.category == FailureCategory.proxy_error:
        return result
    return _failed(ProxyFailed(failure))


def _failed(exc: AgentError) -> JobResult:
    if isinstance(exc, Cancelled):
        return JobResult(status=JobStatus.cancelled, error=str(exc))
    return JobResult(status=JobStatus.failed, category=exc.category, error=str(exc))
