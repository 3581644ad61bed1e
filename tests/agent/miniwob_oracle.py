"""A scripted ORACLE model for MiniWoB++: a responder of the scripted LLM server.

It reads what a real model would read (the task utterance in the <user_request> message, the
serialized page state in the last state message) and answers the navigator with actions on the
indexes it finds there, the planner with a plan that is done once the navigator said done. It
never looks at the page itself: if the state serialization loses what a task needs, it fails.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.agent.scripted import act, last_state, plan, task_of
from tests.support.llm_server import Reply, offered_tool

Action = dict[str, Any]

_LINE = re.compile(r"^(\t*)(\*?)\[(\d+)\]<(\w+)(.*) />$")
_ATTR = re.compile(r"(\w[\w-]*)=(.*?)(?= \w[\w-]*=|$)")


@dataclass
class Item:
    """One line of the state: an indexed element, or loose text (index None)."""

    index: int | None
    tag: str = ""
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""

    def is_input(self, *types: str) -> bool:
        kind = self.attrs.get("type", "text")
        return self.tag == "input" and (kind in types if types else kind in ("text", "password", "email", "number"))


def parse_state(state: str) -> list[Item]:
    """The lines inside the untrusted wrapper of a state message."""
    body = re.search(r"<(untrusted_content_\w+)>\n(.*?)\n</\1>", state, re.DOTALL)
    items = []
    for line in (body.group(2).splitlines() if body else []):
        m = _LINE.match(line)
        if not m:
            items.append(Item(None, text=line.strip()))
            continue
        head, _, text = m.group(5).partition(">")
        attrs = dict(_ATTR.findall(head.strip()))
        items.append(Item(int(m.group(3)), m.group(4), attrs, text.strip()))
    return items


# --- finding things ---------------------------------------------------------------------------

def indexed(items: list[Item]) -> list[Item]:
    return [i for i in items if i.index is not None]


def find(items: list[Item], text: str, tags: tuple[str, ...] = ()) -> Item | None:
    """The element whose text is ``text`` (exact first, then case-insensitively)."""
    pool = [i for i in indexed(items) if not tags or i.tag in tags]
    for same in (lambda a, b: a == b, lambda a, b: a.lower() == b.lower()):
        for item in pool:
            if same(item.text, text):
                return item
    return None


def label_after(items: list[Item], item: Item) -> str:
    pos = items.index(item)
    return items[pos + 1].text if pos + 1 < len(items) and items[pos + 1].index is None else ""


def text_before(items: list[Item], item: Item) -> str:
    pos = items.index(item)
    for prev in reversed(items[:pos]):
        if prev.index is None:
            return prev.text
        if prev.text:
            return prev.text
    return ""


def loose(items: list[Item]) -> list[str]:
    return [i.text for i in items if i.index is None]


def click(item: Item | None) -> list[Action]:
    return [{"click_element": {"index": item.index}}] if item else []


def type_into(item: Item | None, text: str) -> list[Action]:
    return [{"input_text": {"index": item.index, "text": text}}] if item else []


def submit(items: list[Item], *names: str) -> list[Action]:
    for name in names or ("Submit",):
        found = find(items, name)
        if found:
            return click(found)
    return []


def text_fields(items: list[Item]) -> list[Item]:
    return [i for i in indexed(items) if i.is_input() or i.tag == "textarea"]


def nth(word: str) -> int:
    return int(re.match(r"\d+", word).group(0))


# --- solvers: (utterance match, state) -> actions ---------------------------------------------

def s_click_named(m: re.Match[str], items: list[Item]) -> list[Action]:
    return click(find(items, m.group(1), ("button", "span", "a", "div")))


def s_click_sequence(m: re.Match[str], items: list[Item]) -> list[Action]:
    return click(find(items, "ONE")) + click(find(items, "TWO"))


def s_only_button(m: re.Match[str], items: list[Item]) -> list[Action]:
    return click(next((i for i in indexed(items) if i.tag == "button"), None))


def s_select_labelled(m: re.Match[str], items: list[Item]) -> list[Action]:
    wanted = [] if m.group(1) == "nothing" else [w.strip() for w in m.group(1).split(",")]
    boxes = [i for i in indexed(items) if i.is_input("checkbox", "radio")]
    actions = [a for box in boxes if label_after(items, box) in wanted for a in click(box)]
    return actions + submit(items) if len(actions) == len(wanted) else []


def s_select_from_list(m: re.Match[str], items: list[Item]) -> list[Action]:
    select = next((i for i in indexed(items) if i.tag == "select"), None)
    if select is None:
        return []
    return [{"select_dropdown_option": {"index": select.index, "text": m.group(1)}}] + submit(items)


def s_expand_and_submit(m: re.Match[str], items: list[Item]) -> list[Action]:
    closed = next((i for i in indexed(items) if i.tag == "h3" and i.attrs.get("aria-expanded") == "false"), None)
    return click(closed) + submit(items)


WIDGETS: dict[str, Callable[[Item], bool]] = {
    "checkbox": lambda i: i.is_input("checkbox"),
    "radio": lambda i: i.is_input("radio"),
    "textarea": lambda i: i.tag == "textarea",
    "text": lambda i: i.is_input("text"),
    "button": lambda i: i.tag == "button",
}


def s_widget(m: re.Match[str], items: list[Item]) -> list[Action]:
    test = WIDGETS.get(m.group(1))
    return click(next((i for i in indexed(items) if test and test(i)), None))


def s_focus_nth(m: re.Match[str], items: list[Item]) -> list[Action]:
    fields = text_fields(items)
    n = nth(m.group(1)) if m.groups() else 1
    return click(fields[n - 1]) if len(fields) >= n else []


def s_enter_text(m: re.Match[str], items: list[Item]) -> list[Action]:
    fields = text_fields(items)
    text = m.group(1)
    if len(m.groups()) > 1:
        text = text.lower() if m.group(2) == "lower" else text.upper()
    return type_into(fields[0] if fields else None, text) + submit(items)


def s_password_twice(m: re.Match[str], items: list[Item]) -> list[Action]:
    fields = [i for i in indexed(items) if i.is_input("password")]
    return [a for f in fields for a in type_into(f, m.group(1))] + submit(items)


def s_login(m: re.Match[str], items: list[Item]) -> list[Action]:
    user = next((i for i in indexed(items) if i.is_input("text")), None)
    password = next((i for i in indexed(items) if i.is_input("password")), None)
    return type_into(user, m.group(1)) + type_into(password, m.group(2)) + submit(items, "Login")


def s_find_word(m: re.Match[str], items: list[Item]) -> list[Action]:
    field_ = text_fields(items)[0]
    words = text_before(items, field_).split()
    n = nth(m.group(1))
    return type_into(field_, re.sub(r"[^A-Za-z0-9]", "", words[n - 1])) + submit(items) if len(words) >= n else []


def s_read_table(m: re.Match[str], items: list[Item]) -> list[Action]:
    texts = loose(items)
    if m.group(1) not in texts:
        return []
    value = texts[texts.index(m.group(1)) + 1]
    return type_into(text_fields(items)[0], value) + submit(items)


OPS = {"+": operator.add, "-": operator.sub, "x": operator.mul, "*": operator.mul, "/": operator.floordiv}


def s_arithmetic(m: re.Match[str], items: list[Item]) -> list[Action]:
    for text in loose(items):
        sum_ = re.fullmatch(r"(-?\d+) ([-+x*/]) (-?\d+) =", text)
        if sum_:
            value = OPS[sum_.group(2)](int(sum_.group(1)), int(sum_.group(3)))
            return type_into(text_fields(items)[0], str(value)) + submit(items)
    return []


def s_algebra(m: re.Match[str], items: list[Item]) -> list[Action]:
    for text in loose(items):
        eq = re.fullmatch(r"(-?\d+) ([-+]) x = (-?\d+)|x ([-+]) (-?\d+) = (-?\d+)", text)
        if eq and eq.group(1) is not None:
            a, op, c = int(eq.group(1)), eq.group(2), int(eq.group(3))
            x = c - a if op == "+" else a - c
        elif eq:
            op, b, c = eq.group(4), int(eq.group(5)), int(eq.group(6))
            x = c - b if op == "+" else c + b
        else:
            continue
        return type_into(text_fields(items)[0], str(x)) + submit(items)
    return []


def s_radio_and_number(m: re.Match[str], items: list[Item]) -> list[Action]:
    radios = [i for i in indexed(items) if i.is_input("radio")]
    fields = text_fields(items)
    r, f = nth(m.group(1)), nth(m.group(3))
    if len(radios) < r or len(fields) < f:
        return []
    return click(radios[r - 1]) + type_into(fields[f - 1], m.group(2)) + submit(items)


MOVIE_FIELDS = (("year", ("year", "date")), ("director", ("director",)), ("genre", ("genre",)))


def _field_key(label: str) -> str | None:
    label = label.lower()
    return next((k for k, words in MOVIE_FIELDS if any(w in label for w in words)), None)


def _adjacent_label(items: list[Item], item: Item, step: int) -> str:
    """The short loose text right before (step -1) or after (step 1) an element: its label."""
    pos = items.index(item) + step
    near = items[pos] if 0 <= pos < len(items) else None
    return near.text if near is not None and near.index is None and len(near.text) < 25 else ""


def s_movies(m: re.Match[str], items: list[Item]) -> list[Action]:
    values = {"genre": m.group(1), "director": m.group(2), "year": m.group(3)}
    fields = text_fields(items)
    for step in (-1, 1):  # labels above the fields in some layouts, below them in others
        keys = [_field_key(" ".join([f.attrs.get("placeholder", ""), _adjacent_label(items, f, step)])) for f in fields]
        if None not in keys and sorted(keys) == sorted(values):
            actions = [a for f, k in zip(fields, keys, strict=True) for a in type_into(f, values[k])]
            return actions + submit(items, "Submit", "Go!", "Search")
    return []


def s_odd_even(m: re.Match[str], items: list[Item]) -> list[Action]:
    actions: list[Action] = []
    for pos, item in enumerate(items):
        if item.index is not None and item.text == "Odd" and pos + 2 < len(items):
            number, even = items[pos + 1], items[pos + 2]
            if number.index is None and re.fullmatch(r"-?\d+", number.text):
                actions += click(item if int(number.text) % 2 else even)
    return actions + submit(items)


def s_find_link_behind(kind: str) -> Callable[[re.Match[str], list[Item]], list[Action]]:
    """Tabs or accordion sections: click the link if shown, else open the next tab/section."""

    def solve(m: re.Match[str], items: list[Item]) -> list[Action]:
        link = find(items, m.group(1), ("span", "a"))
        if link:
            return click(link)
        if kind == "tab":
            tabs = [i for i in indexed(items) if i.tag == "li" and i.attrs.get("role") == "tab"]
            current = next((k for k, t in enumerate(tabs) if "true" in (t.attrs.get("aria-selected"),
                                                                      t.attrs.get("aria-expanded"))), -1)
            target = tabs[current + 1] if current + 1 < len(tabs) else None
            return click(items[items.index(target) + 1] if target else None)
        sections = [i for i in indexed(items) if i.tag == "h3"]
        current = next((k for k, s in enumerate(sections) if s.attrs.get("aria-expanded") == "true"), -1)
        return click(sections[current + 1] if current + 1 < len(sections) else None)

    return solve


def s_menu_item(m: re.Match[str], items: list[Item]) -> list[Action]:
    return click(find(items, m.group(1))) or click(find(items, "Menu", ("button",)))


def s_menu_path(m: re.Match[str], items: list[Item]) -> list[Action]:
    path = re.split(r"\s*[>›]\s*", m.group(1))
    for name in reversed(path):
        found = find(items, name)
        if found:
            return click(found)
    return []


def s_transform(m: re.Match[str], items: list[Item]) -> list[Action]:
    """The characters shown between the utterance and the text field, one per line."""
    start = next((k for k, i in enumerate(items) if i.text.startswith("Type the text below")), None)
    if start is None:
        return []
    chars = []
    for item in items[start + 1:]:
        if item.index is not None:
            break
        chars.append(item.text)
    return type_into(text_fields(items)[0], "".join(chars)) + submit(items)


SOLVERS: list[tuple[str, Callable[[re.Match[str], list[Item]], list[Action]]]] = [
    (r'Click on the "(.+)" button\.', s_click_named),
    (r"Click button ONE, then click button TWO\.", s_click_sequence),
    (r"Click button (\w+)\.", s_click_named),
    (r"Click the button\.", s_only_button),
    (r"Click the (\w+) button\.", s_click_named),
    (r'Click on the link "(.+)"\.', s_click_named),
    (r'Close the dialog box by clicking the "x"\.', lambda m, items: click(find(items, "Close", ("button",)))),
    (r'Click the button in the dialog box labeled "x"\.', lambda m, items: click(find(items, "Close", ("button",)))),
    (r'Click the button in the dialog box labeled "(.+)"\.', s_click_named),
    (r"Select (.+) from the (?:scroll )?list and click Submit\.", s_select_from_list),
    (r"Select (.+?) and click Submit\.", s_select_labelled),
    (r"Click on Tab #(\d+)\.", lambda m, items: click(find(items, f"Tab #{m.group(1)}"))),
    (r"Expand the section below and click submit\.", s_expand_and_submit),
    (r'Click on a "(.+)" widget\.', s_widget),
    (r"Focus into the textbox\.", s_focus_nth),
    (r"Focus into the (\d+\w\w) input textbox\.", s_focus_nth),
    (r'Enter "(.*)" into the text field and press Submit\.', s_enter_text),
    (r'Type "(.*)" in all (lower|upper) case letters in the text input and press Submit\.', s_enter_text),
    (r'Enter the password "(.*)" into both text fields and press submit\.', s_password_twice),
    (r'Enter the username "(.*)" and the password "(.*)" into the text fields and press login\.', s_login),
    (r'Find the (\d+\w\w) word in the paragraph, type that into the textbox and press "Submit"\.', s_find_word),
    (r"Enter the value of (.+) into the text field and press Submit\.", s_read_table),
    (r"Solve the math problem and type your answer into the textbox\. Press submit when done\.", s_arithmetic),
    (r"Solve for x and type your answer into the textbox\. Press Submit when done\.", s_algebra),
    (r'Check the (\d+\w\w) radio button and enter the number "(.*)" into the (\d+\w\w) textbox\.', s_radio_and_number),
    (r"Search for (\w+) movies directed by (\w+) from year (\d+)\.", s_movies),
    (r"Mark the numbers below as odd or even and press submit when done\.", s_odd_even),
    (r'Switch between the tabs to find and click on the link "(.+)"\.', s_find_link_behind("tab")),
    (r'Expand the sections below, to find and click on the link "(.+)"\.', s_find_link_behind("section")),
    (r'Click the "Menu" button, and then find and click on the item labeled "(.+)"\.', s_menu_item),
    (r"Select (\S.*)", s_menu_path),
    (r"Type the text below into the text field and press Submit\.", s_transform),
]


def solve(utterance: str, items: list[Item]) -> list[Action]:
    for pattern, solver in SOLVERS:
        m = re.fullmatch(pattern, utterance)
        if m:
            return solver(m, items)
    return []


def episode_over(items: list[Item]) -> bool:
    """MiniWoB shows its START cover once an episode has ended."""
    return any(i.index is not None and i.text == "START" for i in items)


def navigator_said_done(request: dict[str, Any]) -> bool:
    """Whether the navigator's last answer in the history (an assistant turn holding its JSON) was done."""
    answers = [m["content"] for m in request["messages"]
               if m["role"] == "assistant" and not str(m["content"]).startswith("<plan>")]
    return bool(answers) and '"done"' in answers[-1]


