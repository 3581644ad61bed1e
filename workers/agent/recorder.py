"""Collects step records, reports each one as it completes, and sums the totals."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from workers.agent.context import Usage
from workers.agent.secrets import Secrets
from workers.jobs.model.result import JobTotals, StepRecord

log = logging.getLogger("browserd.agent")

OnStep = Callable[[StepRecord], Awaitable[None]]


class StepLog:
    def __init__(self, on_step: OnStep | None = None, secrets: Secrets | None = None) -> None:
        self.steps: list[StepRecord] = []
        self.llm_calls = 0
        self._on_step = on_step
        self.secrets = secrets or Secrets()

    def charge(self, step: StepRecord, usage: Usage) -> None:
        """Add LLM usage (tokens, latency, calls) to a step."""
        step.input_tokens += usage.input_tokens
        step.output_tokens += usage.output_tokens
        step.llm_seconds = round(step.llm_seconds + usage.seconds, 4)
        self.llm_calls += usage.calls

    async def add(self, step: StepRecord) -> None:
        step = self.secrets.scrub_model(step)  # type: ignore[assignment]  # events, records and logs alike
        self.steps.append(step)
        log.info("step %s: %s actions, dom %.2fs, llm %.2fs, actions %.2fs%s", step.step, len(step.actions),
                 step.dom_seconds, step.llm_seconds, step.action_seconds, f", error: {step.error}" if step.error else "")
        if self._on_step is not None:
            try:
                await self._on_step(step)
            except Exception:
                log.exception("on_step callback failed for step %s", step.step)

    def totals(self, seconds: float) -> JobTotals:
        return JobTotals(
            steps=len(self.steps),
            actions=sum(len(s.actions) for s in self.steps),
            input_tokens=sum(s.input_tokens for s in self.steps),
            output_tokens=sum(s.output_tokens for s in self.steps),
            image_tokens=sum(s.image_tokens for s in self.steps),
            llm_calls=self.llm_calls,
            seconds=round(seconds, 4),
        )
