"""The scripted model of the console and MCP tests, per task: the navigator waits ``WAITS`` steps
(a second of thinking and a second of waiting each) and then says done, so a watcher sees steps
arrive one by one; a task starting with ``quick:`` is done at its first step. The planner agrees
only once the navigator said done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.agent.scripted import NAVIGATOR, act, plan, task_of
from tests.support.llm_server import LLMServer, Reply, offered_tool

WAITS = 4
ANSWER = "The page says hello"
# the navigator's memory quotes page text, which may be hostile: the step view shows it as text
MEMORY = 'waited <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> so far'


def scripted(llm: LLMServer) -> Callable[[dict[str, Any]], Reply]:
    def reply(request: dict[str, Any]) -> Reply:
        task = task_of(request)
        waits = 0 if task.strip().startswith("quick:") else WAITS
        turns = sum(1 for r in llm.requests_for(NAVIGATOR) if task_of(r) == task)
        if offered_tool(request) == NAVIGATOR:
            if turns <= waits:
                return act({"wait": {"seconds": 1, "intent": f"let the page settle ({turns})"}},
                           goal="wait", delay=1.0, evaluation=f"Success - waited {turns - 1} times",
                           memory=MEMORY)
            return act({"done": {"text": ANSWER, "success": True}}, goal="finish")
        return plan(done=turns > waits, final_answer=ANSWER, next_steps="keep waiting")
    return reply