MEMORY = "ProceduralMemory"


def summary() -> Reply:
    """The procedural-memory summary of a long episode (the steps are in the state; nothing to keep)."""
    return Reply.tool({"summary": "Working on the MiniWoB task on its page."})


def oracle(request: dict[str, Any]) -> Reply:
    """The responder: plans for the planner, actions (or done) for the navigator."""
    if offered_tool(request) == MEMORY:
        return summary()
    if offered_tool(request) == "PlannerOutput":
        done = navigator_said_done(request)
        return plan(done=done, final_answer="solved" if done else "")
    items = parse_state(last_state(request))
    actions = [] if episode_over(items) else solve(task_of(request), items)
    return act(*actions) if actions else act({"done": {"text": "solved", "success": True}})


DONE: Action = {"done": {"text": "solved", "success": True}}


class HorizonOracle:
    """The oracle as the rolling-horizon planner: the same solutions, ``horizon`` actions at a time.

    It re-solves from the state it is shown unless it is asked again only because the last plan's
    actions have all run (then it goes on with the rest of its solution), just as the navigator
    oracle re-solves whenever a sequence is cut short.
    """

    def __init__(self, horizon: int = 3) -> None:
        self.horizon = horizon
        self.rest: list[Action] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        if offered_tool(request) == MEMORY:
            return summary()
        state = last_state(request)
        items = parse_state(state)
        why = re.search(r"Replanning: (.*)", state)
        reason = why.group(1) if why else ""
        if episode_over(items) or "done was used" in reason:
            return horizon_plan([], done=True)
        if not (self.rest and "have all run" in reason):
            self.rest = solve(task_of(request), items) + [DONE]
        steps, self.rest = self.rest[:self.horizon], self.rest[self.horizon:]
        return horizon_plan(steps)


def horizon_plan(steps: list[Action], done: bool = False) -> Reply:
    return Reply.tool({"observation": "scripted", "done": done, "final_answer": "solved" if done else "",
                       "outcome": "complete", "steps": steps})
