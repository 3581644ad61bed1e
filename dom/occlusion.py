"""Is an element fully covered by something painted on top of it?

Chrome's paint order says which layout object paints later. An element counts as covered when one
painted later, with a visible background and taking pointer events, contains its whole visible box
(a modal overlay, an open menu, a cookie banner). Partial cover does not hide an element: it can
still be clicked where it shows. An occluder covers only where it shows itself: inside the clip of
its overflow ancestors and, when fixed, on screen (a drawer parked below the viewport hides
nothing). Occluders are bucketed in a coarse grid so each test only looks at the few that contain
the element's centre.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress

from dom.frames import Rect, intersect
from dom.tree import BACKGROUND, ELEMENT, OPACITY, POINTER_EVENTS, VISIBILITY, DocTree

CELL = 256.0


def _opaque_backgrounds(doc: DocTree) -> set[int]:
    """String ids of background colours that are not fully transparent."""
    s = doc.s
    seen = set(doc.column(BACKGROUND))
    opaque = set()
    for idx in seen:
        value = s(idx)
        if not value or value == "transparent":
            continue
        if value.startswith("rgba(") and value.rstrip(")").rsplit(",", 1)[-1].strip() in ("0", "0.0"):
            continue
        opaque.add(idx)
    return opaque


class Occluders:
    """Occluding boxes of one document inside ``area`` (document coordinates)."""

    def __init__(self, doc: DocTree, area: Rect | None, clip_of: Callable[[int], Rect | None]) -> None:
        self.doc = doc
        self.grid: dict[tuple[int, int], list[tuple[float, float, float, float, int, int]]] = {}
        s = doc.s
        opaque = _opaque_backgrounds(doc)
        if not opaque:
            return
        never = s.ids("HTML", "BODY", "#document")
        visible, none, zero = s.id("visible"), s.id("none"), s.id("0")
        ax1 = ay1 = float("-inf")
        ax2 = ay2 = float("inf")
        if area is not None:
            ax1, ay1, ax2, ay2 = area[0], area[1], area[0] + area[2], area[1] + area[3]
        lay_nodes, bounds, paint, node_type, name = doc.lay_nodes, doc.bounds, doc.paint, doc.node_type, doc.name
        grid, styles = self.grid, doc.styles
        # Only layout objects with an opaque background, picked in C (most have none).
        for k in compress(range(len(bounds)), map(opaque.__contains__, doc.column(BACKGROUND))):
            x, y, w, h = bounds[k]
            if w <= 0 or h <= 0 or x > ax2 or y > ay2 or x + w < ax1 or y + h < ay1:
                continue
            i, st = lay_nodes[k], styles[k]
            if (
                node_type[i] != ELEMENT or name[i] in never or st[VISIBILITY] != visible
                or st[POINTER_EVENTS] == none or st[OPACITY] == zero
            ):
                continue
            clip = clip_of(i)
            if clip is not None:
                x, y, w, h = intersect((x, y, w, h), clip)
                if w <= 0 or h <= 0:
                    continue
            x2, y2 = x + w, y + h
            box = (x, y, x2, y2, paint[k], i)
            rows = range(int((y if y >= ay1 else ay1) // CELL), int((y2 if y2 <= ay2 else ay2) // CELL) + 1)
            for cx in range(int((x if x >= ax1 else ax1) // CELL), int((x2 if x2 <= ax2 else ax2) // CELL) + 1):
                for cy in rows:
                    grid.setdefault((cx, cy), []).append(box)

    def covers(self, rect: Rect, paint: int, node: int, passes: Callable[[int], bool] | None = None) -> bool:
        """True if something painted after ``node`` contains all of ``rect``; an occluder for which
        ``passes`` is true hands its clicks to ``node`` and does not count."""
        if not self.grid:
            return False
        x1, y1 = rect[0], rect[1]
        x2, y2 = x1 + rect[2], y1 + rect[3]
        cell = (int((x1 + x2) / 2 // CELL), int((y1 + y2) / 2 // CELL))
        for ox1, oy1, ox2, oy2, op, oi in self.grid.get(cell, ()):
            if op > paint and ox1 <= x1 + 0.5 and oy1 <= y1 + 0.5 and ox2 >= x2 - 0.5 and oy2 >= y2 - 0.5:
                if oi != node and not self.doc.is_ancestor(oi, node) and not self.doc.is_ancestor(node, oi):
                    if passes is None or not passes(oi):
                        return True
        return False
