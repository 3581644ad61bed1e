"""Fixtures for dom tests: a fresh page per test from the shared pool, and lookups by element id."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

import dom
from cdp import BrowserPool, Page


@pytest_asyncio.fixture
async def page(pool: BrowserPool) -> AsyncIterator[Page]:
    async with pool.lease() as lease:
        yield lease.page


def by_id(state: dom.PageState) -> dict[str, dom.Element]:
    """Offered elements keyed by their HTML id (those that have one)."""
    return {el.attributes["id"]: el for el in state.elements.values() if el.attributes.get("id")}


def by_name(state: dom.PageState) -> dict[str, dom.Element]:
    return {el.attributes["name"]: el for el in state.elements.values() if el.attributes.get("name")}


async def click(page: Page, element: dom.Element) -> None:
    """A real mouse click at the element's fresh centre, as the agent's action layer does it."""
    point = await dom.locate(page, element)
    assert point is not None, f"{element!r} could not be located"
    x, y = point.x, point.y
    for kind in ("mousePressed", "mouseReleased"):
        await page.session.send(
            "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
        )
