"""Nanobrowser's execution events: who (system, planner, navigator) reached which state, at which step.

The agent reports them through a listener it is given (``JobSession.run(on_event=...)``), so it never
depends on where they go; the worker writes them into the job's event stream. A listener that
fails is logged and ignored: events never change how a job runs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, Field

log = logging.getLogger("browserd.agent.events")

DETAILS_CHARS = 2000


class Actor(StrEnum):
    system = "system"
    planner = "planner"
    navigator = "navigator"


class ExecutionState(StrEnum):
    """Nanobrowser's states (``task.start`` …), and the planner's two outputs."""

    TASK_START = "task.start"
    TASK_OK = "task.ok"
    TASK_FAIL = "task.fail"
    TASK_CANCEL = "task.cancel"
    TASK_PAUSE = "task.pause"
    TASK_RESUME = "task.resume"
    STEP_START = "step.start"
    STEP_OK = "step.ok"
    STEP_FAIL = "step.fail"
    ACT_START = "act.start"
    ACT_OK = "act.ok"
    ACT_FAIL = "act.fail"
    NEXT_STEPS = "next_steps"
    FINAL_ANSWER = "final_answer"


class AgentEvent(BaseModel):
    """One event; ``step`` is 0 before the first step, ``action`` names the action of ``act.*`` events."""

    actor: Actor
    state: ExecutionState
    step: int
    max_steps: int
    details: str = ""
    action: str | None = None
    replayed: bool = False  # a recipe step run with no LLM (the agent's steps after healing are not)
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))


OnEvent = Callable[[AgentEvent], Awaitable[None]]


class Events:
    """Emits a job's events to its listener, with the step the job is at."""

    def __init__(self, listener: OnEvent | None = None, max_steps: int = 0, *, acting: Actor = Actor.navigator) -> None:
        self.listener = listener
        self.max_steps = max_steps
        self.acting = acting  # who runs the actions and steps: the navigator, or the system for a script
        self.step = 0
        self.replaying = False  # events of recipe steps replayed with no LLM are marked

    async def emit(self, actor: Actor, state: ExecutionState, details: str = "", *, action: str | None = None) -> None:
        if self.listener is None:
            return
        if len(details) > DETAILS_CHARS:
            details = details[:DETAILS_CHARS] + "..."
        event = AgentEvent(actor=actor, state=state, step=self.step, max_steps=self.max_steps, details=details,
                           action=action, replayed=self.replaying)
        try:
            await self.listener(event)
        except Exception:
            log.exception("event listener failed for %s %s at step %s", actor, state, self.step)
