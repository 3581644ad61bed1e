"""Replaying a recipe: its steps run as script actions (elements found by locator), no LLM.

Each step re-finds its element by the locator recorded when the recipe was saved (the action layer
does it on one snapshot), acts with real input, then checks the outcome recorded with it (the
page's path). The first step that does not match hands the job to the agent (**self-healing**),
which starts from the current page with the recipe's remaining steps as its plan; with
``heal: false`` the job fails there instead, naming the step and what was wrong.

Steps and events of the replayed part are marked ``replayed``; the worker reads them to count
replayed / healed / failed steps and to save a healed run as the recipe's next version.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from urllib.parse import unquote_plus, urlsplit

import cdp
import dom
from config import bind, note
from workers.agent.actions import parse_action, run_action
from workers.agent.context import JobContext
from workers.agent.errors import ActionError
from workers.agent.events import Actor, ExecutionState
from workers.agent.executor import run_agent
from workers.agent.prompts import heal_plan
from workers.agent.recorder import StepLog
from workers.jobs.model.result import StepRecord
from workers.jobs.recipes.models import RecipeStep, ReplayPlan, describe_step
from workers.jobs.recipes.templates import fill

log = logging.getLogger("browserd.agent.replay")
ARRIVAL_SECONDS = 5.0
ARRIVAL_POLL = 0.1
READY_TIMEOUT = 2.0
NOT_FOUND = "its element could not be found on the page (no match, or several alike)"
OTHER_OUTCOME = "the page after it is not the one the recorded run reached, or it read nothing"


class ReplayMismatch(ActionError):
    """A recipe step that no longer matches the page (its element, or the page it should lead to)."""

    def __init__(self, recipe: str, number: int, step: RecipeStep, reason: str, kind: str) -> None:
        super().__init__(f"recipe {recipe!r} step {number} ({describe_step(step)}): {reason}", action=step.action)
        self.number, self.reason = number, reason
        self.kind = kind  # our own words for what went wrong: the healing plan quotes no page text


async def run_replay(ctx: JobContext, steps: StepLog, plan: ReplayPlan) -> None:
    """Replay every step; on the first mismatch, heal with the agent (or fail when healing is off)."""
    recipe = plan.recipe
    ctx.events.acting = Actor.system  # the system runs the recipe's actions; the navigator those of a heal
    for number, step in enumerate(recipe.steps, start=1):
        with bind(step=number):
            mismatch = await _replay_step(ctx, steps, plan, number, step)
        if mismatch is not None:
            if not plan.heal:
                raise mismatch
            await _heal(ctx, steps, plan, mismatch)
            return
    ctx.final_answer = _answer(ctx, plan)


async def _replay_step(ctx: JobContext, log_: StepLog, plan: ReplayPlan, number: int,
                       step: RecipeStep) -> ReplayMismatch | None:
    """One recipe step as one recorded step; the mismatch that stops the replay, if any."""
    bound = parse_action(step.as_action(plan.params), f"recipe step {number}")
    act, params = bound.action, bound.params
    record = StepRecord(step=number, replayed=True)
    events = ctx.events
    events.step, events.replaying = number, True
    await events.emit(Actor.system, ExecutionState.STEP_START, describe_step(step))
    record.dialogs += (await ctx.browser.page_events()).dialogs
    if act.targets_element(params):
        started = time.monotonic()
        state = await ctx.browser.capture(whole_page=True)  # the locator is matched against all of the page as it is now
        record.dom_seconds, record.elements = round(time.monotonic() - started, 4), len(state.elements)
    outcome = await run_action(ctx, act, params)
    record.actions, record.action_seconds = [outcome.record], outcome.record.seconds
    record.dialogs += outcome.dialogs
    record.url = await _arrived(ctx, step, plan) if outcome.error is None else await ctx.browser.page.url()
    note(url=ctx.secrets.scrub(record.url))
    log_.charge(record, ctx.usage.take())  # an extract_content step with llm_extraction
    if outcome.error is not None and outcome.error.fatal:
        record.error = str(outcome.error)
        await _recorded(ctx, log_, record)
        raise outcome.error
    if outcome.error is not None:
        reason, kind = str(outcome.error), NOT_FOUND
    else:
        reason, kind = _unexpected(ctx, step, plan, record.url), OTHER_OUTCOME
    mismatch = None if reason is None else ReplayMismatch(plan.recipe.name, number, step, reason, kind)
    record.error = None if mismatch is None else str(mismatch)
    await _recorded(ctx, log_, record)
    return mismatch


async def _recorded(ctx: JobContext, log_: StepLog, record: StepRecord) -> None:
    await log_.add(record)
    events = ctx.events
    await events.emit(Actor.system, *((ExecutionState.STEP_FAIL, record.error) if record.error
                                      else (ExecutionState.STEP_OK, "")))
    events.replaying = False


async def _arrived(ctx: JobContext, step: RecipeStep, plan: ReplayPlan) -> str:
    """The page's URL once it is on the step's expected path and loaded, or after ``ARRIVAL_SECONDS``
    (a click's navigation may still be committing when the action returns, on a loaded machine)."""
    deadline = time.monotonic() + ARRIVAL_SECONDS
    while True:
        url = await ctx.browser.page.url()
        there = _path_differs(step, plan, url) is None and await _loaded(ctx)
        if there or time.monotonic() >= deadline:
            return url
        ctx.cancel.check("while waiting for the page")
        await asyncio.sleep(ARRIVAL_POLL)


async def _loaded(ctx: JobContext) -> bool:
    try:
        return await ctx.browser.page.evaluate("document.readyState", timeout=READY_TIMEOUT) == "complete"
    except (cdp.CDPException, cdp.EvaluationError, TimeoutError):  # being replaced, or a page that hangs
        return False


def _unexpected(ctx: JobContext, step: RecipeStep, plan: ReplayPlan, url: str) -> str | None:
    """Why the outcome of the step is not the recorded one (the page's path; fields that read
    nothing where the recorded run read something), or None when it is."""
    if step.expect_data:
        fields = step.params.get("fields") or {}
        data = ctx.data if isinstance(ctx.data, dict) else {}
        if fields and all(data.get(name) in (None, [], "") for name in fields):
            return f"its selectors read nothing on this page ({', '.join(f'{k}: {v}' for k, v in fields.items())})"
    return _path_differs(step, plan, url)


def _path_differs(step: RecipeStep, plan: ReplayPlan, url: str) -> str | None:
    if step.expect_path is None:
        return None
    expected = unquote_plus(fill(step.expect_path, plan.params, url=True))
    found = unquote_plus(urlsplit(url).path)
    return None if found == expected else f"the page should now be at {expected!r}, it is at {found!r}"


async def _heal(ctx: JobContext, steps: StepLog, plan: ReplayPlan, mismatch: ReplayMismatch) -> None:
    """The agent finishes the job from the current page, the recipe's remaining steps as its plan."""
    remaining = [describe_step(s) for s in plan.recipe.steps[mismatch.number - 1:]]
    log.info("recipe %s v%s: step %s does not match (%s); the agent takes over", plan.recipe.name,
             plan.recipe.version, mismatch.number, mismatch.reason)
    hint = heal_plan(mismatch.number - 1, mismatch.number, mismatch.kind, remaining, dom.wrap_text)
    ctx.events.acting = Actor.navigator
    await run_agent(ctx, steps, hint=hint, first_step=mismatch.number + 1)


def _answer(ctx: JobContext, plan: ReplayPlan) -> str:
    """A replay's final answer: the data it read (the recorded run's answer would be stale)."""
    data = ctx.findings.data(ctx.data, ctx.spec.output_schema)
    if data is not None:
        return json.dumps(data, ensure_ascii=False)
    return f"replayed recipe {plan.recipe.name!r} v{plan.recipe.version}: {len(plan.recipe.steps)} steps"
