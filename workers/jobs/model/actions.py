"""One pydantic schema per action: what the model (or a script) may ask for, validated.

Every action has an ``intent``: a few words of why, which the model writes first and which make
step records readable. Indexes are the ``[n]`` of the serialized page state.

The schemas live in the job kernel, not with the agent, so that the API checks a script's actions
(``validate_script``) without loading the agent or its LLM stack; the agent registers one
executor per name in ``ACTION_PARAMS`` (``workers.agent.actions.registry``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workers.jobs.model.locators import Locator
from workers.jobs.model.result import ActionRecord
from workers.jobs.model.spec import MAX_INPUT_FILES
from workers.jobs.model.status import Outcome

# What a script may name an element by instead of an index. The navigator only ever uses indexes,
# so these fields are left out of the schema the model reads (``params_schema(for_model=True)``).
LOCATOR_FIELDS = ("selector", "text", "role", "name", "locator")


class ActionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    intent: str = Field("", description="why this action, in a few words")


class GoToUrl(ActionParams):
    url: str = Field(description="absolute http(s) URL to open in the current tab")


class Search(ActionParams):
    query: str = Field(min_length=1, description="search query")


class GoBack(ActionParams):
    pass


class Wait(ActionParams):
    seconds: float = Field(3, ge=0, le=60, description="seconds to wait")


class ElementRef(ActionParams):
    """An element named by its index, or (in scripts) by a CSS selector, role and name, or a locator.

    Exactly one way must be given (``optional_target``: at most one). ``text`` as a way to name
    the element exists only on actions where ``text`` means nothing else (``ElementRefByText``).
    """

    index: int | None = Field(None, ge=0, description="index of the element in the page state, the n of [n]")
    selector: str | None = Field(None, min_length=1, max_length=2000,
                                 description="CSS selector matching exactly one element of the top document (scripts)")
    role: str | None = Field(None, min_length=1, max_length=64,
                             description="ARIA role of the element, e.g. 'button' (scripts; with or without name)")
    name: str | None = Field(None, min_length=1, max_length=200,
                             description="accessible name of the element, with role (scripts)")
    locator: Locator | None = Field(None, description="a recorded locator (a step's actions[].locator) (scripts)")

    optional_target: ClassVar[bool] = False

    def ways(self) -> list[str]:
        """The ways this action names its element (one when valid; none for a page-wide scroll)."""
        ways = [w for w in ("index", "selector", "role", "locator") if getattr(self, w) is not None]
        return ways + (["text"] if self.by_text() is not None else [])

    def by_text(self) -> str | None:
        """The visible text naming the element, where ``text`` names it (``ElementRefByText``)."""
        return None

    @property
    def by_locator(self) -> bool:
        """Whether the element is named other than by index (the page must be searched for it)."""
        return bool(self.ways()) and self.index is None

    @model_validator(mode="after")
    def _one_way(self) -> ElementRef:
        ways = self.ways()
        if self.name is not None and self.role is None:
            raise ValueError("name: give role with it (e.g. {\"role\": \"button\", \"name\": \"Add to cart\"})")
        if self.selector is not None and not self.selector.strip():
            raise ValueError("selector: is blank")
        if self.selector is not None and any(c in self.selector for c in "\x00\n\r"):
            raise ValueError("selector: must be one line of CSS")
        if len(ways) > 1:
            raise ValueError(f"{ways[1]}: give one of index, selector, {self._text_way()}role (+name) or locator, not "
                             f"{' and '.join(ways)}")
        if not ways and not self.optional_target:
            raise ValueError(f"index: Field required (or give selector, {self._text_way()}role (+name) or locator)")
        return self

    def _text_way(self) -> str:
        return "text, " if isinstance(self, ElementRefByText) else ""


class ElementRefByText(ElementRef):
    text: str | None = Field(None, min_length=1, max_length=200,
                             description="visible text (or accessible name) of the element (scripts)")

    def by_text(self) -> str | None:
        return self.text


class ClickElement(ElementRefByText):
    xpath: str | None = Field(None, description="ignored; kept for Nanobrowser compatibility")


class InputText(ElementRef):
    text: str = Field(description="text that replaces the field's content")
    xpath: str | None = Field(None, description="ignored; kept for Nanobrowser compatibility")


class GetDropdownOptions(ElementRefByText):
    pass


class SelectDropdownOption(ElementRef):
    text: str = Field(description="exact text of the option to select")


class OpenTab(ActionParams):
    url: str = Field(description="absolute http(s) URL to open in a new tab")


class SwitchTab(ActionParams):
    tab_id: int = Field(ge=0, description="id of an open tab")


class CloseTab(ActionParams):
    tab_id: int = Field(ge=0, description="id of an open tab")


class ScrollTarget(ElementRefByText):
    """Scrolls the page, or the scrollable container of the element named (by index or locator)."""

    optional_target: ClassVar[bool] = True
    index: int | None = Field(None, ge=0, description="scroll this element's container instead of the page")


class ScrollToPercent(ScrollTarget):
    y_percent: float = Field(ge=0, le=100, description="0 is the top, 100 the bottom")


class ScrollToTop(ScrollTarget):
    pass


class ScrollToBottom(ScrollTarget):
    pass


class PreviousPage(ScrollTarget):
    pass


class NextPage(ScrollTarget):
    pass


class ScrollToText(ActionParams):
    text: str = Field(min_length=1, description="text to scroll into view")
    nth: int = Field(1, ge=1, description="which occurrence, 1 for the first")


class SendKeys(ActionParams):
    keys: str = Field(min_length=1, description="keys like 'Enter', 'Escape', 'Control+a', or text to type")


class UploadFile(ElementRefByText):
    files: list[str] = Field(min_length=1, max_length=MAX_INPUT_FILES, description=(
        "names of the job's input files to put into the file input (the task lists them); no other file can be "
        "uploaded"))


class RequestHuman(ActionParams):
    reason: str = Field(min_length=1, max_length=500, description=(
        "what the human should do, shown to the operator (e.g. 'solve the captcha', 'enter the SMS code', "
        "'confirm the payment'); never a secret"))


class CacheContent(ActionParams):
    content: str = Field(description="findings to remember for later steps")


class Done(ActionParams):
    text: str = Field("", description="the answer to the task, with everything found")
    success: bool = Field(True, description="false if the task could not be fully completed")
    evidence: list[str] | None = Field(None, description=(
        "exact quotes from the pages (text, figures, the URL) that show the answer or that the task was done"))
    reason: Outcome | None = Field(None, description=(
        "when success is false, why: incomplete (gave up or out of steps; text holds what was found), "
        "login_required (the site asks to sign in and the task gives no credentials), refused (harmful or "
        "disallowed task), blocked_by_site (captcha or bot wall)"))

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> Any:
        return evidence_list(value)

    @property
    def outcome(self) -> Outcome:
        """``complete``, or why the task is not done; a failure reason wins over ``success``."""
        if self.reason is not None and self.reason is not Outcome.complete:
            return self.reason
        return Outcome.complete if self.success else Outcome.incomplete


def evidence_list(value: Any) -> Any:
    """A model's evidence as a list of quotes: one string is one quote, none is none (models write
    all three shapes; the checks read a list)."""
    if value is None:
        return None
    if value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v if isinstance(v, str) else str(v) for v in value if v is not None]
    return value


class ExtractContent(ActionParams):
    goal: str = Field("", description="what to extract from the page")


class ExtractFields(ActionParams):
    fields: dict[str, str] = Field(min_length=1, description="name -> CSS selector whose text is read")
    all: bool = Field(False, description="read every match as a list instead of the first match")


def params_schema(model: type[ActionParams], *, for_model: bool = False) -> dict[str, Any]:
    """The JSON schema of an action's parameters, inlined (no $defs) for tool calling.

    ``for_model``: as the navigator reads it: elements by index only (no script locators), and the
    index required where the action needs an element."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema = _inline(schema, schema.pop("$defs", {}))
    props = schema.get("properties", {})
    for prop in props.values():
        prop.pop("title", None)
    if for_model and issubclass(model, ElementRef):
        keep = {k: v for k, v in props.items() if k not in LOCATOR_FIELDS or k in _own_fields(model)}
        schema["properties"] = keep
        if not model.optional_target:
            keep["index"] = {"type": "integer", "minimum": 0, "description": keep["index"]["description"]}
            schema["required"] = ["index", *[r for r in schema.get("required", []) if r != "index"]]
    return schema


