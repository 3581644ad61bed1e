"""``PageState``: the result of one capture, and what the agent reads from it."""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from typing import Any

import dom.prompt as prompt
import dom.text as text
from dom.frames import Frame
from dom.model import Element, Indexes, Link, ScrollInfo


class PageState:
    """Offered elements by index, the lines of the prompt, and the frames for text and links."""

    def __init__(self, *, url: str, title: str, indexes: Indexes, scroll: ScrollInfo, lines: list[prompt.Line],
                 frames: list[Frame], viewport_expansion: int) -> None:
        self.url, self.title = url, title
        self.elements: dict[int, Element] = indexes.elements
        self.new_indexes = indexes.new
        self.scroll = scroll
        self.viewport_expansion = viewport_expansion
        self.numbering = indexes.numbering
        self._lines = lines
        self._frames = frames
        # Rendered once per capture: a step reads the element lines for the planner, the history and
        # the loop check, and the page's text twice (the capture is not changed after it is made).
        self._rendered: dict[bool, str] = {}  # with the "new" marks, and without
        self._text: str | None = None

    def __repr__(self) -> str:
        return f"<PageState {self.url!r} elements={len(self.elements)} new={len(self.new_indexes)}>"

    def element(self, index: int) -> Element | None:
        return self.elements.get(index)

    def to_prompt(self, *, wrapped: bool = True) -> str:
        """Nanobrowser's element list between scroll lines, the page part in an untrusted wrapper
        (``wrapped=False``: neutralized but not wrapped, for a caller that wraps more with it)."""
        return prompt.render(self._element_lines(marked=True), self.scroll, wrapped=wrapped)

    def fingerprint(self) -> str:
        """What the page shows the agent, as a short digest: the URL, the scroll position and the
        element lines without their "new" marks (a page seen again unchanged has the same one)."""
        body = prompt.render(self._element_lines(marked=False), self.scroll, wrapped=False)
        return hashlib.sha256(f"{self.url}\n{body}".encode("utf-8", "replace")).hexdigest()[:32]

    def elements_text(self) -> str:
        """Only the element lines (no scroll lines, no wrapper): for logs and debugging."""
        return self._element_lines(marked=True)

    def _element_lines(self, *, marked: bool) -> str:
        body = self._rendered.get(marked)
        if body is None:
            body = prompt.render_lines(self._lines, self.elements, self.new_indexes if marked else set())
            self._rendered[marked] = body
        return body

    def text(self) -> str:
        """The page's readable text as light markdown, every frame, whatever the scroll position."""
        if self._text is None:
            self._text = text.markdown(self._frames)
        return self._text

    def links(self) -> list[Link]:
        return text.links(self._frames)

    def canonical(self) -> str | None:
        """The URL the page names as its canonical one (``<link rel=canonical>``), if any."""
        return text.canonical(self._frames)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "title": self.title,
            "scroll": asdict(self.scroll),
            "elements": [el.to_json() for el in self.elements.values()],
        }
