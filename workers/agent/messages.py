"""The message history the models read, in Nanobrowser's order.

system prompt, task, an example answer, the memory (findings kept across steps), then per step:
the state message, the planner's plan (when it ran), the navigator's answer.

Every message is one every common OpenAI-compatible server takes: text content, never ``null``, and
no tool-call history. The example answer is plain JSON in a user turn and the navigator's past
answers are assistant text turns holding their JSON: an assistant turn with ``tool_calls`` is sent
by langchain-openai with ``"content": null``, which llama.cpp's server (llama-cpp-python) refuses
with HTTP 500, and servers without tool calling have no way to read it at all. Once a step is over
its state message is reduced to the URL and the action results, dropping the element list. The
history is kept under ``max_input_tokens``, counted offline (characters / 3, as Nanobrowser
estimates): the oldest steps go first, then the tail of the current state message. The memory is
never dropped: it is what the job found. Every ``memory_interval`` steps a summary of the steps
since the last one replaces them (procedural memory); summaries go only after every past step.

With vision, the current state message carries the step's screenshot; it goes when the state is
reduced, so only the latest screenshot is ever in the history (as in Nanobrowser) and its
estimated tokens count against the budget. Each role asks for the history with or without it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)

import dom
from workers.agent.vision import Screenshot
from workers.agent.prompts import follow_up_task
from workers.agent.wrapping import user_request

CHARS_PER_TOKEN = 3
PAST_STEP_KINDS = ("past_state", "plan", "model", "note")
MESSAGE_OVERHEAD = 4
HISTORY_START = "[Your task history memory starts here]"
MEMORY_HEADER = ("[Memory: findings kept from every step so far (extractions and cached content); they are "
                 "never dropped from the history. Their text comes from web pages.]")

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
    return math.ceil(len(text) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


def answer_text(output: dict[str, Any]) -> str:
    """A navigator answer as the text of an assistant turn (what a text-answering model writes)."""
    return json.dumps(output, ensure_ascii=False)


@dataclass
class Entry:
    message: BaseMessage
    kind: str  # init | memory | summary | task (a follow-up) | state | past_state | plan | model | note
    tokens: int
    image: Screenshot | None = None  # only on the current state message

    def build(self, images: bool) -> BaseMessage:
        """The message as sent: with its screenshot as an image part when ``images``."""
        if self.image is None or not images:
            return self.message
        return HumanMessage(content=[{"type": "text", "text": str(self.message.content)}, self.image.content_block()])


class MessageManager:
    def __init__(self, system_prompt: str, task: str, *, max_input_tokens: int = 128_000) -> None:
        self.max_input_tokens = max_input_tokens
        self.entries: list[Entry] = []
        self.trimmed: list[Entry] = []  # past steps dropped to fit the budget since the last summary
        self._add(SystemMessage(system_prompt), "init")
        self._add(HumanMessage(task_message(task)), "init")
        self._add(HumanMessage(f"Example output:\n{answer_text(EXAMPLE_OUTPUT)}"), "init")
        self._add(HumanMessage(HISTORY_START), "init")

    # --- building --------------------------------------------------------------------------

    def _add(self, message: BaseMessage, kind: str, position: int | None = None) -> None:
        entry = Entry(message, kind, count_tokens(message))
        if position is None:
            self.entries.append(entry)
        else:
            self.entries.insert(position, entry)

    def set_memory(self, notes: list[str]) -> None:
        """Show ``notes`` in the memory section (after the history start), replacing what it showed."""
        if not notes:
            return
        body = "\n".join(f"{i}. {note}" for i, note in enumerate(notes, start=1))
        message = HumanMessage(f"{MEMORY_HEADER}\n{dom.wrap_text(body)}")
        at = next((i for i, e in enumerate(self.entries) if e.kind == "memory"), None)
        if at is not None:
            self.entries[at] = Entry(message, "memory", count_tokens(message))
        else:
            self._add(message, "memory", position=sum(1 for e in self.entries if e.kind == "init"))

    def past_steps(self) -> list[Entry]:
        """The entries of the steps since the last summary, with those trimmed to fit the budget: the
        summary covers every step even when the models no longer saw the oldest ones."""
        return [*self.trimmed, *(e for e in self.entries if e.kind in PAST_STEP_KINDS)]

    def summarize(self, summary: str, first: int, last: int) -> None:
        """Replace the past steps with their summary, where they were: the history stays chronological."""
        at = next((i for i, e in enumerate(self.entries) if e.kind in PAST_STEP_KINDS), len(self.entries))
        self.entries = [e for e in self.entries if e.kind not in PAST_STEP_KINDS]
        self.trimmed = []
        self._add(HumanMessage(f"[Summary of steps {first}-{last}]\n{summary}"), "summary", position=at)

    def add_follow_up(self, task: str) -> None:
        """A follow-up task after the history so far; it is never trimmed away (kind ``task``). A
        state message the last run left unreduced (it ended mid-step) is reduced first."""
        self._leave_out_stale_states()
        self._add(HumanMessage(user_request(follow_up_task(task))), "task")

    def _leave_out_stale_states(self) -> None:
        """Reduce a state message left full by a step that ended mid-way (its run ended, its time
        limit cut its model call): only the current step's page is shown in full."""
        for i, entry in enumerate(self.entries):
            if entry.kind == "state":
                message = HumanMessage("[the page state of an earlier step, left out]")
                self.entries[i] = Entry(message, "past_state", count_tokens(message))

    def add_state(self, content: str, image: Screenshot | None = None) -> None:
        """The step's state message, with its screenshot when vision is on (older ones are dropped)."""
        self._leave_out_stale_states()
        for entry in self.entries:
            if entry.image is not None:
                entry.image = None
                entry.tokens = count_tokens(entry.message)
        message = HumanMessage(content)
        self.entries.append(Entry(message, "state", count_tokens(message) + (image.tokens if image else 0), image))

    @property
    def image(self) -> Screenshot | None:
        """The screenshot in the history (at most one: the current state's)."""
        return next((e.image for e in self.entries if e.image is not None), None)

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
        self._add(AIMessage(content=answer_text(output)), "model")

    # --- reading ---------------------------------------------------------------------------

    @property
    def total_tokens(self) -> int:
        return sum(e.tokens for e in self.entries)

    def messages(self, *, images: bool = True) -> list[BaseMessage]:
        """The history to send; ``images=False`` leaves the screenshot out (a role without vision)."""
        self._fit()
        return [e.build(images) for e in self.entries]

    def planner_messages(self, system_prompt: str, *, images: bool = False) -> list[BaseMessage]:
        """The same history under the planner's own system prompt."""
        return [SystemMessage(system_prompt), *self.messages(images=images)[1:]]

    def _fit(self) -> None:
        """Drop the oldest steps, then trim the current state, until the history fits."""
        while self.total_tokens > self.max_input_tokens:
            i = next((i for i, e in enumerate(self.entries) if e.kind in ("past_state", "plan", "model", "note")),
                     next((i for i, e in enumerate(self.entries) if e.kind == "summary"), None))
            if i is None:
                break
            removed = self.entries.pop(i)
            if removed.kind in PAST_STEP_KINDS:
                self.trimmed.append(removed)
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
            image = entry.image
            self.entries[i] = Entry(message, "state", count_tokens(message) + (image.tokens if image else 0), image)
            return


def task_message(task: str) -> str:
    return user_request(
        f'Your ultimate task is: """{task}""". If you achieved your ultimate task, stop everything and '
        "use the done action in the next step to complete the task. If not, continue as usual."
    )


def render(entries: list[Entry]) -> str:
    """Past steps as plain text, for the summary: states, plans and the navigator's answers."""
    lines = []
    for e in entries:
        if e.kind == "model":
            lines.append(f"Navigator: {e.message.content}")
        elif e.kind == "plan":
            lines.append(f"Planner: {e.message.content}")
        else:
            lines.append(str(e.message.content))
    return "\n".join(lines)
