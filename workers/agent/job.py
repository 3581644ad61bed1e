"""``JobSession``: the agent's side of one job, from its own task through its follow-ups.

The pipeline (``workers.pipeline``) is the only thing that builds one: it claims the job, lets
its features prepare what the job names (secrets, an auth profile, a recipe, a politeness gate,
an artifact folder), leases a browser context, and hands all of it over as ``JobInputs``. The
session then runs the job's task (an agent, a script with no LLM, or a recipe replayed) in that
context and turns however it ended into a ``JobResult``: a failure is never raised, it is a failed
(or cancelled) result whose category the failure table (``workers.agent.failures``) decides.

A job that keeps its session (Nanobrowser's ``addFollowUpTask``) calls ``run`` again with a
follow-up task: same context, same history (the models see what came before); each run has its
own steps, events and result.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cdp
from config import scrub_with
from workers.agent.allowance import LlmAllowance, use_allowance
from workers.agent.artifacts import ArtifactRecorder
from workers.agent.browser import AgentBrowser
from workers.agent.cancel import CancelToken
from workers.agent.config import AgentConfig
from workers.agent.context import JobContext
from workers.agent.emulation import PageSettings
from workers.agent.errors import ActionError, InvalidOutput, JobTimeout, ProxyFailed
from workers.agent.events import Actor, Events, ExecutionState, OnEvent
from workers.agent.executor import Options, agent_history, run_agent
from workers.agent.failures import blame_proxy, failure
from workers.agent.firewall import RESOURCE_TYPES, Firewall, admit_egress
from workers.agent.human import HumanGate, HumanLink
from workers.agent.horizon import horizon_history, run_rolling_horizon
from workers.agent.llm import Llms
from workers.agent.messages import MessageManager
from workers.agent.pacing import NavigationGate, OpenGate
from workers.agent.pause import PauseGate
from workers.agent.profiles import JobProfiles, ProfileIO, ProfileUnavailable
from workers.agent.proxies import ProxyRotation
from workers.agent.recorder import OnStep, StepLog
from workers.agent.replay import run_replay
from workers.agent.script import run_script
from workers.agent.secrets import Secrets
from workers.agent.telemetry import SILENT, Telemetry
from workers.agent.unchanged import UnchangedCheck, reuse_unchanged
from workers.agent.uploads import Uploads
from workers.jobs.artifacts.store import JobArtifacts
from workers.jobs.budget import TimeBudget
from workers.jobs.errors import JobsError
from workers.jobs.model.result import JobResult, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.recipes.models import ReplayPlan
from workers.jobs.secrets.sealing import proxy_password
from workers.jobs.specs.output import check_output

log = logging.getLogger("browserd.agent")


@dataclass
class JobInputs:
    """What the pipeline hands the agent for one job.

    ``spec`` is the job as it runs (a recipe job's is the recipe's task, ``replay_spec``); ``config``
    what the agent reads of the settings (made once per process); ``lease`` the browser context the
    pipeline leased for it.
    ``is_cancelled`` and ``is_paused`` read the owner's flags (the agent checks them between steps
    and races them against anything slow). The rest is what the pipeline's features prepared: the
    values the job may type (``secrets``: its own and its credential set's, opened; ``totp``: the seeds
    of its second factors), the gate its
    navigations ask (politeness), its auth profile, the artifact folder it keeps files in, the
    recipe it replays, and the last run's read of its page (``unchanged``: a scheduled job's).
    """

    spec: JobSpec
    config: AgentConfig
    lease: cdp.Lease | None = None  # the pipeline's, once it holds one
    is_cancelled: Callable[[], bool] | None = None
    is_paused: Callable[[], bool] | None = None
    telemetry: Telemetry = SILENT
    secrets: Mapping[str, str] = field(default_factory=dict)
    totp: Mapping[str, str] = field(default_factory=dict)  # second factors: name -> base32 seed
    secret_domains: Mapping[str, Sequence[str]] = field(default_factory=dict)  # name -> where it may be typed
    files: Mapping[str, bytes] = field(default_factory=dict)  # input files upload_file may set: name -> content
    navigation_gate: NavigationGate | None = None
    profiles: ProfileIO | None = None
    artifacts: JobArtifacts | None = None
    replay: ReplayPlan | None = None
    proxies: ProxyRotation | None = None  # the job's proxy pool (proxy_pool), instead of its own proxy
    unchanged: UnchangedCheck | None = None  # a scheduled job's last read of its page (incremental runs)
    tenant: str | None = None  # a tenant's job opens only its own allowed_networks (``admit_egress``)
    human: HumanLink | None = None  # a job that may ask a human (options.allow_human): the pipeline's link


class JobSession:
    """One job's browser context, models and history: ``run(budget)`` runs the spec's task,
    ``run(budget, task)`` then a follow-up. ``close()`` removes what the session kept on disk."""

    def __init__(self, inputs: JobInputs) -> None:
        if inputs.lease is None:
            raise ValueError("a job session needs the lease its job runs in")
        self.inputs = inputs
        self.spec, self.lease, self.config = inputs.spec, inputs.lease, inputs.config
        self.replay = inputs.replay
        self.cancel = CancelToken(inputs.is_cancelled)
        self.pause = PauseGate(inputs.is_paused, max_seconds=self.config.pause_max_seconds)
        self.hidden = Secrets(inputs.secrets, inputs.totp, inputs.secret_domains)
        self.pause.human = HumanGate(inputs.human, self.hidden, self._url)
        self._scrub_logs()
        self.folder = Path(tempfile.mkdtemp(prefix="browserd-downloads-"))
        self.uploads: Uploads | None = None
        self.recorder = ArtifactRecorder(inputs.artifacts, self.spec.artifacts, self.config.screenshots, self.hidden)
        self.profiles: JobProfiles | None = None
        self.ctx: JobContext | None = None
        self.history: MessageManager | None = None
        self.runs = 0

    def _scrub_logs(self) -> None:
        """Every log line of the job's context, whoever writes it, is scrubbed like its records."""
        if self.hidden or self.inputs.human is not None:  # a human may push values later
            scrub_with(self.hidden.scrub)

    async def _url(self) -> str:
        """The URL of the job's tab now, scrubbed (told to the agent after a human handed it back)."""
        return self.hidden.scrub(await self.ctx.browser.page.url()) if self.ctx is not None else ""

    @property
    def usable(self) -> bool:
        """Whether a follow-up can run: the context was prepared and the lease was not stopped."""
        return self.ctx is not None and self.lease.stopped is None

    async def run(self, budget: TimeBudget, task: str | None = None, *, on_step: OnStep | None = None,
                  on_event: OnEvent | None = None) -> JobResult:
        """The spec's task on the first call; a follow-up ``task`` on later ones, within ``budget``
        (what the pipeline spent before, waiting for a slot or a browser, is spent already). Never
        raises for the run's own failures: they are a failed (or cancelled) result."""
        if self.runs and (task is None or not self.usable):
            raise RuntimeError("a follow-up needs a task and a session whose first run prepared its browser")
        self.runs += 1
        self._scrub_logs()  # a follow-up runs in its own delivery's log context
        self.recorder.begin_run(self.runs)
        started_at, started = datetime.now(UTC), time.monotonic()
        steps = StepLog(_screenshots_then(self.recorder, on_step), self.hidden)
        events = _events(self.spec, self.config, on_event)
        if self.ctx is not None and task is not None:
            self.ctx.next_run(task, events)
        await events.emit(Actor.system, ExecutionState.TASK_START, task or _start_details(self.spec, self.replay))
        deadline = budget.until_deadline()
        try:
            async with deadline:
                self.pause.deadline = deadline
                result = await self._run(events, steps, task)
        except Exception as exc:  # every failure, the agent's and the browser's: the table names it
            ended = JobTimeout(budget.limit) if isinstance(exc, TimeoutError) and deadline.expired() else exc
            result = failure(ended, lease=self.lease)
        finally:
            self.pause.deadline = None
        return await self._ended(result, steps, events, started_at, started)

    async def _run(self, events: Events, steps: StepLog, task: str | None) -> JobResult:
        ctx = self.ctx or await self._prepare(events)
        check = self.inputs.unchanged if self.runs == 1 and self.replay is None else None
        if check is not None and await reuse_unchanged(ctx, steps, check):
            return await _succeeded(ctx)  # the page is as the last run read it: no model call
        replay = self.replay if self.runs == 1 else None  # a follow-up is the agent's
        await _run(ctx, steps, self._history(ctx, task), replay)
        await ctx.browser.page_events()  # downloads still running end (or are cancelled) now
        result = await _succeeded(ctx)
        if result.status == JobStatus.succeeded and self.profiles is not None:
            await _save_profile(self.profiles)
        return result

    async def _ended(self, result: JobResult, steps: StepLog, events: Events, started_at: datetime,
                     started: float) -> JobResult:
        """The run's result completed: answer and data found, artifacts kept, secrets scrubbed."""
        result = blame_proxy(result, self.lease)
        ctx = self.ctx
        if ctx is not None:
            result.final_answer = result.final_answer or ctx.final_answer
            result.data = ctx.data if result.data is None else result.data
            result.verification = result.verification or ctx.verification
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
        inputs = self.inputs
        self.profiles = JobProfiles.of(self.spec, inputs.profiles, self.lease)
        await self.profiles.load()
        ctx = await _open(self, self._upstream())
        ctx.events, ctx.secrets, ctx.pause, ctx.artifacts = events, self.hidden, self.pause, self.recorder
        ctx.proxies = inputs.proxies
        if inputs.files:
            self.uploads = await asyncio.to_thread(Uploads.write, inputs.files, self.lease.downloads.owner)
            ctx.uploads = self.uploads
        self.ctx = ctx
        return ctx

    def _upstream(self) -> cdp.UpstreamProxy | None:
        """The job's own proxy, its password opened (it goes to the egress gate, nowhere else): its
        own, or the job's secret that ``password_secret`` names."""
        if self.inputs.proxies is not None:
            return self.inputs.proxies.first()
        proxy = self.spec.proxy
        if proxy is None:
            return None
        password = proxy_password(proxy, self.config)
        if proxy.password_secret is not None:
            password = self.hidden.values.get(proxy.password_secret)
            if password is None:
                known = ", ".join(sorted(self.hidden.values)) or "none"
                raise ProxyFailed(f"its password_secret {proxy.password_secret!r} is not one of the job's secrets "
                                  f"(they are: {known})")
        return cdp.UpstreamProxy(proxy.scheme, proxy.host, proxy.port, proxy.username, password)

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
        await asyncio.to_thread(shutil.rmtree, self.folder, True)
        if self.uploads is not None:
            await asyncio.to_thread(self.uploads.remove)


