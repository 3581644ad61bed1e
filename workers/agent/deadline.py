"""The step's deadline as its model calls see it.

A step runs under a time limit (``asyncio.timeout_at``); the calls inside it are deep in the
navigator, the planner, the memory summary and the extractor. ``StepClock`` is how they learn the
deadline without every caller passing it down: the executor opens it for the step
(``step_clock``), ``workers.agent.llm.call_structured`` reads it to start no retry the deadline
would cut, and marks which model it is waiting for, so that a step its limit stopped says which
call did not answer (``LLMTimeout``, category ``llm_timeout``) rather than only that time ran out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from workers.agent.errors import LLMTimeout, StepTimeout


@dataclass
class StepClock:
    step: int
    seconds: float  # the step's limit
    deadline: float  # in the event loop's time
    role: str = ""  # the model call under way ("" between calls)
    model: str = ""

    def remaining(self) -> float:
        return self.deadline - asyncio.get_running_loop().time()

    def expired(self, detail: str = "") -> StepTimeout:
        """The error of a step its limit stopped: which model call was under way, if one was."""
        if self.role:
            return LLMTimeout(self.step, self.seconds, role=self.role, model=self.model, detail=detail)
        return StepTimeout(self.step, self.seconds)


_CLOCK: ContextVar[StepClock | None] = ContextVar("browserd_step_clock", default=None)


@contextmanager
def step_clock(step: int, seconds: float) -> Iterator[StepClock]:
    """The clock of one step of ``seconds``, starting now, seen by the calls made inside the block."""
    clock = StepClock(step, seconds, asyncio.get_running_loop().time() + seconds)
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


def current_clock() -> StepClock | None:
    """The clock of the step under way; None outside a step (a session's direct call, a test)."""
    return _CLOCK.get()
