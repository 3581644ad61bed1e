"""Builders of scripted navigator and planner answers (Nanobrowser's output shapes)."""

from __future__ import annotations

from typing import Any

from tests.support.llm_server import Reply

NAVIGATOR = "AgentOutput"
PLANNER = "PlannerOutput"
EXTRACTOR = "ExtractedContent"


def act(*actions: dict[str, Any], goal: str = "next", delay: float = 0.0) -> Reply:
    """A navigator answer running ``actions`` in order."""
    state = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": goal}
    return Reply.tool({"current_state": state, "action": list(actions)}, delay=delay)


def plan(done: bool = False, final_answer: str = "", next_steps: str = "continue") -> Reply:
    return Reply.tool({
        "observation": "looked at the page", "challenges": "", "done": done,
        "next_steps": "" if done else next_steps, "final_answer": final_answer,
        "reasoning": "scripted", "web_task": True,
    })


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
