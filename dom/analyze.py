"""One frame's offered elements and loose visible text, from its snapshot columns.

A single forward pass over the nodes (parents come before children) carries what ancestors impose
on their subtree: hidden (opacity 0, inert, aria-hidden), disabled (a disabled fieldset, but for
its first legend), the clip rectangle of overflow containers (and of the viewport, for a fixed
element: it never scrolls into view), and the nearest candidate above. Only candidates and
rendered text nodes are ever looked at one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress, islice
from typing import NamedTuple

from dom.frames import Frame, Rect, intersect
from dom.model import Control, Described, Element, Scrollable
from dom.occlusion import Occluders
from dom.rules import FORM_CONTROLS, NEVER, Candidates, implicit_role
from dom.tree import ELEMENT, OPACITY, OVERFLOW, POINTER_EVENTS, POSITION, TEXT, VISIBILITY, positions

# What ancestors impose on a node: (hidden bits, disabled, clip rect in document coordinates,
# nearest candidate at or above).
Ctx = tuple[int, bool, "Rect | None", int]
# For each container of an offered element: how many it holds, and the first of them.
Sections = tuple[dict[int, int], dict[int, int]]
ROOT: Ctx = (0, False, None, -1)
# Hidden bits. FADED: not painted (opacity 0). INERT: not usable. UNSPOKEN: aria-hidden, which hides
# from assistive technology only: a native control under it still shows and takes input.
FADED, INERT, UNSPOKEN = 1, 2, 4
# Native controls that show through aria-hidden, and through opacity 0 of their own over a visible
# wrapper (a styled file button, a select laid over a drawn one).
NATIVE_CONTROLS = ("input", "select", "textarea", "button")
# Smaller than this, an invisible control over its wrapper is a trap for bots, not a styled control.
STYLED_MIN = 8.0

# Called for boxes of a child frame: is the frame's iframe covered there in the parent document?
CoverCheck = Callable[[Frame, Rect], bool]

SCROLLING = ("auto", "scroll", "overlay")
# Loose text is kept when the smallest container holding it and a control holds at most this many.
SECTION_CONTROLS = 6
# A control-free block under the page's root whose text stands on this many lines is a panel of its
# own (a status panel, a footer, a sidebar), not a message about the controls (a result, a toast).
PANEL_LINES = 3
EXPLAINING = ("H1", "H2", "H3", "H4", "H5", "H6", "LEGEND", "CAPTION")
SCROLL_SCAN_LIMIT = 20_000
MAX_OPTIONS = 200
# What Chrome paints on a button input without a value (en-US); ``button`` paints nothing.
BUTTON_LABELS = {"submit": "Submit", "reset": "Reset", "button": ""}


def _apart(x: float, y: float, w: float, h: float, area: Rect) -> bool:
    """The box and the area share no pixel."""
    return x >= area[0] + area[2] or y >= area[1] + area[3] or x + w <= area[0] or y + h <= area[1]


def collapse(text: str) -> str:
    return " ".join(text.split())


def same_line(box: Sequence[float], before: Sequence[float]) -> bool:
    return abs(before[1] - box[1]) < min(box[3], before[3]) / 2


def spaced(text: str, box: Sequence[float], before: Sequence[float] | None) -> str:
    """``text`` (first line fragment at ``box``) ready to be appended to the text whose last
    fragment is at ``before``: with a leading space unless the two touch on one line. A page that writes ``Enter "<b>Alan</b>"`` shows no space
    around Alan, and the model must not read one; separate lines, cells and blocks read apart."""
    if before is None or text[:1].isspace():
        return text
    touching = abs(before[0] + before[2] - box[0]) <= 1.0 and same_line(box, before)
    return text if touching else " " + text


class Loose(NamedTuple):
    """A piece of loose text waiting for the panel check: its node, where it starts and ends on
    screen, and the block under the page's root that holds it (None: not subject to the check)."""

    node: int
    text: str
    starts: Sequence[float]
    ends: Sequence[float]
    block: int | None


