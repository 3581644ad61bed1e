"""The planner: judges progress every few steps, plans the next ones, and confirms completion."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from workers.agent.context import JobContext
from workers.agent.errors import LLMOutputError
from workers.agent.llm import Answer, ToolSpec, call_structured, charged
from workers.agent.messages import MessageManager
from workers.agent.outcome import Outcome
from workers.agent.prompts import SECURITY_RULES, planner_system
from workers.jobs.model.actions import evidence_list


class PlannerOutput(BaseModel):
    """Nanobrowser's plan fields."""

    observation: str = ""
    challenges: str = ""
    done: bool = False
    next_steps: str = ""
    final_answer: str = ""
    evidence: list[str] = Field(default_factory=list, description=(
        "when done: exact quotes from the pages the agent saw (text, figures, the URL) that show the final answer "
        "or that the task was done"))
    reasoning: str = ""
    web_task: bool = True
    outcome: Outcome = Field(Outcome.complete, description=(
        "when done: complete, or why the task cannot be completed: incomplete (giving up; final_answer holds "
        "what was found), login_required, refused (harmful or disallowed), blocked_by_site (captcha or bot wall)"))

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, value: Any) -> Any:
        return Outcome.complete if value in (None, "") else str(value).strip().lower()

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> Any:
        return evidence_list(value) or []

    @field_validator("observation", "challenges", "next_steps", "final_answer", "reasoning", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, list):
            return "\n".join(str(v) for v in value)
        return value


@lru_cache(maxsize=1)
def planner_tool() -> ToolSpec:
    schema = PlannerOutput.model_json_schema()
    schema.pop("title", None)
    schema.pop("$defs", None)
    outcome = schema["properties"]["outcome"]
    schema["properties"]["outcome"] = {"type": "string", "enum": [o.value for o in Outcome],
                                       "description": outcome["description"]}
    for prop in schema["properties"].values():
        prop.pop("title", None)
        prop.pop("default", None)
    schema["required"] = list(schema["properties"])
    return ToolSpec("PlannerOutput", "Your analysis of the task's progress, the next steps, or the final answer.",
                    schema)


async def plan(ctx: JobContext, messages: MessageManager) -> Answer[PlannerOutput]:
    assert ctx.llms is not None
    history = messages.planner_messages(planner_system(SECURITY_RULES), images=ctx.spec.options.use_vision_for_planner)
    reply = await call_structured(ctx.llms.for_role("planner"), history, planner_tool(), role="planner",
                                  cancel=ctx.cancel, retry=ctx.llms.retry, telemetry=ctx.telemetry,
                                  method=ctx.llms.output("planner"))
    try:
        return Answer(PlannerOutput.model_validate(reply.data), reply)
    except ValidationError as exc:
        raise charged(LLMOutputError(f"invalid plan: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}",
                                     raw=reply.raw), reply) from None
