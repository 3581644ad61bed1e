"""What one capture produces: the offered elements, their indexes, and the page around them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from cdp import CDPSession
    from dom.frames import Frame, FrameOwner, Rect

# Attributes that identify an element well enough to find it again on a changed page.
KEY_ATTRIBUTES = (
    "id", "name", "type", "role", "aria-label", "placeholder", "title", "alt", "href", "for", "value",
)


@dataclass(frozen=True)
class ScrollInfo:
    scroll_y: float
    page_height: float
    viewport_height: float
    pixels_above: float
    pixels_below: float


@dataclass(frozen=True)
class Link:
    text: str
    href: str


@dataclass(frozen=True)
class Scrollable:
    """A container whose content overflows it: how much is hidden above and below."""

    above: float
    below: float


@dataclass(frozen=True)
class NodeKey:
    """What keeps an index stable across captures: the frame and Chrome's backend node id."""

    frame_id: str
    backend_node_id: int


class Described(NamedTuple):
    """What the prompt says of an element: its tag, role, accessible name, text and attributes
    (tuples: one of each is made per offered element, several times cheaper than frozen dataclasses)."""

    tag: str
    role: str | None
    name: str
    text: str
    attributes: dict[str, str]


class Control(NamedTuple):
    """A form control's state: its value, whether it is checked, a select's options."""

    value: str | None = None
    checked: bool | None = None
    options: list[str] | None = None


NO_CONTROL = Control()


class Element:
    """An offered element: what the LLM sees at ``[index]`` and how the action layer reaches it."""

    __slots__ = (
        "index", "tag", "role", "name", "text", "attributes", "is_new", "backend_node_id", "frame_id",
        "session", "box", "center", "scrollable", "value", "checked", "options", "_frame", "_node", "_xpath",
    )

    def __init__(self, *, frame: Frame, node: int, described: Described, box: Rect, control: Control = NO_CONTROL,
                 scrollable: Scrollable | None = None) -> None:
        """``node`` is its index in ``frame``'s document; ``box`` (x, y, width, height) is in
        top-level page coordinates."""
        self.index = 0
        self.is_new = False
        self.tag, self.role, self.name, self.text = described.tag, described.role, described.name, described.text
        self.attributes = described.attributes
        self.backend_node_id: int = frame.doc.backend[node]
        self.frame_id: str = frame.frame_id
        self.session: CDPSession = frame.session
        self.box = box
        self.center = (box[0] + box[2] / 2, box[1] + box[3] / 2)
        self.value, self.checked, self.options = control.value, control.checked, control.options
        self.scrollable = scrollable
        self._frame, self._node = frame, node
        self._xpath: str | None = None

    def __repr__(self) -> str:
        return f"<Element [{self.index}] {self.tag} {self.name[:30]!r}>"

    @property
    def key(self) -> NodeKey:
        return NodeKey(self.frame_id, self.backend_node_id)

    @property
    def xpath(self) -> str:
        if self._xpath is None:
            self._xpath = self._frame.doc.xpath(self._node)
        return self._xpath

    @property
    def frame_path(self) -> list[FrameOwner]:
        """The iframe owner elements from this element's frame up to the top, each with the session
        of the document holding it; empty for elements of the top document or same-process frames
        (whose coordinates Chrome already reports in the top-level viewport)."""
        return self._frame.owner_path

    def description(self) -> dict[str, Any]:
        """A description that survives a reload: enough to find the same control on a changed page."""
        attrs = {k: self.attributes[k] for k in KEY_ATTRIBUTES if self.attributes.get(k)}
        return {
            "tag": self.tag,
            "role": self.role,
            "name": self.name,
            "text": self.text[:200],
            "attributes": attrs,
            "xpath": self.xpath,
            "frame_url": self._frame.url,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "tag": self.tag,
            "role": self.role,
            "name": self.name,
            "text": self.text,
            "attributes": self.attributes,
            "value": self.value,
            "checked": self.checked,
            "options": self.options,
            "box": [round(v, 1) for v in self.box],
            "frame_id": self.frame_id,
            "frame_url": self._frame.url,
            "backend_node_id": self.backend_node_id,
            "xpath": self.xpath,
            "is_new": self.is_new,
            "scrollable": None if self.scrollable is None else [self.scrollable.above, self.scrollable.below],
        }


@dataclass
class Numbering:
    """Indexes handed out so far in one job: node key -> index, and the next free number."""

    by_key: dict[NodeKey, int] = field(default_factory=dict)
    next_index: int = 1


@dataclass(frozen=True)
class Indexes:
    """One capture's numbering: its elements by index, the indexes new since the last capture of the
    same document, and the numbering to carry on from."""

    elements: dict[int, Element]
    new: set[int]
    numbering: Numbering
