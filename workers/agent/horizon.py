"""The rolling-horizon strategy (``options.strategy: "rolling_horizon"``): one planner call returns the
next ``horizon`` actions, the loop runs them one per step, and the planner is asked again when the
horizon is used up, when a step fails, or when the page changed under the plan (another URL or
tab, or new elements). Same actions, outcomes, events and records as the planner/navigator loop;
fewer model calls when the page is predictable. The planner chooses the actions here, so it is
the model that gets the screenshot with either vision option.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import Field, ValidationError

from workers.agent.actions import BoundAction, actions_json_schema, parse_action
from workers.agent.errors import LLMOutputError
from workers.agent.context import JobContext
from workers.agent.executor import AgentLoop, Options
from workers.agent.llm import Answer, ToolSpec, call_structured, charged
from workers.agent.navigator import ActionReport, NavigatorOutput
from workers.agent.messages import MessageManager
from workers.agent.planner import PlannerOutput, planner_tool
from workers.agent.prompts import SECURITY_RULES, horizon_system
from workers.agent.recorder import StepLog
from workers.jobs.model.result import StepRecord


def horizon_history(ctx: JobContext) -> MessageManager:
    """A new history for the rolling-horizon loop, starting with the job's task."""
    options = Options.for_job(ctx.spec, ctx.config)
    return MessageManager(horizon_system(SECURITY_RULES, ctx.spec.options.horizon), ctx.task,
                          max_input_tokens=options.max_input_tokens)


async def run_rolling_horizon(ctx: JobContext, log: StepLog, messages: MessageManager | None = None) -> None:
    """Run the loop on ``messages`` (a kept session's history), or on a new history."""
    options, horizon = Options.for_job(ctx.spec, ctx.config), ctx.spec.options.horizon
    await HorizonLoop(ctx, log, options, messages or horizon_history(ctx), horizon=horizon).run()


class HorizonPlan(PlannerOutput):
    steps: list[dict[str, Any]] = Field(default_factory=list)


@lru_cache(maxsize=32)
def horizon_tool(horizon: int) -> ToolSpec:
    base = planner_tool().parameters["properties"]
    props = {name: base[name] for name in ("observation", "done", "final_answer", "evidence", "outcome")}
    props["steps"] = {"type": "array", "items": actions_json_schema(), "maxItems": horizon}
    return ToolSpec("HorizonPlan", "Your analysis, and the next actions to run one by one (or the final answer).",
                    {"type": "object", "properties": props, "required": list(props)})


class HorizonLoop(AgentLoop):
    def __init__(self, *args: Any, horizon: int) -> None:
        super().__init__(*args)
        self.horizon = horizon
        self.queue: list[BoundAction] = []
        self.planned_on: tuple[str, str] = ("", "")  # (target id, URL) the plan was made on
        self.why = "the task starts"

    async def _step(self, step: StepRecord) -> bool:
        ctx = self.ctx
        state = await self._capture(step)
        if self.queue and (self.planned_on != (ctx.browser.page.target_id, state.url) or state.new_indexes):
            self.queue, self.why = [], "the page changed under the plan"
        replan = not self.queue
        summary = await self._show(step, state, *([f"Replanning: {self.why}"] if replan else []), screenshot=replan)
        if replan:
            self.navigator_done = False
            if await self._plan(step):
                return True
            self.planned_on = (ctx.browser.page.target_id, state.url)
        if not self.queue:  # the plan failed or held no steps; counted as a failure by _plan or here
            self.messages.reduce_last_state(summary)
            refused = step.verification is not None and not step.verification.accepted  # bounded on its own
            if step.error is None and not refused:
                self._failed(step, LLMOutputError("the plan has no steps and the task is not done"))
                self.results = [ActionReport(False, "the plan has no steps and the task is not done")]
            self.why = f"browserd refused the claim of done: {step.verification.reason}" if refused else \
                "the last plan could not be used"
            return False
        next_action = self.queue.pop(0)
        self.messages.reduce_last_state(summary)
        failed = await self._act(step, NavigatorOutput({}, [next_action], {}), state.url)
        if failed is None:
            self.failures = 0
            self.why = "the plan's actions have all run"
        else:
            self._failed(step, failed)
            self.queue, self.why = [], "an action failed"
        if self.navigator_done:
            self.queue, self.why = [], "done was used: confirm the outcome"
            if step.step == self.options.max_steps:
                return await self._plan(step)
        await self._remember(step)
        return False

    @property
    def planner_sees_images(self) -> bool:
        return self.options.screenshots  # no navigator: the planner acts, so use_vision is for it

    async def _ask_planner(self) -> Answer[PlannerOutput]:
        ctx = self.ctx
        assert ctx.llms is not None
        history = self.messages.messages(images=self.planner_sees_images)
        reply = await call_structured(ctx.llms.for_role("planner"), history,
                                      horizon_tool(self.horizon), role="planner", cancel=ctx.cancel,
                                      retry=ctx.llms.retry, telemetry=ctx.telemetry,
                                      method=ctx.llms.output("planner"))
        try:
            output = HorizonPlan.model_validate(reply.data)
            steps = [parse_action(item, f"steps[{i}]") for i, item in enumerate(output.steps[:self.horizon])]
        except ValidationError as exc:
            raise charged(LLMOutputError(f"invalid plan: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}",
                                         raw=reply.raw), reply) from None
        except ValueError as exc:
            raise charged(LLMOutputError(f"invalid plan: {exc}", raw=reply.raw), reply) from None
        self.queue = [] if output.done else steps
        output.next_steps = json.dumps(output.steps[:self.horizon], ensure_ascii=False) if self.queue else ""
        return Answer(output, reply)
