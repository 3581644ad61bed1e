"""The demo shop changed the way sites change, and a scripted model that searches either version.

``SwitchableShop.change()`` serves the demo shop (``daemon.demo``) with its classes renamed, a banner inserted
above the search button, the button's text changed and search results in reverse order: what a
recipe recorded on the demo shop must heal on. ``ShopModel`` is the scripted LLM of the recipe
tests and ``bench.replay``: it types the task's quoted query into the search field, submits it and
reads the result cards with ``extract_fields`` (using the selectors of whichever shop it is on),
then says done; the planner confirms once the navigator said done. It counts every request.
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import urlsplit

from daemon.demo import DemoSite
from tests.support.llm_server import Reply, offered_tool

DEMO_FIELDS = {"names": ".card .name", "prices": ".card .price"}
CHANGED_FIELDS = {"names": ".tile .title", "prices": ".tile .cost"}
CARD = re.compile(r'<div class="card product">.*?</div>')
QUOTED = re.compile(r'"([^"]+)"')
ELEMENT = re.compile(r"^\s*\[(\d+)\](.*)$", re.MULTILINE)
TAB_URL = re.compile(r"Current tab: \{id: \d+, url: (\S+?),")


def changed(page: str) -> str:
    """A demo page as the changed shop serves it."""
    cards = CARD.findall(page)
    if len(cards) > 1:  # the list reordered: the same cards, last first
        first = page.index(cards[0])
        end = page.index(cards[-1]) + len(cards[-1])
        page = page[:first] + "".join(reversed(cards)) + page[end:]
    page = page.replace('class="card product"', 'class="tile item"').replace('class="name"', 'class="title"')
    page = page.replace('class="price"', 'class="cost"')
    return page.replace('<button type="submit">Search</button>',
                        '<p class="banner">Free shipping this week on every order!</p> <button type="submit">Find</button>')


class SwitchableShop(DemoSite):
    """The demo shop until ``change()``: from then on, the changed shop (same address)."""

    def change(self, on: bool = True) -> None:
        self.httpd.transform = changed if on else (lambda page: page)  # type: ignore[attr-defined]


def task(query: str) -> str:
    return f'Search the shop for "{query}" and list the products found with their prices'


class ShopModel:
    """The scripted navigator and planner of a search-and-extract job (``task``) on either shop.

    ``fields`` are the selectors it reads result cards with (the demo shop's; a test that changes
    the shop sets the changed shop's, as a model reading the page would); ``delay`` is how long
    every answer takes.
    """

    def __init__(self, fields: dict[str, str] | None = None, delay: float = 0.0) -> None:
        self.fields = fields or DEMO_FIELDS
        self.delay = delay
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.calls += 1
        if offered_tool(request) == "PlannerOutput":
            return self._plan(request)
        return self._navigate(request)

    def _plan(self, request: dict[str, Any]) -> Reply:
        said_done = '"done"' in (last_model_output(request) or "")
        return Reply.tool({"observation": "the shop", "challenges": "", "done": said_done,
                           "next_steps": "" if said_done else "search, then read the results",
                           "final_answer": "the results were read" if said_done else "", "reasoning": "scripted",
                           "web_task": True}, delay=self.delay)

    def _navigate(self, request: dict[str, Any]) -> Reply:
        state = _last_user_text(request)
        url = TAB_URL.search(state)
        page = urlsplit(url.group(1)) if url else urlsplit("")
        if page.path == "/search":
            return self._act({"extract_fields": {"intent": "read the results", "fields": self.fields, "all": True}},
                             {"done": {"text": "listed the results", "success": True}})
        query = QUOTED.search(_task_text(request))
        box, button = _index(state, "<input"), _index(state, "<button")
        if box is None or button is None or query is None:
            return self._act({"done": {"text": "no search form found", "success": False}})
        if f"typed {query.group(1)!r}" in state:
            return self._act({"click_element": {"intent": "submit the search", "index": button}})
        return self._act({"input_text": {"intent": "type the query", "index": box, "text": query.group(1)}})

    def _act(self, *actions: dict[str, Any]) -> Reply:
        state = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "go on"}
        return Reply.tool({"current_state": state, "action": list(actions)}, delay=self.delay)


def _index(state: str, tag: str) -> int | None:
    found = next((m for m in ELEMENT.finditer(state) if m.group(2).lstrip().startswith(tag)), None)
    return int(found.group(1)) if found else None


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def _last_user_text(request: dict[str, Any]) -> str:
    return next((_content(m) for m in reversed(request["messages"]) if m["role"] == "user"), "")


def _task_text(request: dict[str, Any]) -> str:
    """The task inside the user request (between triple quotes)."""
    text = next((_content(m) for m in request["messages"] if m["role"] == "user" and "<user_request>" in _content(m)), "")
    return text.split('"""')[1] if text.count('"""') >= 2 else text


def last_model_output(request: dict[str, Any]) -> Any:
    """The navigator's last answer in the history (an assistant turn holding its JSON), or None."""
    for message in reversed(request["messages"]):
        if message["role"] == "assistant" and not str(message["content"]).startswith("<plan>"):
            return message["content"]
    return None
