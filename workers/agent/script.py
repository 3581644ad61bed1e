"""Script mode: a job's list of actions run through the same action layer, with no LLM."""

from __future__ import annotations

import time
from typing import Any

from config import bind, note
from workers.agent.actions import parse_action, run_action
from workers.agent.context import JobContext
from workers.agent.errors import ActionError
from workers.agent.events import ExecutionState
from workers.agent.recorder import StepLog
from workers.jobs.model.actions import ElementRef
from workers.jobs.model.result import StepRecord


async def run_script(ctx: JobContext, log: StepLog) -> None:
    """One step per action; the first failing action ends the job, ``done`` ends it early."""
    assert ctx.spec.script is not None
    url = str(ctx.spec.start_url) if ctx.spec.start_url else None
    for number, item in enumerate(ctx.spec.script, start=1):
        await ctx.pause.hold(ctx.cancel, ctx.events)
        with bind(step=number, url=url):  # until the step knows better: the URL the last one reached
            step, done = await _script_step(ctx, log, number, item)
        url = step.url
        if done:
            return


async def _script_step(ctx: JobContext, log: StepLog, number: int, item: Any) -> tuple[StepRecord, bool]:
    """Run one action as one recorded step; returns the step and whether it was ``done``."""
    bound = parse_action(item, f"script[{number - 1}]")
    act, params = bound.action, bound.params
    step = StepRecord(step=number)
    events = ctx.events
    events.step = number
    await events.emit(events.acting, ExecutionState.STEP_START)
    page_events = await ctx.browser.page_events()  # before this action: the start URL's dialogs, a timer's
    step.dialogs += page_events.dialogs
    if act.targets_element(params):
        started = time.monotonic()
        # a script's indexes refer to the page as it is now; a locator searches all of it
        state = await ctx.browser.capture(whole_page=isinstance(params, ElementRef) and params.by_locator)
        step.dom_seconds, step.elements = round(time.monotonic() - started, 4), len(state.elements)
    outcome = await run_action(ctx, act, params)
    step.actions = [outcome.record]
    step.dialogs += outcome.dialogs
    step.action_seconds = outcome.record.seconds
    step.url = await ctx.browser.page.url()
    note(url=ctx.secrets.scrub(step.url))  # log lines carry it
    log.charge(step, ctx.usage.take())
    if outcome.error is not None:
        step.error = str(outcome.error)
    await log.add(step)
    await events.emit(events.acting, *((ExecutionState.STEP_FAIL, step.error) if step.error
                                       else (ExecutionState.STEP_OK, "")))
    if outcome.error is not None:
        if outcome.error.fatal:
            raise outcome.error
        raise ActionError(f"script[{number - 1}] {act.name} failed: {outcome.error}", action=act.name)
    return step, outcome.result is not None and outcome.result.done
