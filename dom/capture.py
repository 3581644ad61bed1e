"""``capture(page)``: one DOM snapshot per frame target in, a ``PageState`` out."""

from __future__ import annotations

import logging
import re
import time

from cdp import Page
import dom.frames as frames_mod
import dom.snapshot as snapshot
from dom.analyze import FrameAnalysis, FrameResult
from dom.frames import Frame, Rect
from dom.model import Element, Indexes, Numbering, ScrollInfo
from dom.prompt import Line
from dom.repeats import repeated_links
from dom.state import PageState

log = logging.getLogger("browserd.dom")


def _region(vp: snapshot.LayoutViewport, expansion: int) -> Rect | None:
    """The part of the page whose elements are offered, in top-level page coordinates."""
    if expansion < 0:
        return None
    return (vp.scroll_x - expansion, vp.scroll_y - expansion, vp.width + 2 * expansion, vp.height + 2 * expansion)


class _Analyses:
    """Every frame analysed parent-first, so a child frame can ask whether its iframe is covered."""

    def __init__(self, frames: list[Frame], region: Rect | None) -> None:
        self.by_frame: dict[int, FrameAnalysis] = {}
        self.results: list[tuple[Frame, FrameResult, FrameAnalysis]] = []
        for frame in frames:
            analysis = FrameAnalysis(frame, region, self._covered_above if frame.parent else None)
            self.by_frame[id(frame)] = analysis
            frame.context = analysis.down
            self.results.append((frame, analysis.run(), analysis))

    def _covered_above(self, frame: Frame, box: Rect) -> bool:
        parent = frame.parent
        while parent is not None:
            analysis = self.by_frame.get(id(parent))
            if analysis is None:
                return False
            moved = (box[0] + frame.dx - parent.dx, box[1] + frame.dy - parent.dy, box[2], box[3])
            if analysis.covers(moved, frame.owner):
                return True
            frame, box, parent = parent, moved, parent.parent
        return False

    def base_depth(self, frame: Frame, depths: dict[tuple[int, int], int]) -> int:
        """Depth of a frame's top-level lines: below the nearest offered element around its iframe."""
        if frame.parent is None:
            return 0
        parent = self.by_frame.get(id(frame.parent))
        if parent is None:
            return 0
        above = parent.nearest_offered(parent.cand_above(frame.owner))
        if above >= 0 and (id(frame.parent), above) in depths:
            return depths[(id(frame.parent), above)] + 1
        return self.base_depth(frame.parent, depths)


Keyed = tuple[tuple[int, ...], int, "Element | str", Frame]  # document position, depth, item, frame


def _keyed(analyses: _Analyses) -> list[Keyed]:
    """Offered elements and loose text of every frame, in document order, with their depths."""
    keyed: list[Keyed] = []
    depths: dict[tuple[int, int], int] = {}
    for frame, result, _ in analyses.results:
        base = analyses.base_depth(frame, depths)
        for el in result.elements:
            above = result.parent_of.get(el._node, -1)
            depth = depths[(id(frame), above)] + 1 if above >= 0 else base
            depths[(id(frame), el._node)] = depth
            keyed.append((frame.order + (el._node,), depth, el, frame))
        for node, txt in result.loose_text:
            keyed.append((frame.order + (node,), base, txt, frame))
    keyed.sort(key=lambda item: item[0])
    return keyed


def _without_repeats(keyed: list[Keyed], analyses: _Analyses) -> list[Keyed]:
    """Links that repeat another link (see ``dom.repeats``) left out. One standing inside a run of
    text keeps its words there as text, so the sentence around it still reads whole."""
    holders = {(id(f), p) for f, result, _ in analyses.results for p in result.parent_of.values() if p >= 0}
    repeated = repeated_links((item[2] for item in keyed if isinstance(item[2], Element)),
                              lambda el: (id(el._frame), el._node) in holders)
    out: list[Keyed] = []
    for k, (key, depth, item, frame) in enumerate(keyed):
        if id(item) not in repeated:
            out.append((key, depth, item, frame))
            continue
        assert isinstance(item, Element)
        beside = [keyed[j] for j in (k - 1, k + 1) if 0 <= j < len(keyed) and isinstance(keyed[j][2], str)]
        runs = [
            b for b in beside
            if b[3] is frame and _has_word(b[2]) and _same_run(frame.doc.parent, b[0][-1], item._node)
        ]
        if runs and item.text:
            out.append((key, runs[0][1], " " + item.text, frame))
    return out


