"""Element identity that outlives a page: what a step records about the element it acted on.

An index (``[12]``) means something only in the page state it was read from. A ``Locator`` says
what the element *is* — its frame, tag, role and accessible name, stable attributes, text, the text
around it, a short CSS path, an XPath and its position among similar elements — so that a later
run (a recipe's replay, a script) can find the same control on a new load of a changed page.
``dom`` builds locators from a snapshot (``dom.identify``) and scores them against one
(``dom.refind``); this module is the shape they travel in: step records, recipes, scripts.

URLs in a locator keep only path, query and fragment: the same site answers on other hosts and
ports between runs (a test server's free port, a staging host), and that must not break a match.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_TEXT = 200  # characters of name, text and context a locator keeps
MAX_ATTRIBUTE = 500
MAX_PATH = 2000  # characters of a CSS path or an XPath
MAX_FRAMES = 10


class FrameHop(BaseModel):
    """One ``<iframe>`` on the way from the top document down to the element's document."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field("", max_length=MAX_PATH, description="path (and query) of the frame's document, no host")
    attributes: dict[str, str] = Field(default_factory=dict, description="stable attributes of the <iframe>")
    xpath: str = Field("", max_length=MAX_PATH, description="XPath of the <iframe> in its parent document")
    nth: int | None = Field(None, ge=1, description="position among the iframes of the parent document, 1 for the first")

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, value: dict[str, str]) -> dict[str, str]:
        return _checked_attributes(value)


class Locator(BaseModel):
    """How to find one element again; every field optional, so a script may give a few by hand."""

    model_config = ConfigDict(extra="forbid")

    frame_path: list[FrameHop] = Field(default_factory=list, max_length=MAX_FRAMES,
                                       description="iframes from the top document down; empty for the top document")
    tag: str = Field("", max_length=64, description="lower-case tag name, e.g. 'button'")
    role: str | None = Field(None, max_length=64, description="ARIA role (explicit or implied)")
    name: str = Field("", max_length=MAX_TEXT, description="accessible name")
    text: str = Field("", max_length=MAX_TEXT, description="visible text")
    attributes: dict[str, str] = Field(
        default_factory=dict, description="stable attributes: id (unless generated), name, type, placeholder, "
        "aria-label, data-testid, title, alt, href (path only)")
    context: str = Field("", max_length=MAX_TEXT, description="text around the element (its list item, row or card)")
    css: str = Field("", max_length=MAX_PATH, description="a short CSS path")
    xpath: str = Field("", max_length=MAX_PATH, description="XPath from the document (or shadow root)")
    nth: int | None = Field(None, ge=1, description="position among similar elements (same tag, role and name), 1 for "
                            "the first; leave it out to let only what the element is count")

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, value: dict[str, str]) -> dict[str, str]:
        return _checked_attributes(value)

    @model_validator(mode="after")
    def _identifies(self) -> Locator:
        if not (self.tag or self.role or self.name or self.text or self.attributes or self.css or self.xpath
                or self.context):
            raise ValueError("a locator needs at least one of tag, role, name, text, attributes, context, css, xpath")
        return self

    def summary(self) -> str:
        """A short human description, for errors and logs: ``button 'Add to cart' in frame /x.html``."""
        what = self.tag or self.role or "element"
        label = self.name or self.text or next(iter(self.attributes.values()), "") or self.css or self.xpath
        where = f" in frame {self.frame_path[-1].url or self.frame_path[-1].xpath}" if self.frame_path else ""
        return f"{what} {label[:60]!r}{where}" if label else f"{what}{where}"


def _checked_attributes(value: dict[str, str]) -> dict[str, str]:
    if len(value) > 20:
        raise ValueError("at most 20 attributes")
    for key, val in value.items():
        if not key or len(key) > 64 or len(val) > MAX_ATTRIBUTE:
            raise ValueError(f"attribute {key!r}: names are 1-64 characters, values at most {MAX_ATTRIBUTE}")
    return value
