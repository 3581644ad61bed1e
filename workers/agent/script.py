"""Script mode: a job's list of actions run through the same action layer, with no LLM."""

from __future__ import annotations

import time

from workers.agent.actions import parse_action, run_action
from workers.agent.context import JobContext
from workers.agent.errors import ActionError
from workers.agent.recorder import StepLog
from workers.models import StepRecord


async def run_script(ctx: JobContext, log: StepLog) -> None:
    """One step per action; the first failing action ends the job, ``done`` ends it early."""
    assert ctx.spec.script is not None
    for number, item in enumerate(ctx.spec.script, start=1):
        act, params = parse_action(item, f"script[{number - 1}]")
        step = StepRecord(step=number)
        if act.targets_element(params):
            started = time.monotonic()
            state = await ctx.browser.capture()  # a script's indexes refer to the page as it is now
            step.dom_seconds, step.elements = round(time.monotonic() - started, 4), len(state.elements)
        outcome = await run_action(ctx, act, params)
        step.actions = [outcome.record]
        step.action_seconds = outcome.record.seconds
        step.url = await ctx.browser.page.url()
        log.charge(step, ctx.usage.take())
        if outcome.error is not None:
            step.error = str(outcome.error)
        await log.add(step)
        if outcome.error is not None:
            if outcome.error.fatal:
                raise outcome.error
            raise ActionError(f"script[{number - 1}] {act.name} failed: {outcome.error}", action=act.name)
        if outcome.result is not None and outcome.result.done:
            return
