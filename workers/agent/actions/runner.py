"""Running one action: timing, firewall notes, and turning failures into what the model reads."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cdp
from workers.agent.actions.registry import Action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError, AgentError
from workers.agent.events import ExecutionState
from workers.jobs.model.actions import ActionParams
from workers.jobs.model.result import ActionRecord, DialogRecord


@dataclass
class ActionOutcome:
    """An action's record, either its result or the error it failed with, and the dialogs it met."""

    record: ActionRecord
    result: ActionResult | None = None
    error: AgentError | None = None
    dialogs: list[DialogRecord] = field(default_factory=list)


async def run_action(ctx: JobContext, act: Action, params: ActionParams) -> ActionOutcome:
    """Run ``act``; failures come back in the outcome (only a dead or stopped browser propagates).

    ``outcome.error.fatal`` says whether the failure ends the job (blocked URL, cancel, LLM auth).
    What the page did meanwhile (dialogs, downloads, a tab closed) is added to the text the model reads.
    """
    ctx.cancel.check(f"before {act.name}")
    if ctx.artifacts is not None:
        await ctx.artifacts.settled()  # the last step's screenshot shows the page before this action
    events = ctx.events
    await events.emit(events.acting, ExecutionState.ACT_START, params.intent or act.name, action=act.name)
    outcome = await _run(ctx, act, params)
    if outcome.error is None:
        await events.emit(events.acting, ExecutionState.ACT_OK, outcome.record.result or "", action=act.name)
    else:
        await events.emit(events.acting, ExecutionState.ACT_FAIL, str(outcome.error), action=act.name)
    return outcome


async def _run(ctx: JobContext, act: Action, params: ActionParams) -> ActionOutcome:
    record = ActionRecord(name=act.name, params=params.model_dump(exclude_none=True))
    started = time.monotonic()
    ctx.browser.target_of_action = None
    try:
        try:
            try:
                result = await act.run(ctx, params)
            finally:
                _note_target(ctx, record)
            notes = await ctx.browser.raise_if_blocked()
        except AgentError as exc:
            return await _failed(ctx, record, exc)
        except (cdp.BrowserGone, cdp.TargetCrashed, cdp.ResourceLimitExceeded):
            raise
        except (cdp.CDPException, cdp.EvaluationError) as exc:
            ctx.browser.check_alive()  # a lease stopped by the pool ends the job, not just this action
            return await _failed(ctx, record, ActionError(f"{act.name} failed: {exc}", action=act.name))
        events = await ctx.browser.page_events()
        notes += events.notes
        if notes:
            result.text += " (" + "; ".join(notes) + ")"
        record.result = result.text = ctx.secrets.scrub(result.text)
        return ActionOutcome(record, result, dialogs=events.dialogs)
    finally:
        record.seconds = round(time.monotonic() - started, 4)


def _note_target(ctx: JobContext, record: ActionRecord) -> None:
    """The element the action addressed, by index and locator, into its record (also when it failed)."""
    target = ctx.browser.target_of_action
    if target is not None:
        record.index, record.locator = target.index, target.locator
        ctx.browser.target_of_action = None


async def _failed(ctx: JobContext, record: ActionRecord, exc: AgentError) -> ActionOutcome:
    events = await ctx.browser.page_events()
    if events.notes and not exc.fatal:
        # The model reads an error's last line only: the notes go on it.
        exc = ActionError(f"{exc} ({'; '.join(events.notes)})", action=getattr(exc, "action", ""))
    record.ok = False
    record.error = ctx.secrets.scrub(str(exc))
    return ActionOutcome(record, None, exc, dialogs=events.dialogs)
