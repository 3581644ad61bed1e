"""One document of a ``DOMSnapshot.captureSnapshot`` reply, kept in Chrome's columnar form.

The snapshot is a set of parallel arrays plus one shared string table. Turning it into per-node
Python objects would cost more than the snapshot itself on a large page, so the arrays are kept as
they are and only the few nodes that matter are ever decoded. Nodes come in flat-tree pre-order
(shadow content under its host, slotted children under their slot), so a parent's index is always
smaller than its children's and a subtree is a contiguous range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from dom.frames import Rect

ELEMENT, TEXT, DOCUMENT = 1, 3, 9

# Order of the computed styles requested from Chrome (see dom.snapshot.STYLES).
VISIBILITY, OPACITY, CURSOR, POINTER_EVENTS, OVERFLOW, BACKGROUND, POSITION = range(7)
STYLE_COUNT = 7

# Attributes some rule depends on (hidden, inert, disabled, widget signals).
MARK_ATTRS = ("role", "tabindex", "contenteditable", "aria-hidden", "inert", "disabled")


def well_formed(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate replaced by U+FFFD. A page's script that cuts a
    string inside an emoji (``title.slice(0, 40)``) leaves half a surrogate pair in the DOM; Chrome
    sends it as a ``\\udXXX`` escape, and a str holding it cannot be encoded as UTF-8: printing
    ``browserd inspect``'s output, storing a result or sending a prompt would fail on it."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class Strings:
    """The snapshot's shared string table, with reverse look-up of the few names we test for.
    Every string is well formed (see ``well_formed``), so nothing read from a page carries a lone
    surrogate further."""

    __slots__ = ("table", "_index", "id")

    def __init__(self, table: list[str]) -> None:
        joined = "\0".join(table)  # one C-speed check for the common case: nothing to mend
        if not joined.isascii():  # (known without a scan: a str records whether it is ASCII)
            try:
                joined.encode("utf-8")
            except UnicodeEncodeError:
                table = [well_formed(t) for t in table]
        self.table = table
        self._index = _Index(zip(table, range(len(table))))  # a later duplicate wins
        # ``id(name)``: the string-table index of ``name``, -2 when absent (matches nothing; -1 means
        # "no string"). The dict's own look-up, bound once: an analysis asks for some seventy names.
        self.id: Callable[[str], int] = self._index.__getitem__

    def __call__(self, idx: int) -> str:
        return self.table[idx] if idx >= 0 else ""

    def ids(self, *names: str) -> set[int]:
        """String-table indexes of ``names`` that occur in this snapshot (absent names are skipped)."""
        index = self._index
        return {index[n] for n in names if n in index}


class _Index(dict[str, int]):
    """String -> table index; a name not in the table is -2."""

    def __missing__(self, name: str) -> int:
        return -2


def positions(column: Sequence[Any], value: Any) -> list[int]:
    """Every position of ``value`` in ``column``, found by ``list.index`` (a C loop) hop by hop."""
    out: list[int] = []
    k = -1
    index = column.index
    try:
        while True:
            k = index(value, k + 1)
            out.append(k)
    except ValueError:
        return out


def _rare_map(rare: dict[str, Any] | None) -> dict[int, int]:
    if not rare:
        return {}
    return dict(zip(rare.get("index", ()), rare.get("value", ())))


class TextFragments(NamedTuple):
    """The line fragments of a document's texts: for each text layout object that has them, the
    index of its first and of its last fragment, and every fragment's box (x, y, width, height).
    A wrapped text's own box spans its lines, so only these say where it starts and where it ends;
    a text without fragments is its own box. Read by index in the text pass (a record made per
    text node cost more than the look-up)."""

    first: dict[int, int]
    last: dict[int, int]
    boxes: list[list[float]]


@dataclass(frozen=True, slots=True)
class Size:
    width: float
    height: float


class DocTree:
    """Columns of one document plus the mapping from node to layout object."""

    __slots__ = (
        "s", "frame_id", "url", "title", "base_url", "scroll_x", "scroll_y", "parent", "node_type", "name",
        "value", "backend", "attrs", "clickable", "input_value", "checked", "selected", "content_doc",
        "shadow", "lay", "lay_nodes", "bounds", "styles", "paint", "lay_text", "n", "_ordinals", "_columns",
        "_marked", "_text_boxes", "_text_ends", "_tag_counts", "_ends", "_tags",
    )

    def __init__(self, doc: dict[str, Any], strings: Strings) -> None:
        s = self.s = strings
        nodes, layout = doc["nodes"], doc["layout"]
        self.frame_id = s(doc.get("frameId", -1))
        self.url = s(doc.get("documentURL", -1))
        self.title = s(doc.get("title", -1))
        self.base_url = s(doc.get("baseURL", -1)) or self.url
        self.scroll_x = float(doc.get("scrollOffsetX", 0) or 0)
        self.scroll_y = float(doc.get("scrollOffsetY", 0) or 0)
        self.parent: list[int] = nodes["parentIndex"]
        self.node_type: list[int] = nodes["nodeType"]
        self.name: list[int] = nodes["nodeName"]
        self.value: list[int] = nodes.get("nodeValue") or []
        self.backend: list[int] = nodes["backendNodeId"]
        self.attrs: list[list[int]] = nodes.get("attributes") or [[] for _ in self.parent]
        self.n = len(self.parent)
        self.clickable = set((nodes.get("isClickable") or {}).get("index", ()))
        self.input_value = _rare_map(nodes.get("inputValue"))
        self.checked = set((nodes.get("inputChecked") or {}).get("index", ()))
        self.selected = set((nodes.get("optionSelected") or {}).get("index", ()))
        self.content_doc = _rare_map(nodes.get("contentDocumentIndex"))
        self.shadow = _rare_map(nodes.get("shadowRootType"))
        lay_nodes: list[int] = layout["nodeIndex"]
        lay = [-1] * self.n
        for k in range(len(lay_nodes) - 1, -1, -1):  # a node may own several layout objects; keep the first
            lay[lay_nodes[k]] = k
        self.lay = lay
        self.lay_nodes = lay_nodes
        self.bounds: list[list[float]] = layout["bounds"]
        self.styles: list[list[int]] = layout["styles"]
        if self.styles:
            blank = [-1] * STYLE_COUNT
            for k in positions(self.styles, []):  # the document's own layout object has no styles
                self.styles[k] = blank
        self.paint: list[int] = layout.get("paintOrders") or [0] * len(lay_nodes)
        self.lay_text: list[int] = layout.get("text") or []
        self._text_boxes: dict[str, list[Any]] = doc.get("textBoxes") or {}
        self._text_ends: TextFragments | None = None
        self._ordinals: list[int] | None = None
        self._columns: list[tuple[int, ...]] | None = None
        self._marked: list[int] | None = None
        self._tag_counts: dict[tuple[int, int], int] | None = None
        self._ends: list[int] | None = None
        self._tags: dict[int, str] = {}  # node-name string id -> lower-case tag, decoded once

    def text_fragments(self) -> TextFragments:
        """Where each text layout object's lines start and end (see ``TextFragments``)."""
        if self._text_ends is None:
            first: dict[int, int] = {}
            last: dict[int, int] = {}
            for j, owner in enumerate(self._text_boxes.get("layoutIndex") or ()):
                first.setdefault(owner, j)
                last[owner] = j
            self._text_ends = TextFragments(first, last, self._text_boxes.get("bounds") or [])
        return self._text_ends

    # --- whole columns -----------------------------------------------------------------------

    def column(self, which: int) -> tuple[int, ...]:
        """One computed style for every layout object (string ids). All of them are extracted at
        once at C speed (an analysis reads six of the seven; one transposition costs less than six
        extractions)."""
        columns = self._columns
        if columns is None:
            styles = self.styles
            columns = self._columns = list(zip(*styles, strict=True)) if styles else [()] * STYLE_COUNT
        return columns[which]

    def marked(self) -> list[int]:
        """Nodes carrying any attribute of ``MARK_ATTRS``: the only ones the attribute rules look at."""
        if self._marked is None:
            names = self.s.ids(*MARK_ATTRS)
            self._marked = [i for i, a in enumerate(self.attrs) if a and not names.isdisjoint(a)] if names else []
        return self._marked

    # --- decoding single nodes -------------------------------------------------------------

    def tag(self, i: int) -> str:
        name = self.name[i]
        tag = self._tags.get(name)
        if tag is None:
            tag = self._tags[name] = self.s(name).lower()
        return tag

    def attributes(self, i: int) -> dict[str, str]:
        a, s = self.attrs[i], self.s
        return {s(a[j]): s(a[j + 1]) for j in range(0, len(a) - 1, 2)}

    def attr(self, i: int, name_id: int) -> str | None:
        """The value of one attribute, by the string-table index of its name."""
        a = self.attrs[i]
        if name_id not in a:  # searched in C, no slice of the names made: most nodes lack most attributes
            return None
        k = -1
        try:
            while True:  # the first match at a name's (even) place; a value may equal it too
                k = a.index(name_id, k + 1)
                if not k & 1:
                    return self.s(a[k + 1])
        except ValueError:
            return None

    def style(self, i: int, which: int) -> str:
        k = self.lay[i]
        return self.s(self.styles[k][which]) if k >= 0 else ""

    def rect(self, i: int) -> list[float] | None:
        k = self.lay[i]
        return self.bounds[k] if k >= 0 else None

    def viewport_size(self) -> Size:
        """The document node's layout box is the size of its (frame's) viewport."""
        r = self.rect(0)
        return Size(r[2], r[3]) if r else Size(0.0, 0.0)

    def viewport(self) -> Rect:
        """The part of this document on screen now, in document coordinates."""
        size = self.viewport_size()
        return (self.scroll_x, self.scroll_y, size.width, size.height)

    def subtree_end(self, i: int, limit: int = 1 << 30) -> int:
        """One past the last descendant of ``i`` (pre-order keeps a subtree contiguous)."""
        parent, j, end = self.parent, i + 1, min(self.n, i + 1 + limit)
        while j < end:
            p = parent[j]
            while p > i:
                p = parent[p]
            if p != i:
                break
            j += 1
        return j

    def end_of(self, i: int) -> int:
        """``subtree_end(i)`` from a table built once for the whole document (one backward pass):
        for callers that ask about many nodes (``dom.identity``)."""
        if self._ends is None:
            ends = list(range(1, self.n + 1))
            parent = self.parent
            for k in range(self.n - 1, 0, -1):
                p = parent[k]
                if p >= 0 and ends[k] > ends[p]:
                    ends[p] = ends[k]
            self._ends = ends
        return self._ends[i]

    def is_ancestor(self, a: int, i: int) -> bool:
        parent = self.parent
        while i > a:
            i = parent[i]
        return i == a

    # --- xpath -----------------------------------------------------------------------------

    def xpath(self, i: int) -> str:
        """XPath from the document (or the enclosing shadow root) to element ``i``."""
        if self._ordinals is None:
            self._ordinals = self._sibling_ordinals()
        ords, parts, parent, node_type = self._ordinals, [], self.parent, self.node_type
        shadow = self.shadow
        while i > 0 and node_type[i] == ELEMENT:
            parts.append(f"{self.tag(i)}[{ords[i]}]")
            if i in shadow and (parent[i] < 0 or parent[i] not in shadow):
                break  # top of a shadow tree: xpath is relative to its shadow root
            i = parent[i]
        return "/" + "/".join(reversed(parts))

    def ordinal(self, i: int) -> int:
        """Position of ``i`` among the children of its parent with its tag (CSS ``nth-of-type``)."""
        if self._ordinals is None:
            self._ordinals = self._sibling_ordinals()
        return self._ordinals[i]

    def same_tag_siblings(self, i: int) -> int:
        """How many children of ``i``'s parent have its tag, ``i`` included."""
        if self._tag_counts is None:
            counts: dict[tuple[int, int], int] = {}
            for key in zip(self.parent, self.name):
                counts[key] = counts.get(key, 0) + 1
            self._tag_counts = counts
        return self._tag_counts[(self.parent[i], self.name[i])]

    def _sibling_ordinals(self) -> list[int]:
        counts: dict[tuple[int, int], int] = {}
        ords = [0] * self.n
        for i, (p, t) in enumerate(zip(self.parent, self.name)):
            key = (p, t)
            ords[i] = counts[key] = counts.get(key, 0) + 1
        return ords
