"""The agent loop (Nanobrowser's executor): capture → planner (every few steps, and to confirm
done) → navigator → actions → step record, until the planner confirms the task is complete.

Failures of a step (an unusable answer, a failed action, a step timeout) are counted; the job
fails after ``max_failures`` in a row, or after ``max_steps``. Errors that retrying cannot fix
(LLM auth, a blocked URL, cancel) end the job at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from config import Settings
from workers.agent.actions import run_action
from workers.agent.context import JobContext, Usage
from workers.agent.errors import AgentError, LLMOutputError, MaxFailuresReached, MaxStepsReached, StepTimeout
from workers.agent.llm import LLMReply
from workers.agent.messages import MessageManager
from workers.agent.navigator import NavigatorOutput, format_results, next_actions, reduced_state, state_message
from workers.agent.planner import PlannerOutput, plan
from workers.agent.prompts import SECURITY_RULES, navigator_system
from workers.agent.recorder import StepLog
from workers.models import JobSpec, StepRecord


@dataclass(frozen=True)
class Options:
    max_steps: int
    planning_interval: int
    max_failures: int
    max_actions_per_step: int
    max_input_tokens: int
    step_timeout: float

    @classmethod
    def for_job(cls, spec: JobSpec, settings: Settings) -> Options:
        o = spec.options

        def pick(name: str) -> int:
            value = getattr(o, name)
            return getattr(settings, name) if value is None else value

        return cls(pick("max_steps"), pick("planning_interval"), pick("max_failures"), pick("max_actions_per_step"),
                   pick("max_input_tokens"), step_timeout=max(60.0, 2 * settings.llm_timeout + 60))


async def run_agent(ctx: JobContext, log: StepLog) -> None:
    options = Options.for_job(ctx.spec, ctx.settings)
    system = navigator_system(SECURITY_RULES, options.max_actions_per_step)
    messages = MessageManager(system, ctx.task, max_input_tokens=options.max_input_tokens)
    await AgentLoop(ctx, log, options, messages).run()


class AgentLoop:
    def __init__(self, ctx: JobContext, log: StepLog, options: Options, messages: MessageManager) -> None:
        self.ctx, self.log, self.options, self.messages = ctx, log, options, messages
        self.results: list[tuple[bool, str]] = []  # the last step's results, shown in the next state
        self.failures = 0
        self.navigator_done = False

    async def run(self) -> None:
        for number in range(1, self.options.max_steps + 1):
            self.ctx.cancel.check("before a step")
            step = StepRecord(step=number)
            try:
                async with asyncio.timeout(self.options.step_timeout) as limit:
                    try:
                        finished = await self._step(step)
                    except TimeoutError:
                        if not limit.expired():
                            raise
                        finished = False
                        self._failed(step, StepTimeout(number, self.options.step_timeout))
            except AgentError as exc:
                step.error = step.error or str(exc)
                await self.log.add(step)
                raise
            await self.log.add(step)
            if finished:
                return
            if self.failures >= self.options.max_failures:
                raise MaxFailuresReached(self.failures, step.error or "")
        raise MaxStepsReached(self.options.max_steps)

    # --- one step --------------------------------------------------------------------------

    async def _step(self, step: StepRecord) -> bool:
        """One step; True when the planner has confirmed the task is complete."""
        ctx, browser = self.ctx, self.ctx.browser
        started = time.monotonic()
        state = await browser.capture()
        step.dom_seconds = round(time.monotonic() - started, 4)
        step.url, step.elements = state.url, len(state.elements)
        tabs = [(tid, (info := await page.info())["url"], info["title"]) for tid, page in await browser.tabs()]
        previous = format_results(self.results)
        self.results = []
        self.messages.add_state(state_message(state, tabs, browser.tab_id(browser.page), step.step,
                                              self.options.max_steps, previous))
        summary = reduced_state(step.step, state.url, state.title, previous)
        if (step.step - 1) % self.options.planning_interval == 0 or self.navigator_done:
            self.navigator_done = False
            if await self._plan(step):
                return True
        try:
            output, reply = await next_actions(ctx, self.messages, self.options.max_actions_per_step)
        except LLMOutputError as exc:
            self.messages.reduce_last_state(summary)
            self.results = [(False, f"Invalid model output: {exc}")]
            self._failed(step, exc)
            return False
        self._charge(step, reply)
        self.messages.reduce_last_state(summary)
        self.messages.add_model_output(output.raw)
        failed = await self._act(step, output, state.url)
        if failed is None:
            self.failures = 0
        else:
            self._failed(step, failed)
        if self.navigator_done and step.step == self.options.max_steps:
            return await self._plan(step)  # the last step: confirm now, there is no next one
        return False

    async def _plan(self, step: StepRecord) -> bool:
        """Run the planner; True when it confirms completion. A bad plan counts as a failure."""
        try:
            output, reply = await plan(self.ctx, self.messages)
        except LLMOutputError as exc:
            self._failed(step, exc)
            return False
        self._charge(step, reply)
        step.plan = output.model_dump()
        self.messages.add_plan(step.plan)
        return self._confirmed(output)

    def _confirmed(self, output: PlannerOutput) -> bool:
        if not output.done:
            return False
        self.ctx.final_answer = output.final_answer or self.ctx.final_answer
        return True

    async def _act(self, step: StepRecord, output: NavigatorOutput, url_seen: str) -> AgentError | None:
        """Run the answer's actions in order; returns the failure that stopped them, if any."""
        ctx = self.ctx
        page_seen = ctx.browser.page.target_id
        for i, (act, params) in enumerate(output.actions):
            if i > 0:
                reason = await self._changed(step, act.targets_element(params), url_seen, page_seen)
                if reason:
                    self.results.append((True, f"{reason} after action {i}/{len(output.actions)}; "
                                               f"the remaining {len(output.actions) - i} actions were not run"))
                    break
            outcome = await run_action(ctx, act, params)
            step.actions.append(outcome.record)
            step.action_seconds = round(step.action_seconds + outcome.record.seconds, 4)
            self.log.charge(step, ctx.usage.take())
            if outcome.error is not None:
                if outcome.error.fatal:
                    raise outcome.error
                self.results.append((False, str(outcome.error)))
                return outcome.error
            assert outcome.result is not None
            self.results.append((True, outcome.result.text))
            if outcome.result.done:
                self.navigator_done = True
                break
        return None

    async def _changed(self, step: StepRecord, needs_state: bool, url_seen: str, page_seen: str) -> str | None:
        """Why the rest of the sequence must not run: the page is not the one the model saw."""
        browser = self.ctx.browser
        self.ctx.cancel.check("between actions")
        if browser.page.target_id != page_seen:
            return "the current tab changed"
        if await browser.page.url() != url_seen:
            return "the page changed"
        if needs_state:
            started = time.monotonic()
            state = await browser.capture()
            step.dom_seconds = round(step.dom_seconds + time.monotonic() - started, 4)
            if state.new_indexes:
                return "new elements appeared"
        return None

    # --- bookkeeping -----------------------------------------------------------------------

    def _charge(self, step: StepRecord, reply: LLMReply) -> None:
        self.log.charge(step, Usage(reply.input_tokens, reply.output_tokens, reply.seconds, calls=1))

    def _failed(self, step: StepRecord, error: AgentError) -> None:
        self.failures += 1
        step.error = str(error)