def _lines(analyses: _Analyses) -> tuple[list[Element], list[Line]]:
    """All offered elements in document order, and the prompt lines with their depths."""
    keyed = _without_repeats(_keyed(analyses), analyses)
    elements = [item[2] for item in keyed if isinstance(item[2], Element)]
    lines: list[Line] = []
    prev: tuple[Frame, int] | None = None
    for key, depth, item, frame in keyed:
        if isinstance(item, Element):
            lines.append((depth, item))  # replaced by the index once numbered
            prev = None
            continue
        node = key[-1]
        if prev is not None and prev[0] is frame and _same_run(frame.doc.parent, prev[1], node) and lines:
            d, last = lines[-1]
            lines[-1] = (d, last + item)  # the piece carries its own leading space, if any
        else:
            lines.append((depth, item))
        prev = (frame, node)
    lines = [(d, " ".join(item.split()) if isinstance(item, str) else item) for d, item in lines]
    return elements, [line for line in lines if not isinstance(line[1], str) or _has_word(line[1])]


def _has_word(text: str) -> bool:
    """A line of punctuation only (the commas between inline links) carries nothing."""
    return _WORD_CHARACTER.search(text) is not None


# A character ``str.isalnum`` accepts: re's ``\w`` is exactly those and the underscore (searched
# in C; the generator over the characters cost a microsecond per ten of them, on every line).
_WORD_CHARACTER = re.compile(r"[^\W_]")


def _same_run(parent: list[int], a: int, b: int) -> bool:
    """Two text nodes close enough in the tree to read as one line (inline runs of one block)."""
    pa, pb = parent[a], parent[b]
    return pa == pb or parent[pa] == pb or pa == parent[pb]


def _number(elements: list[Element], previous: PageState | None) -> Indexes:
    """Stable indexes: a node keeps its number for as long as the document lives."""
    old = previous.numbering if previous is not None else None
    keys = [el.key for el in elements]
    if old is not None and not any(k in old.by_key for k in keys):
        old = None  # a new document: nothing carried over, nothing marked new
    numbering = Numbering(dict(old.by_key), old.next_index) if old else Numbering()
    by_index: dict[int, Element] = {}
    new: set[int] = set()
    for el, key in zip(elements, keys):
        index = numbering.by_key.get(key)
        if index is None or index in by_index:
            index = numbering.next_index
            numbering.next_index += 1
            numbering.by_key[key] = index
            if old is not None:
                new.add(index)
        el.index, el.is_new = index, index in new
        by_index[index] = el
    return Indexes(by_index, new, numbering)


async def capture(page: Page, previous: PageState | None = None, *, viewport_expansion: int = 0) -> PageState:
    """What the agent sees now: offered elements by stable index, loose text, scroll facts."""
    started = time.perf_counter()
    taken = await snapshot.take_all(page)
    fetched = time.perf_counter()
    state = build(taken.frames, taken.viewport, previous, viewport_expansion)
    log.debug(
        "captured %s: %d elements, %d frames, snapshot %.0f ms, analysis %.0f ms",
        state.url, len(state.elements), len(taken.frames), (fetched - started) * 1000, (time.perf_counter() - fetched) * 1000,
    )
    return state


def build(
    snaps: list[snapshot.FrameSnapshot], vp: snapshot.LayoutViewport, previous: PageState | None, viewport_expansion: int
) -> PageState:
    """The analysis half of a capture: snapshot replies in, ``PageState`` out (no I/O)."""
    frames = frames_mod.build(snaps)
    analyses = _Analyses(frames, _region(vp, viewport_expansion))
    elements, raw_lines = _lines(analyses)
    indexes = _number(elements, previous)
    lines: list[Line] = [(d, item.index if isinstance(item, Element) else item) for d, item in raw_lines]
    main = frames[0].doc
    scroll = ScrollInfo(
        scroll_y=vp.scroll_y,
        page_height=vp.page_height,
        viewport_height=vp.height,
        pixels_above=max(0.0, vp.scroll_y),
        pixels_below=max(0.0, vp.page_height - vp.scroll_y - vp.height),
    )
    return PageState(
        url=main.url,
        title=main.title,
        indexes=indexes,
        scroll=scroll,
        lines=lines,
        frames=frames,
        viewport_expansion=viewport_expansion,
    )
