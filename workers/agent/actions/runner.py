"""Running one action: timing, firewall notes, and turning failures into what the model reads."""

from __future__ import annotations

import time
from dataclasses import dataclass

import cdp
from workers.agent.actions.registry import Action
from workers.agent.actions.schemas import ActionParams
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError, AgentError
from workers.models import ActionRecord


@dataclass
class Outcome:
    """An action's record, and either its result or the error it failed with."""

    record: ActionRecord
    result: ActionResult | None = None
    error: AgentError | None = None


async def run_action(ctx: JobContext, act: Action, params: ActionParams) -> Outcome:
    """Run ``act``; failures come back in the outcome (only a dead browser propagates).

    ``outcome.error.fatal`` says whether the failure ends the job (blocked URL, cancel, LLM auth).
    """
    ctx.cancel.check(f"before {act.name}")
    record = ActionRecord(name=act.name, params=params.model_dump(exclude_none=True))
    started = time.monotonic()
    try:
        result = await act.run(ctx, params)
        notes = ctx.browser.raise_if_blocked()
        if notes:
            result.text += " (" + "; ".join(notes) + ")"
        record.result = result.text
        return Outcome(record, result)
    except AgentError as exc:
        return _failed(record, exc)
    except (cdp.BrowserGone, cdp.TargetCrashed):
        raise
    except (cdp.CDPException, cdp.EvaluationError) as exc:
        return _failed(record, ActionError(f"{act.name} failed: {exc}", action=act.name))
    finally:
        record.seconds = round(time.monotonic() - started, 4)


def _failed(record: ActionRecord, exc: AgentError) -> Outcome:
    record.ok = False
    record.error = str(exc)
    return Outcome(record, None, exc)