async def _open(session: JobSession, upstream: cdp.UpstreamProxy | None) -> JobContext:
    """The job's browser under its egress rule and firewall, opened on its start URL."""
    spec, lease, config = session.spec, session.lease, session.config
    policy = admit_egress(lease, config.egress, allowed_domains=spec.allowed_domains,
                          denied_domains=spec.denied_domains, allowed_networks=spec.allowed_networks,
                          upstream=upstream, fallback=session.inputs.proxies.replace if session.inputs.proxies else None,
                          tenant=session.inputs.tenant is not None)
    expansion = spec.options.viewport_expansion
    downloads = config.downloads
    limits = cdp.DownloadLimits(folder=session.folder if downloads.max_files else None,
                                max_bytes=downloads.max_bytes, max_files=downloads.max_files)
    skip = frozenset(RESOURCE_TYPES[kind] for kind in spec.block_resources)
    gate = session.inputs.navigation_gate or OpenGate()
    browser = AgentBrowser(lease, Firewall(policy, gate, skip), session.cancel,
                           viewport_expansion=config.defaults.viewport_expansion if expansion is None else expansion,
                           telemetry=session.inputs.telemetry, accept_dialogs=spec.options.dialogs == "accept",
                           downloads=limits, page_settings=PageSettings.from_spec(spec))
    session.recorder.follow(lambda: browser.page, lambda: lease.known_pages,
                            lambda: browser.document(config.actions.max_extract_chars))
    await browser.start()
    llms = None if spec.script is not None else Llms.from_config(config.llm, spec.models, spec.options.model_params)
    ctx = JobContext(spec=spec, config=config, browser=browser, cancel=session.cancel, llms=llms,
                     allowance=LlmAllowance.for_job(spec.options, config.llm))
    if spec.start_url is not None:
        try:
            await browser.goto(str(spec.start_url))
        except ActionError as exc:
            raise ActionError(f"could not open the start URL: {exc}", action="start_url") from exc
    return ctx


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


