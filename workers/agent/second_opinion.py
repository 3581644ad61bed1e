"""The validator model (``BROWSERD_VALIDATOR_MODEL``): asked about a claim of done only after the
deterministic checks (``workers.agent.validator``) passed it.

Nanobrowser's validator, brought back as a second look, never as the first: the model reads the
task, the claimed answer and its evidence, the actions that ran and the page as it is now, and says
whether they show the task done. Its "no" is a refusal like the checks' (the agent is told the
reason and gets another step; ``AgentLoop`` bounds the refusals, then the job ends
``unverified``); an answer that cannot be read is a "no" too, since nothing then shows the claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from langchain_core.messages import HumanMessage, SystemMessage

import dom
from workers.agent.context import JobContext
from workers.agent.errors import LLMOutputError
from workers.agent.llm import LLMReply, ToolSpec, call_structured, model_name
from workers.agent.prompts import SECURITY_RULES, validator_system
from workers.agent.validator import DoneClaim
from workers.agent.wrapping import user_request

MAX_PAGE_CHARS = 20_000  # of the current page's text shown to the validator model
MAX_ACTIONS = 30  # the last actions listed


@lru_cache(maxsize=1)
def validator_tool() -> ToolSpec:
    return ToolSpec("ValidatorOutput", "Whether the agent's claim that the task is done is shown.",
                    {"type": "object", "properties": {"is_valid": {"type": "boolean"}, "reason": {"type": "string"}},
                     "required": ["is_valid", "reason"]})


@dataclass(frozen=True)
class Opinion:
    valid: bool
    reason: str  # what the model said is missing or wrong (told to the agent), or why its answer was unusable
    reply: LLMReply | None  # the call, charged to the step


def actions_text(claim: DoneClaim) -> str:
    lines = []
    for record in claim.actions[-MAX_ACTIONS:]:
        target = ""
        if record.locator is not None:
            target = f" on <{record.locator.tag}> {(record.locator.text or record.locator.name)[:80]!r}"
        params = {k: v for k, v in record.params.items() if k in ("text", "value", "option", "url", "query", "keys")}
        lines.append(f"- {record.name}{target}{f' {params}' if params else ''}")
    return "\n".join(lines) or "(no action ran)"


async def second_opinion(ctx: JobContext, claim: DoneClaim, page: str) -> Opinion:
    """Ask the validator model about ``claim``, with ``page`` (the current page's URL, title and text)."""
    assert ctx.llms is not None and ctx.llms.validator is not None
    evidence = "\n".join(f"- {quote}" for quote in claim.evidence) or "(none)"
    body = (f"{user_request(claim.task)}\nFinal answer:\n{dom.wrap_text(claim.answer)}\nEvidence:\n"
            f"{dom.wrap_text(evidence)}\nActions that ran:\n{dom.wrap_text(actions_text(claim))}\n"
            f"The page now:\n{dom.wrap_text(page[:MAX_PAGE_CHARS])}")
    prompt = [SystemMessage(validator_system(SECURITY_RULES)), HumanMessage(body)]
    model = ctx.llms.validator
    try:
        reply = await call_structured(model, prompt, validator_tool(), role="planner", cancel=ctx.cancel,
                                      retry=ctx.llms.retry, telemetry=ctx.telemetry, method=ctx.llms.output("planner"))
    except LLMOutputError as exc:
        said = exc.reply if isinstance(exc.reply, LLMReply) else None
        return Opinion(False, f"the validator model {model_name(model)!r} gave no usable answer ({exc})", said)
    valid, reason = reply.data.get("is_valid"), str(reply.data.get("reason") or "").strip()
    if not isinstance(valid, bool):
        return Opinion(False, f"the validator model {model_name(model)!r} gave no usable answer (no is_valid)", reply)
    return Opinion(valid, f"the validator model says: {reason or 'not shown'}" if not valid else reason, reply)


__all__ = ["Opinion", "second_opinion", "validator_tool"]
