"""The message history the models read, in Nanobrowser's order.

system prompt, task, an example answer, then per step: the state message, the planner's plan
(when it ran), the navigator's answer. Once a step is over its state message is reduced to the
URL and the action results, dropping the element list. The history is kept under
``max_input_tokens``, counted offline (characters / 3, as Nanobrowser estimates): the oldest steps
go first, then the tail of the current state message.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from workers.agent.wrapping import user_request

CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD = 4
HISTORY_START = "[Your task history memory starts here]"

EXAMPLE_OUTPUT = {
    "current_state": {
        "evaluation_previous_goal": "Success - the search results page is open and shows the product.",
        "memory": "Searched for the product; found it as the first result. Step 2 of the task.",
        "next_goal": "Open the first result, the link [12] with the product's name.",
    },
    "action": [{"click_element": {"intent": "open the first result", "index": 12}}],
}


def count_tokens(message: BaseMessage) -> int:
    """An offline estimate: no tokenizer is downloaded or loaded."""
    text = message.content if isinstance(message.content, str) else json.dumps(message.content)
    calls = getattr(message, "tool_calls", None)
    if calls:
        text += json.dumps([c.get("args") for c in calls])
    return math.ceil(len(text) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


@dataclass
class Entry:
    message: BaseMessage
    kind: str  # init | state | plan | model | tool | note
    tokens: int


class MessageManager:
    def __init__(self, system_prompt: str, task: str, *, max_input_tokens: int = 128_000) -> None:
        self.max_input_tokens = max_input_tokens
        self._tool_ids = 0
        self.entries: list[Entry] = []
        self._add(SystemMessage(system_prompt), "init")
        self._add(HumanMessage(task_message(task)), "init")
        self._add(HumanMessage("Example output:"), "init")
        self._add_tool_call(EXAMPLE_OUTPUT, "init", "Browser started")
        self._add(HumanMessage(HISTORY_START), "init")

    # --- building --------------------------------------------------------------------------

    def _add(self, message: BaseMessage, kind: str, position: int | None = None) -> None:
        entry = Entry(message, kind, count_tokens(message))
        if position is None:
            self.entries.append(entry)
        else:
            self.entries.insert(position, entry)

    def _add_tool_call(self, args: dict[str, Any], kind: str, answer: str) -> None:
        self._tool_ids += 1
        call_id = str(self._tool_ids)
        self._add(AIMessage(content="", tool_calls=[{"name": "AgentOutput", "args": args, "id": call_id,
                                                     "type": "tool_call"}]), kind)
        self._add(ToolMessage(content=answer, tool_call_id=call_id), "tool" if kind != "init" else "init")

    def add_state(self, content: str) -> None:
        self._add(HumanMessage(content), "state")

    def reduce_last_state(self, summary: str) -> None:
        """Replace the latest full state message with its short form once its step is over."""
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i].kind == "state":
                message = HumanMessage(summary)
                self.entries[i] = Entry(message, "past_state", count_tokens(message))
                return

    def add_plan(self, plan: dict[str, Any]) -> None:
        self._add(AIMessage(content=f"<plan>{json.dumps(plan, ensure_ascii=False)}</plan>"), "plan")

    def add_model_output(self, output: dict[str, Any]) -> None:
        self._add_tool_call(output, "model", "tool call response")

    # --- reading ---------------------------------------------------------------------------

    @property
    def total_tokens(self) -> int:
        return sum(e.tokens for e in self.entries)

    def messages(self) -> list[BaseMessage]:
        self._fit()
        return [e.message for e in self.entries]

    def planner_messages(self, system_prompt: str) -> list[BaseMessage]:
        """The same history under the planner's own system prompt."""
        return [SystemMessage(system_prompt), *self.messages()[1:]]

    def _fit(self) -> None:
        """Drop the oldest steps, then trim the current state, until the history fits."""
        while self.total_tokens > self.max_input_tokens:
            i = next((i for i, e in enumerate(self.entries) if e.kind in ("past_state", "plan", "model", "note")), None)
            if i is None:
                break
            removed = self.entries.pop(i)
            if removed.kind == "model" and i < len(self.entries) and self.entries[i].kind == "tool":
                self.entries.pop(i)  # a tool call and its answer go together
        excess = self.total_tokens - self.max_input_tokens
        if excess > 0:
            self._trim_current_state(excess)

    def _trim_current_state(self, excess: int) -> None:
        for i in range(len(self.entries) - 1, -1, -1):
            entry = self.entries[i]
            if entry.kind != "state":
                continue
            text = str(entry.message.content)
            keep = max(0, len(text) - (excess + MESSAGE_OVERHEAD) * CHARS_PER_TOKEN - 40)
            message = HumanMessage(text[:keep] + "\n... [state cut to fit the token budget]")
            self.entries[i] = Entry(message, "state", count_tokens(message))
            return


def task_message(task: str) -> str:
    return user_request(
        f'Your ultimate task is: """{task}""". If you achieved your ultimate task, stop everything and '
        "use the done action in the next step to complete the task. If not, continue as usual."
    )
