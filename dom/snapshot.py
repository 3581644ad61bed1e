"""Fetching the raw material of one capture: a DOM snapshot per frame target, and the viewport.

Everything is requested concurrently: the page's snapshot, one per out-of-process iframe, and the
owner element of each such iframe. Scroll position and viewport come from the snapshot itself.
Nothing runs in the page's JavaScript.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from cdp import CDPException, CDPSession, Page

log = logging.getLogger("browserd.dom")

# Each style is one more integer per layout object in the reply; these are the ones a rule needs:
# visibility (hidden text and controls), opacity (invisible subtrees), cursor (pointer regions),
# pointer-events (click-through overlays), overflow (clipping, scroll containers), background-color
# (what can cover other elements), position (a fixed element stays on screen, so it shows and covers
# only there). ``display`` is not needed: display:none has no layout object.
STYLES = ["visibility", "opacity", "cursor", "pointer-events", "overflow", "background-color", "position"]

# Paint order is needed for occlusion. DOM rects (offset/scroll/client) would add four numbers per
# layout object for every object on the page; frame offsets and scroll extents are derived from
# the bounds instead.
PARAMS: dict[str, Any] = {"computedStyles": STYLES, "includePaintOrder": True, "includeDOMRects": False}


@dataclass
class FrameSnapshot:
    """One target's snapshot; ``owner`` is the iframe element hosting it in ``parent_session``."""

    session: CDPSession
    reply: dict[str, Any]
    target_id: str | None = None
    parent_session: CDPSession | None = None
    owner_backend_id: int | None = None


@dataclass
class LayoutViewport:
    """What a capture measured of the page's layout viewport: where it is scrolled to, its size and
    the page's (not a size anyone asks for: that is ``workers.jobs.model.browsing.Viewport``)."""

    scroll_x: float
    scroll_y: float
    width: float
    height: float
    page_width: float
    page_height: float


async def take(session: CDPSession) -> dict[str, Any]:
    return await session.send("DOMSnapshot.captureSnapshot", PARAMS)


def layout_viewport(reply: dict[str, Any]) -> LayoutViewport:
    """Scroll position and sizes from the main document of a snapshot, so a capture needs no second
    round trip (``Page.getLayoutMetrics`` costs about a tenth of a snapshot): the document node's
    layout box is the viewport, and the document carries its scroll offset and content size."""
    doc = reply["documents"][0]
    layout = doc["layout"]
    box = next((b for k, b in zip(layout["nodeIndex"], layout["bounds"]) if k == 0), None)
    width, height = (float(box[2]), float(box[3])) if box else (0.0, 0.0)
    return LayoutViewport(
        scroll_x=float(doc.get("scrollOffsetX") or 0),
        scroll_y=float(doc.get("scrollOffsetY") or 0),
        width=width,
        height=height,
        page_width=float(doc.get("contentWidth") or width),
        page_height=float(doc.get("contentHeight") or height),
    )


async def _frame(target_id: str, session: CDPSession) -> FrameSnapshot | None:
    parent = session.parent
    try:
        reply, owner = await asyncio.gather(
            take(session),
            parent.send("DOM.getFrameOwner", {"frameId": target_id}) if parent else asyncio.sleep(0, {}),
        )
    except CDPException as exc:  # the frame navigated away or was removed while we looked
        log.debug("frame %s skipped: %s", target_id, exc)
        return None
    return FrameSnapshot(session, reply, target_id, parent, (owner or {}).get("backendNodeId"))


@dataclass(frozen=True)
class Snapshots:
    """One capture's replies: the page's snapshot first, then each out-of-process iframe's that
    answered; and the page's layout viewport, read from the first."""

    frames: list[FrameSnapshot]
    viewport: LayoutViewport


async def take_all(page: Page) -> Snapshots:
    """The page's snapshot and one per out-of-process iframe, taken at once."""
    frames = list(page.frame_sessions.items())
    if frames:
        main, *others = await asyncio.gather(take(page.session), *(_frame(tid, s) for tid, s in frames))
    else:  # the common case, awaited directly: a gather's task costs a loop turn (~40 us, 4% of a small page)
        main, others = await take(page.session), []
    snaps = [FrameSnapshot(page.session, main, page.target_id)]
    snaps.extend(f for f in others if f is not None)
    return Snapshots(snaps, layout_viewport(main))