def _events(spec: JobSpec, config: AgentConfig, listener: OnEvent | None) -> Events:
    if spec.script is not None:
        return Events(listener, len(spec.script), acting=Actor.system)
    return Events(listener, Options.for_job(spec, config).max_steps)


async def _ended(events: Events, result: JobResult) -> None:
    """The task's last event: ok with the final answer, cancel, or fail with the category and error."""
    if result.status == JobStatus.succeeded:
        await events.emit(Actor.system, ExecutionState.TASK_OK, result.final_answer or "")
    elif result.status == JobStatus.cancelled:
        await events.emit(Actor.system, ExecutionState.TASK_CANCEL, result.error or "")
    else:
        await events.emit(Actor.system, ExecutionState.TASK_FAIL, f"{result.category}: {result.error}")


async def _save_profile(profiles: JobProfiles) -> None:
    try:
        await profiles.save()
    except (cdp.CDPException, TimeoutError, ValueError, JobsError) as exc:
        raise ProfileUnavailable(f"the job succeeded but its end state could not be saved to auth profile "
                                 f"{profiles.spec.save_profile!r}: {type(exc).__name__}: {exc}") from exc
    if profiles.saved_version is not None:
        log.info("saved auth profile %r, version %s", profiles.spec.save_profile, profiles.saved_version)