def _own_fields(model: type[ElementRef]) -> set[str]:
    """Fields whose meaning is the action's own (``text`` of input_text), not a way to name the element."""
    return {"text"} if not issubclass(model, ElementRefByText) and "text" in model.model_fields else set()


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every local ``$ref`` replaced by its definition (enums, nested models)."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = {k: v for k, v in defs[ref.rsplit("/", 1)[1]].items() if k != "title"}
        return _inline(found, defs)
    return {key: _inline(value, defs) for key, value in node.items()}


ACTION_PARAMS: dict[str, type[ActionParams]] = {
    "go_to_url": GoToUrl,
    "search": Search,
    "go_back": GoBack,
    "wait": Wait,
    "click_element": ClickElement,
    "input_text": InputText,
    "get_dropdown_options": GetDropdownOptions,
    "select_dropdown_option": SelectDropdownOption,
    "open_tab": OpenTab,
    "switch_tab": SwitchTab,
    "close_tab": CloseTab,
    "scroll_to_percent": ScrollToPercent,
    "scroll_to_top": ScrollToTop,
    "scroll_to_bottom": ScrollToBottom,
    "previous_page": PreviousPage,
    "next_page": NextPage,
    "scroll_to_text": ScrollToText,
    "send_keys": SendKeys,
    "upload_file": UploadFile,
    "cache_content": CacheContent,
    "request_human": RequestHuman,
    "done": Done,
    "extract_content": ExtractContent,
    "extract_fields": ExtractFields,
}
"""Every action a navigator or a script may name, with its parameters."""


