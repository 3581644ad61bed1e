"""The navigator: reads the state message, answers with its evaluation, memory, goal and actions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import dom
from workers.agent.actions import BoundAction, actions_json_schema, parse_action
from workers.agent.context import JobContext
from workers.agent.errors import LLMOutputError
from workers.agent.llm import Answer, ToolSpec, call_structured, charged
from workers.agent.messages import MessageManager
from workers.jobs.model.result import NavigatorBrain


@lru_cache(maxsize=1)
def navigator_tool() -> ToolSpec:
    text = {"type": "string"}
    return ToolSpec(
        "AgentOutput",
        "Your evaluation of the last step, your memory, your next goal, and the actions to run next.",
        {
            "type": "object",
            "properties": {
                "current_state": {
                    "type": "object",
                    "properties": {"evaluation_previous_goal": text, "memory": text, "next_goal": text},
                    "required": ["evaluation_previous_goal", "memory", "next_goal"],
                },
                "action": {"type": "array", "items": actions_json_schema(), "minItems": 1},
            },
            "required": ["current_state", "action"],
        },
    )


@dataclass(frozen=True)
class ActionReport:
    """What one action (or the page by itself) did, for the next state message: its result or error."""

    ok: bool
    text: str


@dataclass(frozen=True)
class ListedTab:
    """An open tab as the state message lists it (the page controls its URL and title: untrusted)."""

    id: int
    url: str
    title: str


@dataclass
class NavigatorOutput:
    current_state: dict[str, Any]
    actions: list[BoundAction]
    raw: dict[str, Any]

    def brain(self) -> NavigatorBrain | None:
        """The answer's evaluation, memory and next goal for the step record (None when it gave none);
        a field that is not text is kept as its JSON-ish string rather than lost."""
        fields = NavigatorBrain.model_fields
        texts = {name: _text(self.current_state.get(name)) for name in fields}
        return NavigatorBrain(**texts) if any(texts.values()) else None


async def next_actions(ctx: JobContext, messages: MessageManager, max_actions: int) -> Answer[NavigatorOutput]:
    assert ctx.llms is not None
    history = messages.messages(images=ctx.spec.options.use_vision)
    reply = await call_structured(ctx.llms.for_role("navigator"), history, navigator_tool(), role="navigator",
                                  cancel=ctx.cancel, retry=ctx.llms.retry, telemetry=ctx.telemetry,
                                  method=ctx.llms.output("navigator"))
    try:
        return Answer(parse_output(reply.data, max_actions), reply)
    except LLMOutputError as exc:
        raise charged(exc, reply) from None


def parse_output(data: dict[str, Any], max_actions: int) -> NavigatorOutput:
    """Validate the answer; an unusable one raises ``LLMOutputError`` with what was wrong."""
    items = data.get("action", data.get("actions"))
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list) or not items:
        raise LLMOutputError("the answer has no 'action' list", raw=str(data)[:500])
    try:
        actions = [parse_action(item, f"action[{i}]") for i, item in enumerate(items[:max_actions])]
    except ValueError as exc:
        raise LLMOutputError(f"invalid action: {exc}", raw=str(data)[:500]) from None
    state = data.get("current_state")
    return NavigatorOutput(state if isinstance(state, dict) else {}, actions, data)


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def state_message(state: Any, tabs: list[ListedTab], current_tab: int, step: int, max_steps: int,
                  results: list[str]) -> str:
    """Nanobrowser's browser-state message: tabs, elements, step, and the previous actions' results.

    Everything the page controls (its title and URL, every tab's title and URL, the elements, and
    the action results, which quote page text) is neutralized and inside one untrusted block;
    only our own framing and the step counter are outside it."""
    return "\n".join([
        "[Task history memory ends]",
        "[Current state starts here]",
        "The following is one-time information - if you need to remember it write it to memory:",
        dom.wrap(page_view(state, tabs, current_tab, results)),
        f"Current step: {step}/{max_steps}  Current date and time: {datetime.now():%Y-%m-%d %H:%M}",
    ])


def page_view(state: Any, tabs: list[ListedTab], current_tab: int, results: list[str]) -> str:
    """The page part of the state message, neutralized but not yet wrapped: the tabs, the element
    index and the results' lines (also what an interactive session's ``get_state`` shows)."""
    current = next((t for t in tabs if t.id == current_tab), ListedTab(current_tab, state.url, state.title))
    others = "\n".join(f"  - {_tab(t)}" for t in tabs if t.id != current_tab)
    return "\n".join([
        f"Current tab: {_tab(current)}",
        "Other available tabs:",
        others or "  (none)",
        "Interactive elements from top layer of the current page inside the viewport:",
        state.to_prompt(wrapped=False) if state.elements else "empty page",
        *(dom.neutralize(line) for line in results),
    ])


def _tab(tab: ListedTab) -> str:
    return f"{{id: {tab.id}, url: {dom.neutralize(tab.url)}, title: {dom.neutralize(tab.title)}}}"


def format_results(results: list[ActionReport]) -> list[str]:
    """``Action result i/n: …`` / ``Action error i/n: …`` lines (errors only by their last line)."""
    lines = []
    for i, report in enumerate(results, start=1):
        ok, text = report.ok, report.text
        if ok:
            lines.append(f"Action result {i}/{len(results)}: {text}")
        else:
            lines.append(f"Action error {i}/{len(results)}: ...{text.strip().splitlines()[-1] if text.strip() else ''}")
    return lines


def reduced_state(step: int, url: str, title: str, results: list[str]) -> str:
    """What an earlier step's state message shrinks to once the step is over (page-derived, so wrapped)."""
    lines = [f"url: {url}, title: {title}", *results]
    return f"[State at step {step}]\n" + dom.wrap(dom.neutralize("\n".join(lines)))
