"""A lease: one isolated browser context, its tabs, and which of them is current."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from cdp.errors import BrowserGone, CDPError, CDPException, TargetClosed
from cdp.page import Page

if TYPE_CHECKING:
    from cdp.browser import Browser


class Lease:
    """What a job holds while it runs: a context no other lease shares, and its tabs.

    Tabs the page opens itself (``window.open``, ``target=_blank``) appear in ``pages()`` once
    Chrome has reported them.
    """

    def __init__(self, browser: Browser, context_id: str, page: Page, *, browser_index: int = 0) -> None:
        self.browser = browser
        self.context_id = context_id
        self.browser_index = browser_index
        self.acquired_at = time.monotonic()
        self.wait_seconds = 0.0
        self._pages: dict[str, Page] = {page.target_id: page}
        self._current = page
        self.released = False

    def __repr__(self) -> str:
        return f"<Lease context={self.context_id[:8]} browser={self.browser_index} tabs={len(self._pages)}>"

    @property
    def page(self) -> Page:
        """The current tab."""
        self._check()
        return self._current

    def _check(self) -> None:
        if not self.browser.alive:
            raise BrowserGone(self.browser.connection.gone.reason if self.browser.connection.gone else "browser died")

    async def pages(self) -> list[Page]:
        """Every open tab of this lease, attaching to tabs the page opened by itself."""
        self._check()
        infos = self.browser.pages_in(self.context_id)
        live = {info["targetId"] for info in infos}
        for target_id in list(self._pages):
            if target_id not in live or self._pages[target_id].session.failure is not None:
                if target_id in live or len(self._pages) > 1:
                    self._pages.pop(target_id)
        for info in infos:
            if info["targetId"] not in self._pages:
                try:
                    self._pages[info["targetId"]] = await self.browser.attach_page(info["targetId"], self.context_id)
                except (TargetClosed, CDPError):
                    continue  # the tab closed while we attached

        if self._current.target_id not in self._pages and self._pages:
            self._current = next(iter(self._pages.values()))
        return list(self._pages.values())

    async def new_page(self, url: str = "about:blank", *, switch: bool = True) -> Page:
        """Open a tab in this lease's context; it becomes current unless ``switch`` is False."""
        self._check()
        page = await self.browser.new_page(self.context_id)
        self._pages[page.target_id] = page
        if url != "about:blank":
            await page.goto(url)
        if switch:
            self._current = page
        return page

    async def switch_to(self, page: Page) -> Page:
        if page.target_id not in self._pages:
            raise ValueError(f"{page!r} is not a tab of this lease")
        self._current = page
        await page.bring_to_front()
        return page

    async def close_page(self, page: Page) -> None:
        """Close a tab; the lease keeps at least one, opening a blank one if needed."""
        self._pages.pop(page.target_id, None)
        await page.close()
        if not self._pages:
            await self.new_page()
        elif self._current is page:
            self._current = next(reversed(self._pages.values()))

    async def wait_for_new_page(self, known: set[str], timeout: float = 2.0) -> Page | None:
        """A tab opened since ``known`` was taken, or None if none appears within ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for info in self.browser.pages_in(self.context_id):
                if info["targetId"] not in known:
                    await self.pages()
                    return self._pages.get(info["targetId"])
            await asyncio.sleep(0.05)
        return None

    async def _dispose(self) -> None:
        if self.browser.alive:
            try:
                await self.browser.dispose_context(self.context_id)
            except CDPException:
                pass
