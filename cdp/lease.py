"""A lease: one isolated browser context, its tabs, and which of them is current."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from cdp.downloads import Downloads
from cdp.errors import BrowserGone, CDPError, CDPException, TargetClosed
from cdp.page import Dialog, Page

if TYPE_CHECKING:
    from cdp.browser import Browser
    from cdp.egress import Gate

log = logging.getLogger("browserd.cdp")


class Lease:
    """What a job holds while it runs: a context no other lease shares, and its tabs.

    Tabs the page opens itself (``window.open``, ``target=_blank``) appear in ``pages()`` once
    Chrome has reported them; they are attached as soon as Chrome announces them, so that a
    dialog they open on load is answered like the first tab's. Every JavaScript dialog of the
    lease is answered at once (dismissed unless ``accept_dialogs``) and kept in ``dialogs``.
    ``egress`` is the context's gate on the egress proxy (None when the pool runs without one):
    the job admits its rule there.
    """

    def __init__(self, browser: Browser, context_id: str, page: Page, *, browser_index: int = 0,
                 egress: Gate | None = None) -> None:
        self.browser = browser
        self.context_id = context_id
        self.egress = egress
        self.browser_index = browser_index
        self.acquired_at = time.monotonic()
        self.wait_seconds = 0.0
        self._pages: dict[str, Page] = {}
        self._current = page
        self.released = False
        self.stopped: CDPException | None = None  # set when the pool stopped this lease (a limit, a lost network service)
        self.dialogs: list[Dialog] = []
        self._accept_dialogs = False
        self._attaching: dict[str, asyncio.Task[Page | None]] = {}
        self.downloads = Downloads(browser.connection.root, context_id, self.owns_frame, owner=browser.chrome_user)
        self._adopt(page)
        self._off_created = browser.connection.root.on("Target.targetCreated", self._on_target_created)

    def __repr__(self) -> str:
        return f"<Lease context={self.context_id[:8]} browser={self.browser_index} tabs={len(self._pages)}>"

    @property
    def page(self) -> Page:
        """The current tab."""
        self._check()
        return self._current

    @property
    def accept_dialogs(self) -> bool:
        return self._accept_dialogs

    @accept_dialogs.setter
    def accept_dialogs(self, accept: bool) -> None:
        self._accept_dialogs = accept
        for page in self._pages.values():
            page.accept_dialogs = accept

    def owns_frame(self, frame_id: str) -> bool:
        return any(page.has_frame(frame_id) for page in self._pages.values())

    def _adopt(self, page: Page) -> Page:
        page.accept_dialogs = self._accept_dialogs
        self.dialogs.extend(page.dialogs)  # those answered before this lease saw the tab
        page.dialog_listener = self.dialogs.append
        self._pages[page.target_id] = page
        return page

    def _on_target_created(self, params: dict[str, Any]) -> None:
        info = params["targetInfo"]
        target_id = info["targetId"]
        # Only tabs the page opened (they have an opener): tabs we create are attached by new_page.
        if (info.get("type") != "page" or info.get("browserContextId") != self.context_id or not info.get("openerId")
                or target_id in self._pages or target_id in self._attaching or self.released):
            return
        self._attaching[target_id] = asyncio.ensure_future(self._attach(target_id))

    async def _attach(self, target_id: str) -> Page | None:
        try:
            return self._adopt(await self.browser.attach_page(target_id, self.context_id))
        except (TargetClosed, CDPError):
            return None  # the tab closed while we attached (or was stuck, and closed)
        except CDPException as exc:
            log.debug("attaching to tab %s failed: %s", target_id, exc)
            return None

    def _check(self) -> None:
        if self.stopped is not None:
            raise self.stopped
        if not self.browser.alive:
            raise BrowserGone(self.browser.connection.gone.reason if self.browser.connection.gone else "browser died")

    @property
    def known_pages(self) -> list[Page]:
        """The tabs attached so far, without asking Chrome (``pages()`` looks for new ones)."""
        return list(self._pages.values())

    async def pages(self) -> list[Page]:
        """Every open tab of this lease, attaching to tabs the page opened by itself."""
        self._check()
        infos = self.browser.pages_in(self.context_id)
        live = {info["targetId"] for info in infos}
        closed_by_us = False
        for target_id, page in list(self._pages.items()):
            if target_id not in live or page.session.failure is not None:
                if target_id in live or len(self._pages) > 1 or page.closed_for:
                    self._pages.pop(target_id)
                    closed_by_us = closed_by_us or bool(page.closed_for)
        for info in infos:
            target_id = info["targetId"]
            if target_id not in self._pages:
                if target_id not in self._attaching:
                    self._attaching[target_id] = asyncio.ensure_future(self._attach(target_id))
                await self._attaching[target_id]
                self._attaching.pop(target_id, None)
        if closed_by_us and not self._pages:
            await self.new_page()  # the lease keeps one tab to work in
        if self._current.target_id not in self._pages and self._pages:
            self._current = next(iter(self._pages.values()))
        return list(self._pages.values())

    async def new_page(self, url: str = "about:blank", *, switch: bool = True) -> Page:
        """Open a tab in this lease's context; it becomes current unless ``switch`` is False."""
        self._check()
        page = self._adopt(await self.browser.new_page(self.context_id))
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

    async def heap_bytes(self, timeout: float) -> int | None:
        """Memory the lease's tabs hold in their renderer (JS heap, DOM, array buffers); None if one did not answer."""
        total = 0
        for page in list(self._pages.values()):
            if page.session.failure is not None:
                continue
            try:
                heap = await page.session.send("Runtime.getHeapUsage", timeout=timeout)
            except CDPException:
                if page.session.failure is not None:
                    continue
                return None
            total += heap["usedSize"] + heap.get("embedderHeapUsedSize", 0) + heap.get("backingStorageSize", 0)
        return total

    async def stop(self, error: CDPException) -> None:
        """End this lease's pages now (over a limit, or its browser lost its network service); every later call raises ``error``."""
        if self.stopped is not None or self.released:
            return
        self.stopped = error
        log.warning("stopping lease %s: %s", self.context_id[:8], error)
        for page in self._pages.values():
            page.closed_for = str(error)
        root = self.browser.connection.root
        for info in self.browser.pages_in(self.context_id):  # crashed tabs too (their renderer was killed)
            with contextlib.suppress(CDPException):
                await root.send("Target.closeTarget", {"targetId": info["targetId"]}, timeout=5)

    async def _dispose(self) -> None:
        self._off_created()
        self.downloads.close()
        for task in self._attaching.values():
            task.cancel()
        if self.browser.alive:
            try:
                await self.browser.dispose_context(self.context_id)
            except CDPException:
                pass