@dataclass
class FrameResult:
    elements: list[Element] = field(default_factory=list)
    # (node, text) outside any element; the text starts with a space unless it continues the previous one
    loose_text: list[tuple[int, str]] = field(default_factory=list)
    parent_of: dict[int, int] = field(default_factory=dict)  # offered node -> nearest offered above, or -1


class FrameAnalysis:
    def __init__(self, frame: Frame, region: Rect | None, covered_above: CoverCheck | None = None) -> None:
        self.frame = frame
        self.doc = doc = frame.doc
        self.s = s = doc.s
        self.visible_id, self.none_id = s.id("visible"), s.id("none")
        self.cands = Candidates(doc)
        self._explaining = s.ids(*EXPLAINING)
        self._roots = s.ids("BODY", "HTML")
        self._label, self._for = s.id("LABEL"), s.id("for")
        self._aria_disabled, self._disabled_attr = s.id("aria-disabled"), s.id("disabled")
        dx, dy = frame.dx, frame.dy
        region_doc = None if region is None else (region[0] - dx, region[1] - dy, region[2], region[3])
        fclip = None if frame.clip is None else (frame.clip[0] - dx, frame.clip[1] - dy, frame.clip[2], frame.clip[3])
        self.area = intersect(region_doc, fclip)
        self.covered_above = covered_above
        self._occluders: Occluders | None = None
        self._labels_by_for: dict[str, int] | None = None
        self.own: dict[int, Ctx] = {}
        self.down = self._propagate()

    # --- what ancestors impose ---------------------------------------------------------------

    def _specials(self) -> tuple[dict[int, int], set[int], set[int], set[int]]:
        """Nodes that hide their subtree (with the hidden bits they add), disabled fieldsets,
        clipping containers, fixed elements."""
        doc, s = self.doc, self.s
        lay_nodes, name = doc.lay_nodes, doc.name
        hide = {lay_nodes[k]: FADED for k in positions(doc.column(OPACITY), s.id("0"))}
        aria_hidden, inert, disabled, fieldset = s.id("aria-hidden"), s.id("inert"), s.id("disabled"), s.id("FIELDSET")
        fieldsets: set[int] = set()
        for i in doc.marked():
            if doc.attr(i, inert) is not None:
                hide[i] = hide.get(i, 0) | INERT
            elif (doc.attr(i, aria_hidden) or "").strip().lower() == "true":
                hide[i] = hide.get(i, 0) | UNSPOKEN
            if name[i] == fieldset and doc.attr(i, disabled) is not None:
                fieldsets.add(i)
        never, plain = s.ids(*NEVER), (self.visible_id, -1)
        overflow = doc.column(OVERFLOW)
        clips = {
            i for v in set(overflow).difference(plain) for i in (lay_nodes[k] for k in positions(overflow, v))
            if name[i] not in never and doc.node_type[i] == ELEMENT
        }
        fixed = {lay_nodes[k] for k in positions(doc.column(POSITION), s.id("fixed"))}
        return hide, fieldsets, clips, fixed

    def _propagate(self) -> list[Ctx]:
        """``down[i]``: the context node ``i`` passes to its children."""
        doc = self.doc
        hide, fieldsets, clips, fixed = self._specials()
        legends = self._first_legends(fieldsets)
        cands = self.cands.all
        n, parent, bounds, lay = doc.n, doc.parent, doc.bounds, doc.lay
        down: list[Ctx] = [ROOT] * (n + 1)  # one more, last: ``down[-1]``, for a node without a parent
        flags = bytearray(n)
        for i in hide.keys() | fieldsets | clips | cands | fixed | legends:
            flags[i] = 1
        own, screen = self.own, doc.viewport()
        # Most nodes only pass on their parent's context: that case is kept to one list copy.
        for i, p, special in zip(range(1, n), islice(parent, 1, None), islice(flags, 1, None)):
            if not special:
                down[i] = down[p]
                continue
            hidden, disabled, clip, cand = c = down[p]
            if i in fixed:  # out of the page's flow: only what is on screen now is ever seen
                clip = screen
            if i in legends:  # a disabled fieldset's first legend is not disabled by it
                disabled = down[parent[p]][1]
            c = (hidden | hide.get(i, 0), disabled or i in fieldsets, clip, i if i in cands else cand)
            if i in clips:  # an element is not clipped by its own overflow; its content is
                own[i] = c
                b = bounds[lay[i]]
                c = (c[0], c[1], intersect(clip, (b[0], b[1], b[2], b[3])), c[3])
            down[i] = c
        down.pop()
        return down

    def _first_legends(self, fieldsets: set[int]) -> set[int]:
        doc, legend = self.doc, self.s.id("LEGEND")
        found = set()
        for f in fieldsets:
            children = (j for j in range(f + 1, doc.subtree_end(f, limit=2000)) if doc.parent[j] == f)
            first = next((j for j in children if doc.name[j] == legend), None)
            if first is not None:
                found.add(first)
        return found

    def at(self, i: int) -> Ctx:
        """The context of node ``i`` itself."""
        return self.own.get(i) or self.down[i]

    def cand_above(self, i: int) -> int:
        p = self.doc.parent[i]
        return self.down[p][3] if p >= 0 else -1

    # --- the frame's result ------------------------------------------------------------------

    def run(self) -> FrameResult:
        offered = self._offered()
        result = FrameResult()
        nearest: dict[int, int] = {}

        def nearest_offered(c: int) -> int:
            start, seen = c, []
            while c >= 0 and c not in offered:
                if c in nearest:
                    c = nearest[c]
                    break
                seen.append(c)
                c = self.cand_above(c)
            for x in seen:
                nearest[x] = c
            return c if start >= 0 else -1

        owned = self._collect_text(offered, nearest_offered, result)
        for i, box in offered.items():
            result.elements.append(self._element(i, box, owned.get(i)))
            result.parent_of[i] = nearest_offered(self.cand_above(i))
        self.nearest_offered = nearest_offered
        return result

    def _offered(self) -> dict[int, Rect]:
        """Candidates that survive every rule, in document order, with their visible box."""
        cands = self.cands
        strong, weak = cands.strong, cands.weak
        order = sorted(cands.all | self._scrollers())
        above = {i: self.cand_above(i) for i in order}
        containers: set[int] = set()
        for i in strong:
            a = above[i]
            while a >= 0 and a not in containers:
                containers.add(a)
                a = above.get(a, -1)
        strong_above: dict[int, bool] = {}
        keep: dict[int, Rect] = {}
        for i in order:
            a = above[i]
            strong_above[i] = a >= 0 and (a in strong or strong_above.get(a, False))
            if i in weak and i not in self.scrollers and (i in containers or strong_above[i]):
                continue
            box = self._visible_box(i)
            if box is not None:
                keep[i] = box
        self._drop_redundant_labels(keep)
        for i in [i for i, box in keep.items() if self._covered(i, box)]:
            del keep[i]
        return keep

    def _visible_box(self, i: int) -> Rect | None:
        doc, area = self.doc, self.area
        k = doc.lay[i]
        x, y, w, h = doc.bounds[k]
        if w > 0 and h > 0 and area is not None and _apart(x, y, w, h, area):
            return None  # outside the offered region: the commonest and cheapest refusal on a long page
        st = doc.styles[k]
        hidden, disabled, clip, _ = self.at(i)
        if disabled or st[VISIBILITY] != self.visible_id or st[POINTER_EVENTS] == self.none_id:
            return None
        if hidden and not self._shows_anyway(i, hidden):
            return None
        if self._disabled(i):
            return None
        if w <= 0 or h <= 0:
            grown = self._children_box(i)
            if grown is None:
                return None
            x, y, w, h = grown
        box = intersect(intersect((x, y, w, h), clip), self.area)
        if box is None or box[2] <= 0 or box[3] <= 0:
            return None
        return box

    def _shows_anyway(self, i: int, hidden: int) -> bool:
        """A hidden native control that a user still sees and uses: one under aria-hidden (Amazon's
        image thumbnails), or one made invisible itself over a wrapper that shows (a styled file
        button or select, whose click lands on the control). Not when it sits inside another
        control (a checkbox drawn inside a filter link acts through the link; a styled checkbox
        in its label through the label), nor when a label elsewhere stands in for it."""
        doc = self.doc
        tag = doc.tag(i)
        if tag not in NATIVE_CONTROLS or (tag == "input" and doc.attributes(i).get("type", "").lower() == "hidden"):
            return False
        above = self.cand_above(i)
        if hidden & INERT or (above >= 0 and above in self.cands.strong):
            return False
        if self.down[doc.parent[i]][0] & FADED:
            return False  # an ancestor is invisible: so is everything in it
        if not hidden & FADED:
            return True
        return self._over_visible_wrapper(i) and not self._labelled_for(i)

    def _over_visible_wrapper(self, i: int) -> bool:
        doc = self.doc
        x, y, w, h = doc.bounds[doc.lay[i]]
        if w < STYLED_MIN or h < STYLED_MIN:
            return False
        p = doc.parent[i]
        while p > 0 and doc.lay[p] < 0:
            p = doc.parent[p]
        if p <= 0 or doc.name[p] in self._roots or doc.styles[doc.lay[p]][VISIBILITY] != self.visible_id:
            return False  # laid over the whole page, it wraps nothing: a trap
        px, py, pw, ph = doc.bounds[doc.lay[p]]
        cx, cy = x + w / 2, y + h / 2
        return pw > 0 and ph > 0 and px <= cx <= px + pw and py <= cy <= py + ph

    def _labelled_for(self, i: int) -> bool:
        ident = self.doc.attributes(i).get("id")
        return bool(ident) and self._label_for(ident) is not None

    def _label_for(self, ident: str) -> int | None:
        """The first label whose ``for`` names ``ident`` (the labels are read once per capture)."""
        if self._labels_by_for is None:
            doc, for_name = self.doc, self.s.id("for")
            found: dict[str, int] = {}
            for j in positions(doc.name, self.s.id("LABEL")):
                target = doc.attr(j, for_name)
                if target:
                    found.setdefault(target, j)
            self._labels_by_for = found
        return self._labels_by_for.get(ident)

    def _disabled(self, i: int) -> bool:
        doc = self.doc
        if not doc.attrs[i]:
            return False
        if (doc.attr(i, self._aria_disabled) or "").lower() == "true":
            return True
        return doc.attr(i, self._disabled_attr) is not None and doc.tag(i) in FORM_CONTROLS

    def _children_box(self, i: int) -> Rect | None:
        """A zero-size element (an inline anchor around a block) takes the union of its children,
        unless it clips its content (then nothing of it shows)."""
        doc = self.doc
        if i in self.own:
            return None
        x1 = y1 = float("inf")
        x2 = y2 = float("-inf")
        for j in range(i + 1, doc.subtree_end(i, limit=64)):
            k = doc.lay[j]
            if k < 0:
                continue
            x, y, w, h = doc.bounds[k]
            if w > 0 and h > 0:
                x1, y1, x2, y2 = min(x1, x), min(y1, y), max(x2, x + w), max(y2, y + h)
        return None if x2 < x1 else (x1, y1, x2 - x1, y2 - y1)

    def _drop_redundant_labels(self, keep: dict[int, Rect]) -> None:
        """A label is offered only for a control that is not (a styled checkbox hides its input);
        a label of nothing is just text."""
        for i in [i for i in self.cands.labels if i in keep]:
            control = self._label_control(i)
            if control is None or control in keep:
                del keep[i]

    def _label_control(self, label: int) -> int | None:
        doc, s = self.doc, self.s
        target = doc.attr(label, s.id("for"))
        if target:
            return self._by_id(target)
        controls = s.ids("INPUT", "SELECT", "TEXTAREA", "BUTTON")
        return next((j for j in range(label + 1, doc.subtree_end(label, limit=200)) if doc.name[j] in controls), None)

    def _by_id(self, value: str) -> int | None:
        doc, s = self.doc, self.s
        id_name, value_ids = s.id("id"), s.ids(value)
        if id_name < 0 or not value_ids:
            return None
        v = next(iter(value_ids))
        return next((i for i, a in enumerate(doc.attrs) if v in a and doc.attr(i, id_name) == value), None)

    def _covered(self, i: int, box: Rect) -> bool:
        if self.occluders.covers(box, self.doc.paint[self.doc.lay[i]], i, lambda o: self._labels(o, i)):
            return True
        return self.covered_above is not None and self.covered_above(self.frame, box)

    def _labels(self, node: int, control: int) -> bool:
        """Is ``node`` (part of) a label of ``control``? A floating label drawn over its field takes
        the click and hands it to the field, so it does not hide it."""
        doc, label = self.doc, self.s.id("LABEL")
        while node > 0:
            if doc.name[node] == label:
                return self._label_control(node) == control
            node = doc.parent[node]
        return False

    @property
    def occluders(self) -> Occluders:
        if self._occluders is None:
            self._occluders = Occluders(self.doc, self.area, lambda i: self.at(i)[2])
        return self._occluders

    def covers(self, box: Rect, node: int) -> bool:
        """Used by child frames: is ``box`` (this document's coordinates) covered above ``node``?"""
        return self.occluders.covers(box, self.doc.paint[self.doc.lay[node]], node)

    # --- scroll containers -------------------------------------------------------------------

    scrollers: dict[int, Scrollable]

    def _scrollers(self) -> set[int]:
        """Containers that scroll vertically and whose content overflows them, in the visible area."""
        doc, s = self.doc, self.s
        self.scrollers = {}
        overflow = doc.column(OVERFLOW)
        scrolling = {idx for idx in set(overflow) if s(idx).split()[-1:] and s(idx).split()[-1] in SCROLLING}
        if not scrolling:
            return set()
        never = s.ids(*NEVER)
        for k in sorted(k for v in scrolling for k in positions(overflow, v)):
            i = doc.lay_nodes[k]
            if doc.name[i] in never or doc.node_type[i] != ELEMENT or doc.tag(i) in ("textarea", "select"):
                continue
            x, y, w, h = doc.bounds[k]
            if w <= 0 or h <= 0 or (self.area is not None and intersect((x, y, w, h), self.area)[3] <= 0):
                continue
            extent = self._content_extent(i)
            if extent is None:
                continue
            above, below = max(0.0, y - extent[0]), max(0.0, extent[1] - (y + h))
            if above > 4 or below > 4:
                self.scrollers[i] = Scrollable(round(above), round(below))
        return set(self.scrollers)

    def _content_extent(self, i: int) -> tuple[float, float] | None:
        doc = self.doc
        top, bottom = float("inf"), float("-inf")
        lay, bounds = doc.lay, doc.bounds
        for j in range(i + 1, doc.subtree_end(i, limit=SCROLL_SCAN_LIMIT)):
            k = lay[j]
            if k >= 0:
                b = bounds[k]
                if b[3] > 0:
                    top, bottom = min(top, b[1]), max(bottom, b[1] + b[3])
        return None if bottom < top else (top, bottom)

    # --- text ----------------------------------------------------------------------------------

    def _collect_text(
        self, offered: dict[int, Rect], nearest_offered: Callable[[int], int], result: FrameResult
    ) -> dict[int, list[str]]:
        """Text of each offered element (up to the next offered one), and the loose visible text
        that explains the controls."""
        doc = self.doc
        owned: dict[int, list[str]] = {}
        near = self._around(offered)
        table, lay_nodes, lay_text, bounds = doc.s.table, doc.lay_nodes, doc.lay_text, doc.bounds
        node_type, parent, down, visible, area = doc.node_type, doc.parent, self.down, self.visible_id, self.area
        vis = doc.column(VISIBILITY)
        last_owned: dict[int, Rect] = {}
        loose: list[Loose] = []
        first_fragment, last_fragment, fragment_boxes = doc.text_fragments()
        for k in compress(range(len(lay_text)), map(visible.__eq__, vis)):  # visible ones, picked in C
            t = lay_text[k]
            if t < 0:
                continue
            i = lay_nodes[k]
            if node_type[i] != TEXT:
                continue
            text = table[t]
            if not text or text.isspace():
                continue
            hidden, _, clip, cand = down[parent[i]]
            if hidden & (FADED | INERT):
                continue
            o = nearest_offered(cand) if cand >= 0 else -1
            if hidden and not (o >= 0 and self.at(o)[0]):
                continue  # aria-hidden text shows only as the text of a control offered through it
            f = first_fragment.get(k)
            if f is None:
                starts = ends = bounds[k]
            else:
                starts, ends = fragment_boxes[f], fragment_boxes[last_fragment[k]]
            if o >= 0:
                owned.setdefault(o, []).append(spaced(text, starts, last_owned.get(o)))
                last_owned[o] = ends
                continue
            x, y, w, h = bounds[k]
            if w <= 0 or h <= 0 or (area is not None and _apart(x, y, w, h, area)):
                continue
            kept, block = (True, None) if near is None else self._explains(i, near)
            if not kept:
                continue
            box = intersect(intersect((x, y, w, h), clip), area)
            if box is None or box[2] <= 0 or box[3] <= 0 or self.occluders.covers(box, doc.paint[k], i):
                continue
            if self.covered_above is not None and self.covered_above(self.frame, box):
                continue
            loose.append(Loose(i, text, starts, ends, block))
        result.loose_text = self._without_panels(loose)
        return owned

    @staticmethod
    def _without_panels(loose: list[Loose]) -> list[tuple[int, str]]:
        """The loose text, less the panels: blocks under the page's root whose text stands on
        ``PANEL_LINES`` lines or more; each piece spaced against the piece kept before it."""
        lines: dict[int, int] = {}
        ends_of: dict[int, Sequence[float]] = {}
        for piece in loose:
            if piece.block is None:
                continue
            before = ends_of.get(piece.block)
            if before is None or not same_line(piece.starts, before):
                lines[piece.block] = lines.get(piece.block, 0) + 1
            ends_of[piece.block] = piece.ends
        out: list[tuple[int, str]] = []
        last: Sequence[float] | None = None
        for piece in loose:
            if piece.block is None or lines[piece.block] < PANEL_LINES:
                out.append((piece.node, spaced(piece.text, piece.starts, last)))
                last = piece.ends
        return out

    def _around(self, offered: dict[int, Rect]) -> Sections | None:
        """How many offered elements each ancestor of an offered element holds, and the first of
        them in document order. None when the frame offers nothing here: then its text is all
        there is to see, and all of it is kept."""
        if not offered:
            return None
        parent, held, first = self.doc.parent, {}, {}
        for i in offered:  # in document order
            p = parent[i]
            while p >= 0:
                held[p] = held.get(p, 0) + 1
                first.setdefault(p, i)
                p = parent[p]
        return held, first

    def _explains(self, text: int, near: Sections) -> tuple[bool, int | None]:
        """Is loose text node ``text`` worth a prompt line? Its section is the smallest container
        that also holds a control. A section with a few controls is a form row, a dialog, a result
        card: its text labels or explains them. A section holding many is a page region (an
        article, a footer, the body), and text whose only tie to a control is that region is body
        text, left to ``text()``, which extraction reads; but text that comes before the region's
        first control introduces it (a title, the instruction above a task) and is kept. Headings
        are always kept (they say where we are), and so are labels tied to a control by ``for``. A
        label tied to nothing is still a caption in a region (a "Last name" label on its own line
        above its input in a long form), but in a block under the page's root it is held to the
        panel check like any text (MiniWoB's score panel is made of labels).

        The page's root is a region however few controls a small page has, so text after the
        controls in a control-free block right under it is kept only while that block is not a
        panel (see ``_without_panels``): the answer names the block then, else None."""
        held, first = near
        doc, explaining, label, for_ = self.doc, self._explaining, self._label, self._for
        child, p = text, doc.parent[text]
        captions = False
        while p >= 0:
            if doc.name[p] in explaining or (doc.name[p] == label and doc.attr(p, for_) is not None):
                return True, None
            captions = captions or doc.name[p] == label
            count = held.get(p)
            if count:
                if text < first[p]:
                    return True, None
                if count > SECTION_CONTROLS and not captions:
                    return False, None
                return True, (child if doc.name[p] in self._roots and child != text else None)
            child, p = p, doc.parent[p]
        return False, None

    # --- one offered element -------------------------------------------------------------------

    def _element(self, i: int, box: Rect, texts: list[str] | None) -> Element:
        doc, frame = self.doc, self.frame
        tag = doc.tag(i)
        attrs = doc.attributes(i)
        text = collapse("".join(texts)) if texts else ""  # pieces carry their own spacing (``spaced``)
        value: str | None = None
        checked: bool | None = None
        options: list[str] | None = None
        input_type = attrs.get("type", "text").lower() if tag == "input" else ""
        if tag == "select":
            options, value = self._options(i)
            text = ""
        elif tag in ("input", "textarea"):
            if input_type in ("checkbox", "radio"):
                checked = i in doc.checked
            elif input_type in BUTTON_LABELS:  # a button input shows its value as its label
                text = collapse(attrs.get("value", "")) or BUTTON_LABELS[input_type]
            elif input_type not in ("submit", "button", "reset", "image", "file", "hidden"):
                v = doc.input_value.get(i, -1)
                value = doc.s(v) if v >= 0 else attrs.get("value", "")
        full = doc.rect(i) or box
        if full[2] <= 0 or full[3] <= 0:
            full = self._children_box(i) or box
        role = attrs.get("role") or implicit_role(tag, input_type, editable="contenteditable" in attrs)
        return Element(
            frame=frame,
            node=i,
            described=Described(tag, role, self._name(i, tag, attrs, text, value), text, attrs),
            box=(full[0] + frame.dx, full[1] + frame.dy, full[2], full[3]),
            control=Control(value, checked, options),
            scrollable=self.scrollers.get(i),
        )

    def _options(self, select: int) -> tuple[list[str], str | None]:
        """Option labels of a select, and the one chosen (the first when none is marked selected)."""
        doc = self.doc
        option = doc.s.id("OPTION")
        options: list[str] = []
        chosen: str | None = None
        for j in range(select + 1, doc.subtree_end(select, limit=4 * MAX_OPTIONS)):
            if doc.name[j] != option:
                continue
            label = doc.attributes(j).get("label") or self._subtree_text(j, raw=True)
            if len(options) < MAX_OPTIONS:
                options.append(label)
            if j in doc.selected and chosen is None:
                chosen = label
        if chosen is None and options:
            chosen = options[0]
        return options, chosen

    def _subtree_text(self, i: int, *, raw: bool = False, limit: int = 400) -> str:
        """Text under ``i``; ``raw`` reads node values (options of a closed select have no layout)."""
        doc = self.doc
        parts = []
        for j in range(i + 1, doc.subtree_end(i, limit=limit)):
            if doc.node_type[j] != TEXT:
                continue
            if raw:
                parts.append(doc.s(doc.value[j]))
            else:
                k = doc.lay[j]
                if k >= 0 and doc.lay_text[k] >= 0:
                    parts.append(doc.s(doc.lay_text[k]))
        return collapse(" ".join(parts))

    def _name(self, i: int, tag: str, attrs: dict[str, str], text: str, value: str | None) -> str:
        """An approximation of the accessible name, good enough to tell controls apart."""
        if attrs.get("aria-label", "").strip():
            return collapse(attrs["aria-label"])
        labelled = [self._by_id(x) for x in attrs.get("aria-labelledby", "").split()]
        named = " ".join(self._subtree_text(j) for j in labelled if j is not None)
        if named:
            return named
        if tag in ("input", "select", "textarea"):
            label = self._label_text(i, attrs)
            if label:
                return label
        for key in ("alt", "title", "placeholder"):
            if attrs.get(key, "").strip():
                return collapse(attrs[key])
        if text:
            return text[:200]
        if tag == "input" and attrs.get("type", "").lower() in ("submit", "button", "reset"):
            return attrs.get("value", "")
        return ""

    def _label_text(self, i: int, attrs: dict[str, str]) -> str:
        doc = self.doc
        label_tag = doc.s.id("LABEL")
        p = doc.parent[i]
        while p > 0:
            if doc.name[p] == label_tag:
                return self._subtree_text(p)
            p = doc.parent[p]
        ident = attrs.get("id")
        label = self._label_for(ident) if ident else None
        return "" if label is None else self._subtree_text(label)