async def _run(ctx: JobContext, steps: StepLog, history: MessageManager | None, replay: ReplayPlan | None) -> None:
    try:
        with use_allowance(ctx.allowance):  # every model call of the run spends the job's budget
            await _run_kind(ctx, steps, history, replay)
    finally:  # whatever ended the job, its data is everything found
        ctx.data = ctx.findings.data(ctx.data, ctx.spec.output_schema)


async def _run_kind(ctx: JobContext, steps: StepLog, history: MessageManager | None, replay: ReplayPlan | None) -> None:
    if replay is not None:
        await run_replay(ctx, steps, replay)
    elif ctx.spec.script is not None:
        await run_script(ctx, steps)
    elif ctx.spec.options.strategy == "rolling_horizon":
        await run_rolling_horizon(ctx, steps, history)
    else:
        await run_agent(ctx, steps, history)


async def _succeeded(ctx: JobContext) -> JobResult:
    schema = ctx.spec.output_schema
    if schema is not None:
        ctx.data = _data_for_schema(ctx.data, ctx.final_answer)
        problems = await schema_problems(ctx.data, schema)
        if problems:
            return failure(InvalidOutput(problems))
    if ctx.success is False and ctx.spec.script is not None:
        return failure(ActionError("the script ended with done(success=false)"))
    return JobResult(status=JobStatus.succeeded, final_answer=ctx.final_answer, data=ctx.data)


def _data_for_schema(data: Any, final_answer: str | None) -> Any:
    """With no extracted data, a final answer that is JSON is taken as the data."""
    if data is not None or not final_answer:
        return data
    try:
        return json.loads(final_answer)
    except ValueError:
        return None


async def schema_problems(data: Any, schema: dict[str, Any]) -> list[str]:
    """What keeps ``data`` from satisfying ``schema``; with no data at all, the required fields it lacks.
    Checked off the event loop, within a deadline (``SchemaCheckExpired``: the job fails, the worker goes on)."""
    if data is None:
        return ["$: no data was found", *(p for p in await check_output({}, schema) if "missing required" in p)]
    return await check_output(data, schema)