@dataclass(frozen=True)
class ParsedAction:
    """One action of a script (or a model's answer) read: its name and its validated parameters."""

    name: str
    params: ActionParams


def parse_action(item: Any, where: str = "action") -> ParsedAction:
    """``{"name": {params}}`` -> its name and validated params; ValueError names what is wrong."""
    if not isinstance(item, dict) or len(item) != 1:
        raise ValueError(f"{where}: must be an object with exactly one action name, like {{\"click_element\": {{...}}}}")
    name, raw = next(iter(item.items()))
    model = ACTION_PARAMS.get(name)
    if model is None:
        raise ValueError(f"{where}: unknown action {name!r} (known: {', '.join(sorted(ACTION_PARAMS))})")
    try:
        params = model.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise ValueError(f"{where}.{name}: {problems}") from None
    return ParsedAction(name, params)


def _problem(error: Any) -> str:
    """``field F: message``. A check across fields (a model validator) has no location of its own:
    its message starts with the field it is about (``index: Field required ...``), which is used."""
    loc = ".".join(map(str, error["loc"]))
    message = error["msg"]
    prefix = "Value error, "
    if not loc and message.startswith(prefix) and ": " in message:
        loc, message = message[len(prefix):].split(": ", 1)
    elif loc and message.startswith(prefix):
        message = message[len(prefix):]
    return f"field {loc or '(params)'}: {message}"


def validate_script(script: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script with every action's params validated and defaults filled in."""
    if not isinstance(script, list) or not script:
        raise ValueError("script: must be a non-empty list of actions")
    normalised = []
    for i, item in enumerate(script):
        parsed = parse_action(item, f"script[{i}]")
        normalised.append({parsed.name: parsed.params.model_dump(exclude_none=True)})
    return normalised


def replay_action(record: ActionRecord) -> dict[str, Any]:
    """A recorded action as a script action naming its element by the recorded locator instead of
    the index (which meant something only on the page it was read from). ValueError when the
    action named an element but its record holds no locator."""
    model = ACTION_PARAMS.get(record.name)
    if model is None:
        raise ValueError(f"unknown action {record.name!r}")
    if not issubclass(model, ElementRef):
        return {record.name: dict(record.params)}
    ways = {"index", "xpath", "selector", "role", "name", "locator"} | (
        {"text"} if issubclass(model, ElementRefByText) else set())
    params = {k: v for k, v in record.params.items() if k not in ways}
    if record.locator is not None:
        params["locator"] = record.locator.model_dump(exclude_none=True)
    elif any(k in record.params for k in ways - {"xpath"}):
        raise ValueError(f"{record.name}: the record names an element but holds no locator")
    return {record.name: params}
