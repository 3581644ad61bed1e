"""One pydantic schema per action: what the model (or a script) may ask for, validated.

Every action has an ``intent``: a few words of why, which the model writes first and which make
step records readable. Indexes are the ``[n]`` of the serialized page state.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Index = Field(description="index of the element in the page state, the n of [n]", ge=0)


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


class ClickElement(ActionParams):
    index: int = Index
    xpath: str | None = Field(None, description="ignored; kept for Nanobrowser compatibility")


class InputText(ActionParams):
    index: int = Index
    text: str = Field(description="text that replaces the field's content")
    xpath: str | None = Field(None, description="ignored; kept for Nanobrowser compatibility")


class GetDropdownOptions(ActionParams):
    index: int = Index


class SelectDropdownOption(ActionParams):
    index: int = Index
    text: str = Field(description="exact text of the option to select")


class OpenTab(ActionParams):
    url: str = Field(description="absolute http(s) URL to open in a new tab")


class SwitchTab(ActionParams):
    tab_id: int = Field(ge=0, description="id of an open tab")


class CloseTab(ActionParams):
    tab_id: int = Field(ge=0, description="id of an open tab")


class ScrollToPercent(ActionParams):
    y_percent: float = Field(ge=0, le=100, description="0 is the top, 100 the bottom")
    index: int | None = Field(None, ge=0, description="scroll this element's container instead of the page")


class ScrollTarget(ActionParams):
    index: int | None = Field(None, ge=0, description="scroll this element's container instead of the page")


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


class CacheContent(ActionParams):
    content: str = Field(description="findings to remember for later steps")


class Done(ActionParams):
    text: str = Field("", description="the answer to the task, with everything found")
    success: bool = Field(True, description="false if the task could not be fully completed")


class ExtractContent(ActionParams):
    goal: str = Field("", description="what to extract from the page")


class ExtractFields(ActionParams):
    fields: dict[str, str] = Field(min_length=1, description="name -> CSS selector whose text is read")
    all: bool = Field(False, description="read every match as a list instead of the first match")


def params_schema(model: type[ActionParams]) -> dict[str, Any]:
    """The JSON schema of an action's parameters, inlined (no $defs) for tool calling."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema
