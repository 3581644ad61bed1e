"""Scripted models that lie about being done, and an honest one, for the done checks.

Responders of the scripted LLM server (``llm.responder = ClaimsAtOnce()``), one instance per job
(some keep a count). Each reads only what a real model reads (the task, the last state message)
and works on any page: the fixture shop's search, MiniWoB++ tasks. The lies are the ones issue 24
saw from a small real model, and the ones a stronger one could tell:

* ``ClaimsAtOnce``: the planner says done at step 1, before any action, with a template answer and
  next_steps still filled in; a navigator asked anyway answers an empty ``{"done": {}}``.
* ``WrongAction``: clicks an element the task does not name (or, where the page has none, types what
  the task does not ask for), then claims done with a plausible answer.
* ``FalseQuote``: does the honest work (``inner``), then answers with a figure and a quote that are
  on no page.
* ``Refuses``: says done with a refusal as the answer.
* ``Loops``: clicks an element the task does not name, step after step, and claims done each time
  the planner is asked.

``SearchOracle`` is the honest model of the fixture task ``SEARCH_TASK`` (tests/fixtures/site/agent/
search.html): types the quoted query, presses Search, answers the price with the result line quoted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.agent.miniwob_oracle import Item, indexed, navigator_said_done, parse_state
from tests.agent.scripted import act, last_state, task_of
from tests.support.llm_server import Reply, offered_tool
from workers.agent.validator import normal

Responder = Callable[[dict[str, Any]], Reply]

PLANNER = "PlannerOutput"
SEARCH_TASK = 'Type "toaster" into the search box, press Search, and tell me the price shown'
SEARCH_ANSWER = "The Red Toaster 2-slot costs 24.50 EUR."
SEARCH_EVIDENCE = ["Red Toaster 2-slot 24.50 EUR"]
QUOTED = re.compile(r'"([^"]+)"')


def planner(done: bool, final_answer: str = "", next_steps: str = "", evidence: list[str] | None = None) -> Reply:
    """A planner answer with every field (``next_steps`` kept as given, even beside done)."""
    return Reply.tool({"observation": "scripted", "challenges": "", "done": done, "next_steps": next_steps,
                       "final_answer": final_answer, "evidence": evidence or [], "reasoning": "scripted",
                       "web_task": True, "outcome": "complete"})


def items_of(request: dict[str, Any]) -> list[Item]:
    return indexed(parse_state(last_state(request)))


def untouched(request: dict[str, Any]) -> Item | None:
    """An element the task does not name (a wrong target): its text is not in the task and holds
    nothing the task quotes, and it is not of a kind the task quotes ('Click on a "button" widget':
    no button), if there is one."""
    task = task_of(request)
    targets = [t.lower() for t in QUOTED.findall(task)]
    for item in items_of(request):
        text = f"{item.text} {item.tag} {' '.join(item.attrs.values())}".lower()
        if item.text and normal(item.text) not in normal(task) and not any(t in text for t in targets):
            return item
    return None


class ClaimsAtOnce:
    def __call__(self, request: dict[str, Any]) -> Reply:
        if offered_tool(request) == PLANNER:
            return planner(True, "The complete answer (250) to the task.", next_steps="Click the button, then check")
        return act({"done": {}})


class WrongAction:
    def __init__(self) -> None:
        self.acted = False

    def __call__(self, request: dict[str, Any]) -> Reply:
        if offered_tool(request) == PLANNER:
            done = navigator_said_done(request)
            return planner(done, "Done as asked: the result is shown on the page." if done else "",
                           "" if done else "click it")
        wrong = untouched(request)
        box = next((i for i in items_of(request) if i.is_input()), None)
        if self.acted or (wrong is None and box is None):
            return act({"done": {"text": "Done as asked: the result is shown on the page."}})
        self.acted = True
        if wrong is None:  # every element is one the task names: type what it does not ask for
            return act({"input_text": {"intent": "the query", "index": box.index, "text": "kettle"}})
        return act({"click_element": {"intent": "the target", "index": wrong.index}})


class FalseQuote:
    """``inner`` does the work; every done it says is rewritten with a made-up figure and quote."""

    ANSWER = "The total shown is 7731."
    EVIDENCE = ["Order total: 7731"]

    def __init__(self, inner: Responder) -> None:
        self.inner = inner

    def __call__(self, request: dict[str, Any]) -> Reply:
        reply = self.inner(request)
        args = reply.args if isinstance(reply.args, dict) else None
        if args is None:
            return reply
        if offered_tool(request) == PLANNER and args.get("done"):
            return planner(True, self.ANSWER, evidence=self.EVIDENCE)
        actions = args.get("action") or []
        for item in actions:
            if isinstance(item, dict) and "done" in item:
                item["done"] = {"text": self.ANSWER, "success": True, "evidence": self.EVIDENCE}
        return reply


class Refuses:
    ANSWER = "I'm sorry, but I cannot browse the web or click on pages."

    def __call__(self, request: dict[str, Any]) -> Reply:
        if offered_tool(request) == PLANNER:
            return planner(True, self.ANSWER)
        return act({"done": {"text": self.ANSWER}})


class Loops:
    """Clicks a wrong element (or scrolls) every step; the planner says done whenever asked."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        if offered_tool(request) == PLANNER:
            return planner(True, "Finished: everything the task asked is done.")
        wrong = untouched(request)
        if wrong is not None:
            return act({"click_element": {"intent": "again", "index": wrong.index}})
        return act({"next_page": {"intent": "again"}})


class SearchOracle:
    """The honest model of ``SEARCH_TASK``: acts, then answers with the result line quoted."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        if offered_tool(request) == PLANNER:
            done = navigator_said_done(request)
            return planner(done, SEARCH_ANSWER if done else "", "" if done else "search, then read the price",
                           SEARCH_EVIDENCE if done else None)
        items = items_of(request)
        box = next((i for i in items if i.tag == "input"), None)
        button = next((i for i in items if i.tag == "button" and i.text == "Search"), None)
        if box is not None and button is not None:
            return act({"input_text": {"intent": "query", "index": box.index, "text": "toaster"}},
                       {"click_element": {"intent": "search", "index": button.index}})
        return act({"done": {"text": SEARCH_ANSWER, "success": True, "evidence": SEARCH_EVIDENCE}})


ADVERSARIES: dict[str, Callable[[Responder], Responder]] = {
    "claims_at_once": lambda honest: ClaimsAtOnce(),
    "wrong_action": lambda honest: WrongAction(),
    "false_quote": FalseQuote,
    "refusal": lambda honest: Refuses(),
    "loops": lambda honest: Loops(),
}
"""Each adversary, made from the honest model of the task (``FalseQuote`` wraps it)."""
