"""``run_job``: one job on one lease, from spec to ``JobResult``. It never raises for the job's own
failures: they become a failed (or cancelled) result with a category."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import cdp
from config import Settings, get_settings
from workers.agent.browser import AgentBrowser
from workers.agent.cancel import CancelToken
from workers.agent.context import JobContext
from workers.agent.errors import ActionError, AgentError, Cancelled, InvalidOutput, JobTimeout
from workers.agent.firewall import Firewall, UrlPolicy
from workers.agent.llm import Llms
from workers.agent.recorder import OnStep, StepLog
from workers.agent.schema_check import validate
from workers.models import FailureCategory, JobResult, JobSpec, JobStatus

log = logging.getLogger("browserd.agent")


async def run_job(
    spec: JobSpec,
    lease: cdp.Lease,
    *,
    settings: Settings | None = None,
    on_step: OnStep | None = None,
    is_cancelled: Callable[[], bool] | None = None,
    llms: Llms | None = None,
) -> JobResult:
    """Run a task with the agent, or a script with no LLM, in ``lease``."""
    settings = settings or get_settings()
    started_at, started = datetime.now(UTC), time.monotonic()
    steps = StepLog(on_step)
    limit = spec.timeout or settings.job_timeout
    ctx: JobContext | None = None
    try:
        async with asyncio.timeout(limit) as deadline:
            try:
                ctx = await _prepare(spec, lease, settings, CancelToken(is_cancelled), llms)
                await _run(ctx, steps)
            except TimeoutError:
                if deadline.expired():
                    raise JobTimeout(limit) from None
                raise
        result = _succeeded(ctx)
    except TimeoutError:
        result = _failed(JobTimeout(limit))
    except AgentError as exc:
        result = _failed(exc)
    except (cdp.BrowserGone, cdp.TargetCrashed) as exc:
        result = JobResult(status=JobStatus.failed, category=FailureCategory.browser_crash, error=str(exc))
    except Exception as exc:
        log.exception("job failed unexpectedly")
        result = JobResult(status=JobStatus.failed, category=FailureCategory.internal, error=f"{type(exc).__name__}: {exc}")
    if ctx is not None:
        result.final_answer = result.final_answer or ctx.final_answer
        result.data = ctx.data if result.data is None else result.data
    result.steps = steps.steps
    result.totals = steps.totals(time.monotonic() - started)
    result.started_at, result.finished_at = started_at, datetime.now(UTC)
    log.info("job %s: %s%s in %.2fs, %d steps", "script" if spec.script else "agent", result.status,
             f" ({result.category})" if result.category else "", result.totals.seconds, result.totals.steps)
    return result


async def _prepare(spec: JobSpec, lease: cdp.Lease, settings: Settings, cancel: CancelToken,
                   llms: Llms | None) -> JobContext:
    policy = UrlPolicy.build(job_allowed=spec.allowed_domains, job_denied=spec.denied_domains,
                             global_allowed=settings.allowed_domains, global_denied=settings.denied_domains)
    expansion = spec.options.viewport_expansion
    browser = AgentBrowser(lease, Firewall(policy), cancel,
                           viewport_expansion=settings.viewport_expansion if expansion is None else expansion)
    await browser.start()
    if spec.script is None and llms is None:
        llms = Llms.from_settings(settings, spec.models)
    ctx = JobContext(spec=spec, settings=settings, browser=browser, cancel=cancel,
                     llms=llms if spec.script is None else None)
    if spec.start_url is not None:
        url = str(spec.start_url)
        try:
            await browser.goto(url)
        except ActionError as exc:
            raise ActionError(f"could not open the start URL: {exc}", action="start_url") from exc
    return ctx


async def _run(ctx: JobContext, steps: StepLog) -> None:
    if ctx.spec.script is not None:
        from workers.agent.script import run_script

        await run_script(ctx, steps)
    else:
        from workers.agent.executor import run_agent

        await run_agent(ctx, steps)


def _succeeded(ctx: JobContext | None) -> JobResult:
    assert ctx is not None
    schema = ctx.spec.output_schema
    if schema is not None:
        ctx.data = _data_for_schema(ctx.data, ctx.final_answer)
        problems = validate(ctx.data, schema)
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


def _failed(exc: AgentError) -> JobResult:
    if isinstance(exc, Cancelled):
        return JobResult(status=JobStatus.cancelled, error=str(exc))
    return JobResult(status=JobStatus.failed, category=exc.category, error=str(exc))
