"""Procedural memory: every ``memory_interval`` steps, a summary by the planner's model replaces the
steps since the last one, so a long job keeps what it did (navigation, findings, errors, where it
is) within ``max_input_tokens`` instead of forgetting its oldest steps."""

from __future__ import annotations

import logging
from functools import lru_cache

from langchain_core.messages import HumanMessage, SystemMessage

import dom
from workers.agent.context import JobContext
from workers.agent.errors import LLMOutputError
from workers.agent.llm import LLMReply, ToolSpec, call_structured
from workers.agent.messages import MessageManager, render
from workers.agent.prompts import SECURITY_RULES, memory_system
from workers.agent.wrapping import user_request

log = logging.getLogger("browserd.agent.memory")


@lru_cache(maxsize=1)
def memory_tool() -> ToolSpec:
    return ToolSpec("ProceduralMemory", "A chronological summary of the agent's past steps.",
                    {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]})


async def summarize(ctx: JobContext, messages: MessageManager, first: int, last: int) -> LLMReply | None:
    """Replace steps ``first``-``last`` in the history with their summary; the reply, for its cost.

    An answer without a summary leaves the history as it was (the job goes on with its old steps).
    """
    assert ctx.llms is not None
    steps = messages.past_steps()
    if not steps:
        return None
    prompt = [SystemMessage(memory_system(SECURITY_RULES)),
              HumanMessage(f"{user_request(ctx.task)}\nSteps {first}-{last}:\n{dom.wrap_text(render(steps))}")]
    try:
        reply = await call_structured(ctx.llms.for_role("planner"), prompt, memory_tool(), role="planner",
                                      cancel=ctx.cancel, retry=ctx.llms.retry, telemetry=ctx.telemetry,
                                      method=ctx.llms.output("planner"))
    except LLMOutputError as exc:
        log.warning("no summary of steps %s-%s: %s", first, last, exc)
        return exc.reply if isinstance(exc.reply, LLMReply) else None  # an unusable summary still cost its tokens
    summary = reply.data.get("summary")
    if isinstance(summary, str) and summary.strip():
        messages.summarize(summary.strip(), first, last)
    else:
        log.warning("no summary of steps %s-%s: the answer had none", first, last)
    return reply
