"""The job's view of its lease: numbered tabs, page captures, settling after input, the firewall.

Tabs get small ids in the order the job first sees them (the model addresses tabs by these).
Captures of a tab are chained (``previous``) so indexes stay stable and new elements are known.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import cdp
import dom
from daemon import metrics
from workers.agent.cancel import CancelToken
from workers.agent.errors import ActionError, ElementGone, URLBlocked
from workers.agent.firewall import Firewall

log = logging.getLogger("browserd.agent.browser")

NAV_TIMEOUT = 30.0
SETTLE_GRACE = 0.25  # how long an input may take to start a navigation
SETTLE_TIMEOUT = 15.0


class AgentBrowser:
    def __init__(self, lease: cdp.Lease, firewall: Firewall, cancel: CancelToken, *, viewport_expansion: int = 0) -> None:
        self.lease = lease
        self.firewall = firewall
        self.cancel = cancel
        self.viewport_expansion = viewport_expansion
        self._tab_ids: dict[str, int] = {}
        self._states: dict[str, Any] = {}  # target id -> last dom.PageState
        self._fresh: set[str] = set()  # targets whose last capture is current

    @property
    def page(self) -> cdp.Page:
        return self.lease.page

    async def start(self) -> None:
        await self.tabs()

    def check_alive(self) -> None:
        """Raise ``cdp.BrowserGone`` if the browser has died."""
        self.lease.page  # noqa: B018  (the lease checks its browser on every access)

    # --- tabs ------------------------------------------------------------------------------

    def tab_id(self, page: cdp.Page) -> int:
        if page.target_id not in self._tab_ids:
            self._tab_ids[page.target_id] = len(self._tab_ids)
        return self._tab_ids[page.target_id]

    async def tabs(self) -> list[tuple[int, cdp.Page]]:
        """Every open tab with its id, each one under the firewall."""
        pages = await self.lease.pages()
        for page in pages:
            await self.firewall.protect(page)
        return sorted(((self.tab_id(p), p) for p in pages), key=lambda t: t[0])

    async def tab(self, tab_id: int) -> cdp.Page:
        for tid, page in await self.tabs():
            if tid == tab_id:
                return page
        raise ActionError(f"no tab with id {tab_id}")

    async def open_tab(self, url: str) -> cdp.Page:
        self.firewall.check(url)
        page = await self.lease.new_page()
        await self.firewall.protect(page)
        self.tab_id(page)
        await self.goto(url, page)
        return page

    async def switch_to(self, page: cdp.Page) -> None:
        await self.lease.switch_to(page)
        self.invalidate()

    async def adopt_new_tabs(self, known: set[str]) -> cdp.Page | None:
        """Switch to a tab the page opened by itself since ``known``; refuse it if its URL is blocked."""
        new = [info["targetId"] for info in self.lease.browser.pages_in(self.lease.context_id)
               if info["targetId"] not in known]
        if not new:
            return None
        pages = {p.target_id: p for _, p in await self.tabs()}
        page = pages.get(new[-1])
        if page is None:
            return None
        url = await page.url()
        reason = self.firewall.policy.refusal(url) if url not in ("", "about:blank") else None
        if reason:
            await self.lease.close_page(page)
            raise URLBlocked(url, reason)
        await self.switch_to(page)
        with contextlib.suppress(cdp.CDPException):
            await self.cancel.run(page.wait_for_lifecycle("load", timeout=SETTLE_TIMEOUT), "while a tab loads")
        return page

    def known_tabs(self) -> set[str]:
        return {info["targetId"] for info in self.lease.browser.pages_in(self.lease.context_id)}

    # --- navigation ------------------------------------------------------------------------

    async def goto(self, url: str, page: cdp.Page | None = None) -> None:
        self.firewall.check(url)
        page = page or self.page
        self.invalidate(page)
        try:
            await self.cancel.run(page.goto(url, wait_until="load", timeout=NAV_TIMEOUT), "while navigating")
        except cdp.NavigationError as exc:
            self.raise_if_blocked(page)
            raise ActionError(f"could not open {url}: {exc.error_text}", action="go_to_url") from exc
        except cdp.CDPTimeout as exc:
            raise ActionError(f"{url} did not finish loading within {NAV_TIMEOUT:g}s", action="go_to_url") from exc

    def raise_if_blocked(self, page: cdp.Page | None = None) -> list[str]:
        """Raise for a blocked main-frame navigation of ``page``; return notes on other blocked requests."""
        page = page or self.page
        notes = []
        for block in self.firewall.new_blocks():
            if block.main_frame and block.target_id == page.target_id:
                raise URLBlocked(block.url, block.reason)
            notes.append(f"blocked {block.resource_type or 'request'} to {block.url}: {block.reason}")
        return notes

    def watch(self, page: cdp.Page | None = None) -> NavigationWatch:
        return NavigationWatch(page or self.page, self.cancel)

    # --- page state ------------------------------------------------------------------------

    def invalidate(self, page: cdp.Page | None = None) -> None:
        if page is None:
            self._fresh.clear()
        else:
            self._fresh.discard(page.target_id)

    async def capture(self) -> Any:
        """A fresh ``dom.PageState`` of the current tab, chained to its previous capture."""
        page = self.page
        previous = self._states.get(page.target_id)
        started = time.monotonic()
        state = await self.cancel.run(
            dom.capture(page, previous, viewport_expansion=self.viewport_expansion), "while reading the page"
        )
        metrics.observe_dom_capture(time.monotonic() - started, len(state.elements))
        self._states[page.target_id] = state
        self._fresh.add(page.target_id)
        return state

    def last_state(self) -> Any | None:
        return self._states.get(self.page.target_id)

    async def state(self) -> Any:
        """The current tab's state, captured again only if something may have changed it."""
        if self.page.target_id in self._fresh:
            return self._states[self.page.target_id]
        return await self.capture()

    async def element(self, index: int, action: str) -> Any:
        """The element behind ``index`` in the state the model last saw (captured if none yet)."""
        state = self.last_state() or await self.capture()
        element = state.element(index)
        if element is None:
            raise ElementGone(index, action=action)
        return element

    async def locate(self, element: Any, action: str) -> tuple[float, float]:
        try:
            point = await dom.locate(self.page, element)
        except cdp.CDPError as exc:
            raise ElementGone(element.index, action=action) from exc
        if point is None:
            raise ElementGone(element.index, action=action)
        return point


class NavigationWatch:
    """Notices a navigation started by an input, so the action returns once that page has loaded."""

    def __init__(self, page: cdp.Page, cancel: CancelToken) -> None:
        self.page = page
        self.cancel = cancel
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        main = page.main_frame_id
        self._offs = [
            page.session.on("Page.frameStartedLoading", lambda p: p.get("frameId") == main and self._start()),
            page.session.on("Page.frameStoppedLoading", lambda p: p.get("frameId") == main and self.stopped.set()),
        ]

    def _start(self) -> None:
        self.started.set()
        self.stopped.clear()

    async def __aenter__(self) -> NavigationWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for off in self._offs:
            off()

    async def settle(self) -> bool:
        """True when a navigation happened (and has loaded, or timed out loading)."""
        try:
            await asyncio.wait_for(self.started.wait(), SETTLE_GRACE)
        except TimeoutError:
            return False
        with contextlib.suppress(TimeoutError):
            await self.cancel.run(asyncio.wait_for(self.stopped.wait(), SETTLE_TIMEOUT), "while a page loads")
        return True
