"""Where to click an element now: scrolled into view, centre in top-level viewport CSS pixels.

Boxes from a capture go stale the moment the page scrolls or reflows, so clicks ask Chrome again.
``DOM.getContentQuads`` answers in the coordinates of the element's own frame target: for the top
document and same-process iframes that is already the top-level viewport; an out-of-process frame
adds the content-box origin of each iframe above it.

An element that is still moving (an accordion panel opening while the one above it closes, a
sliding menu) is clicked where it comes to rest, as Playwright's "stable" check does: its box is
read until two reads agree, for at most ``STABLE_WAIT``. Two reads are at least ``STABLE_GAP``
apart *and* the page has rendered two frames between them: a transition moves only when a frame
is produced, so on a starved host (no frame within the gap) two reads of a moving element agreed
and it was clicked mid-way. The frames are awaited in an isolated world, whose
``requestAnimationFrame`` a hostile page cannot replace, for at most ``FRAME_WAIT``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from cdp import CDPError, CDPSession, CDPTimeout, Page
from dom.model import Element

log = logging.getLogger("browserd.dom")

Quad = list[float]
Box = tuple[float, float, float, float]  # x1, y1, x2, y2 (this module's own)


@dataclass(frozen=True)
class Point:
    """Where to click: CSS pixels in the top-level viewport."""

    x: float
    y: float

STABLE_GAP = 0.04  # seconds between two reads of a box: more than two animation frames
STABLE_WAIT = 1.0  # seconds an element may keep moving before it is clicked where it is
STABLE_TOLERANCE = 0.5  # CSS pixels two reads may differ by and still agree
FRAME_WAIT = 0.5  # seconds we wait for two rendered frames between two reads, at most
FRAMES_WORLD = "browserd-frames"  # the isolated world the frame wait runs in
_TWO_FRAMES = "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"


def _bbox(quad: Quad) -> Box:
    xs, ys = quad[0::2], quad[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _area(quad: Quad) -> float:
    x1, y1, x2, y2 = _bbox(quad)
    return (x2 - x1) * (y2 - y1)


async def _scroll_into_view(session: CDPSession, backend_node_id: int) -> None:
    await session.send("DOM.scrollIntoViewIfNeeded", {"backendNodeId": backend_node_id})


async def _content_origin(session: CDPSession, backend_node_id: int) -> tuple[float, float]:
    model = (await session.send("DOM.getBoxModel", {"backendNodeId": backend_node_id}))["model"]
    x1, y1, _, _ = _bbox(model["content"])
    return x1, y1


async def _box(element: Element) -> Box | None:
    """The element's largest visible quad, in top-level viewport CSS pixels; None if it has none."""
    reply = await element.session.send("DOM.getContentQuads", {"backendNodeId": element.backend_node_id})
    quads = [q for q in reply.get("quads", []) if _area(q) > 0]
    if not quads:
        return None
    x1, y1, x2, y2 = _bbox(max(quads, key=_area))
    for owner in element.frame_path:
        ox, oy = await _content_origin(owner.session, owner.backend_node_id)
        x1, y1, x2, y2 = x1 + ox, y1 + oy, x2 + ox, y2 + oy
    return x1, y1, x2, y2


def _agree(a: Box, b: Box) -> bool:
    return all(abs(p - q) <= STABLE_TOLERANCE for p, q in zip(a, b))


async def _frames_world(page: Page) -> int | None:
    """The execution context of our isolated world in the page's main frame (None if it cannot be made)."""
    try:
        world = await page.session.send("Page.createIsolatedWorld",
                                        {"frameId": page.main_frame_id, "worldName": FRAMES_WORLD}, timeout=FRAME_WAIT)
    except (CDPError, CDPTimeout):
        return None
    return int(world["executionContextId"])


async def _two_frames(page: Page, world: int | None) -> None:
    """Until the page has rendered two frames, or ``FRAME_WAIT`` has passed."""
    if world is None:
        return
    with contextlib.suppress(CDPError, CDPTimeout):
        await page.session.send("Runtime.evaluate", {"expression": _TWO_FRAMES, "contextId": world,
                                                     "awaitPromise": True}, timeout=FRAME_WAIT)


async def _resting_box(page: Page, element: Element) -> Box | None:
    """The box once two reads agree across ``STABLE_GAP`` and two frames (or ``STABLE_WAIT`` has passed)."""
    box = await _box(element)
    deadline = time.monotonic() + STABLE_WAIT
    world = await _frames_world(page) if box is not None else None
    while box is not None and time.monotonic() < deadline:
        await asyncio.gather(asyncio.sleep(STABLE_GAP), _two_frames(page, world))
        again = await _box(element)
        if again is None or _agree(box, again):
            return again
        box = again
    return box


async def locate(page: Page, element: Element) -> Point | None:
    """Scroll ``element`` into view; its centre at rest in the top-level viewport, or None if gone."""
    try:
        for owner in reversed(element.frame_path):  # innermost iframe first in the path
            await _scroll_into_view(owner.session, owner.backend_node_id)
        await _scroll_into_view(element.session, element.backend_node_id)
        box = await _resting_box(page, element)
        if box is None:
            return None
        metrics = await page.session.send("Page.getLayoutMetrics")
    except CDPError as exc:  # "No node with given id found", "Node is detached from document", ...
        log.debug("locate [%s] failed: %s", element.index, exc)
        return None
    x1, y1, x2, y2 = box
    vv = metrics.get("cssVisualViewport") or metrics["visualViewport"]
    # the visible part of the box, so a partly scrolled-out element is clicked where it shows
    vx1, vy1 = max(x1, 0.0), max(y1, 0.0)
    vx2, vy2 = min(x2, float(vv["clientWidth"])), min(y2, float(vv["clientHeight"]))
    if vx2 > vx1 and vy2 > vy1:
        x1, y1, x2, y2 = vx1, vy1, vx2, vy2
    return Point((x1 + x2) / 2, (y1 + y2) / 2)
