"""Builders of scripted navigator and planner answers (Nanobrowser's output shapes)."""

from __future__ import annotations

from typing import Any

from tests.support.jobs import run_job
from tests.support.llm_server import Reply
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.pipeline import LocalRecords

NAVIGATOR = "AgentOutput"
PLANNER = "PlannerOutput"
EXTRACTOR = "ExtractedContent"


def act(*actions: dict[str, Any], goal: str = "next", delay: float = 0.0, evaluation: str = "Unknown",
        memory: str = "") -> Reply:
    """A navigator answer running ``actions`` in order."""
    state = {"evaluation_previous_goal": evaluation, "memory": memory, "next_goal": goal}
    return Reply.tool({"current_state": state, "action": list(actions)}, delay=delay)


def plan(done: bool = False, final_answer: str = "", next_steps: str = "continue", *, outcome: str | None = None,
         web_task: bool = True) -> Reply:
    """A planner answer; ``outcome`` is left out unless given (older answers have no such field)."""
    args: dict[str, Any] = {
        "observation": "looked at the page", "challenges": "", "done": done,
        "next_steps": "" if done else next_steps, "final_answer": final_answer,
        "reasoning": "scripted", "web_task": web_task,
    }
    if outcome is not None:
        args["outcome"] = outcome
    return Reply.tool(args)


def last_state(request: dict[str, Any]) -> str:
    """The text of the last user message of a request (the current state message)."""
    for message in reversed(request["messages"]):
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    return ""


def task_of(request: dict[str, Any]) -> str:
    for message in request["messages"]:
        if message["role"] == "user" and "<user_request>" in str(message["content"]):
            text = str(message["content"])
            return text.split('"""')[1] if '"""' in text else text
    return ""


async def run(pool, settings, **spec: Any) -> tuple[JobResult, str, str]:
    """Run one job on a fresh lease; the result, the page's text and URL at the end.

    ``_cancel`` is the job's is_cancelled callback, ``_on_event`` its event listener.
    """
    steps = []

    async def on_step(step):
        steps.append(step)

    cancel, on_event = spec.pop("_cancel", None), spec.pop("_on_event", None)
    async with pool.lease() as lease:
        records = LocalRecords(on_step=on_step, on_event=on_event, is_cancelled=cancel)
        result = await run_job(JobSpec(**spec), lease, settings=settings, records=records)
        page_text = await lease.page.evaluate("document.body.innerText")
        url = await lease.page.url()
    assert [s.step for s in steps] == [s.step for s in result.steps]
    return result, page_text, url
