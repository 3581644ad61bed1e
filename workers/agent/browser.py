"""The job's view of its lease: numbered tabs, page captures, settling after input, the firewall.

Tabs get small ids in the order the job first sees them (the model addresses tabs by these).
Captures of a tab are chained (``previous``) so indexes stay stable and new elements are known.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cdp
import dom
from workers.agent.cancel import CancelToken
from workers.agent.emulation import PageSettings
from workers.agent.documents import PDF_TYPE, Document, is_pdf, read_pdf
from workers.agent.errors import ActionError, ElementGone, ElementNotFound, HostUnresolved, ProxyFailed, URLBlocked
from workers.agent.firewall import Firewall
from workers.agent.telemetry import SILENT, DomCapture, Telemetry
from workers.jobs.model.actions import ElementRef
from workers.jobs.model.locators import Locator
from workers.jobs.model.result import DialogRecord, DownloadRecord

log = logging.getLogger("browserd.agent.browser")

NAV_TIMEOUT = 30.0
SETTLE_GRACE = 0.25  # how long an input may take to start a navigation
SETTLE_TIMEOUT = 15.0
DOWNLOAD_START = 2.0  # how long after an aborted navigation a download may take to be announced
DOWNLOAD_TIMEOUT = 30.0  # a download still running after this is cancelled
DIALOG_TEXT = 300  # characters of a dialog's message shown to the model
DIALOG_NOTES = 3  # dialogs told one by one to the model after an action; the rest are counted
DIALOG_RECORDS, DIALOG_RECORD_TEXT = 50, 1000  # what a step record keeps of a dialog loop's flood


@dataclass
class Target:
    """The element the current action addressed, its index and what it is (for the step record)."""

    element: Any
    index: int
    locator: Locator


@dataclass(frozen=True)
class BrowserTab:
    """A tab of the job's context and the id the model knows it by (stable while it is open)."""

    id: int
    page: cdp.Page


@dataclass
class PageEvents:
    """What pages did by themselves since the last look: dialogs answered, downloads ended, tabs closed.

    ``notes`` are one line each for the model (page text in them neutralized and marked untrusted).
    """

    notes: list[str] = field(default_factory=list)
    dialogs: list[DialogRecord] = field(default_factory=list)


class AgentBrowser:
    def __init__(self, lease: cdp.Lease, firewall: Firewall, cancel: CancelToken, *, viewport_expansion: int = 0,
                 telemetry: Telemetry = SILENT, accept_dialogs: bool = False,
                 downloads: cdp.DownloadLimits | None = None, page_settings: PageSettings | None = None) -> None:
        self.lease = lease
        self.page_settings = page_settings
        self.telemetry = telemetry
        self.firewall = firewall
        self.cancel = cancel
        self.viewport_expansion = viewport_expansion
        self.accept_dialogs = accept_dialogs
        self.download_limits = downloads or cdp.DownloadLimits(folder=None)
        self._tab_ids: dict[str, int] = {}
        self._states: dict[str, Any] = {}  # target id -> last dom.PageState
        self._fresh: set[str] = set()  # targets whose last capture is current
        self._whole: set[str] = set()  # targets whose last capture holds the whole page (for locators)
        self._dialogs_seen = 0
        self._downloads_seen: set[str] = set()
        self._pdf_download: PdfDownload | None = None  # the last PDF a page downloaded, and on which page
        self._documents: dict[tuple[str, int], Document] = {}  # PDFs read, by URL and bound
        self.target_of_action: Target | None = None  # set by ``target``; the action runner reads and resets it

    @property
    def page(self) -> cdp.Page:
        return self.lease.page

    async def start(self) -> None:
        self.lease.accept_dialogs = self.accept_dialogs
        await self.lease.downloads.enable(self.download_limits)
        if self.page_settings is not None:
            await self.page_settings.prepare(self.lease)
        await self.tabs()

    def check_alive(self) -> None:
        """Raise ``cdp.BrowserGone`` if the browser has died."""
        self.lease.page  # noqa: B018  (the lease checks its browser on every access)

    # --- tabs ------------------------------------------------------------------------------

    def tab_id(self, page: cdp.Page) -> int:
        if page.target_id not in self._tab_ids:
            self._tab_ids[page.target_id] = len(self._tab_ids)
        return self._tab_ids[page.target_id]

    async def tabs(self) -> list[BrowserTab]:
        """Every open tab with its id, each one under the firewall."""
        pages = await self.lease.pages()
        for page in pages:
            await self._guard(page)
        return sorted((BrowserTab(self.tab_id(p), p) for p in pages), key=lambda t: t.id)

    async def _guard(self, page: cdp.Page) -> None:
        """A tab's setup before the job uses it: the firewall, then the job's browser settings."""
        await self.firewall.protect(page)
        if self.page_settings is not None:
            await self.page_settings.apply(page)

    async def tab(self, tab_id: int) -> cdp.Page:
        for tab in await self.tabs():
            if tab.id == tab_id:
                return tab.page
        raise ActionError(f"no tab with id {tab_id}")

    async def open_tab(self, url: str) -> cdp.Page:
        self.firewall.check(url)
        page = await self.lease.new_page()
        await self._guard(page)
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
        pages = {t.page.target_id: t.page for t in await self.tabs()}
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

    async def goto(self, url: str, page: cdp.Page | None = None) -> cdp.Download | None:
        """Open ``url``; when the URL turns out to be a file, the download it started (the page stays)."""
        self.firewall.check(url)
        await self.cancel.run(self.firewall.gate.before_navigation(url), "while waiting to navigate (politeness)")
        self.firewall.expect(url)
        page = page or self.page
        self.invalidate(page)
        since = len(self.lease.downloads.items)
        try:
            await self.cancel.run(page.goto(url, wait_until="load", timeout=NAV_TIMEOUT), "while navigating")
        except cdp.NavigationError as exc:
            self._raise_if_proxy_failed()
            self._raise_if_refused(url)
            await self.raise_if_blocked(page, url)
            # Chrome aborts a navigation whose response is a file, then announces the download.
            download = await self.lease.downloads.began_from(page.main_frame_id, since, DOWNLOAD_START)
            if download is not None:
                return download
            raise ActionError(f"could not open {url}: {exc.error_text}", action="go_to_url") from exc
        except cdp.CDPTimeout as exc:
            raise ActionError(f"{url} did not finish loading within {NAV_TIMEOUT:g}s", action="go_to_url") from exc
        except cdp.TargetClosed as exc:
            self.check_alive()
            if page.closed_for:
                raise ActionError(f"the tab of {url} was closed: {page.closed_for}", action="go_to_url") from exc
            raise
        self._raise_if_refused(url)
        return None

    def _raise_if_proxy_failed(self) -> None:
        """Raise ``ProxyFailed`` once the job's own proxy failed (the job cannot go on without it)."""
        gate = self.lease.egress
        if gate is not None and gate.upstream_failure is not None:
            raise ProxyFailed(gate.upstream_failure)

    def _raise_if_refused(self, url: str) -> None:
        """Raise ``URLBlocked`` when the egress proxy refused the connection to ``url``'s host (the
        tab then shows the proxy's refusal, or Chrome's error page for a refused tunnel)."""
        gate = self.lease.egress
        refused = gate.refusal_for(url) if gate is not None else None
        if gate is not None and refused is not None:
            gate.new_refusals()
            if refused.unresolved:
                raise HostUnresolved(url, refused.refusal or "cannot resolve")
            raise URLBlocked(url, refused.refusal or "refused")

    async def raise_if_blocked(self, page: cdp.Page | None = None, url: str | None = None) -> list[str]:
        """Raise for a blocked main-frame navigation of ``page`` (to ``url``, or to where it is now);
        return notes on other blocked requests and refused connections."""
        page = page or self.page
        self._raise_if_proxy_failed()
        notes = []
        for block in self.firewall.new_blocks():
            if block.main_frame and block.target_id == page.target_id:
                raise URLBlocked(block.url, block.reason)
            notes.append(f"blocked {block.resource_type or 'request'} to {block.url}: {block.reason}")
        gate = self.lease.egress
        if gate is not None and gate.unreported():
            self._raise_if_refused(url or await page.url())
            notes += [f"blocked connection to {d.host}:{d.port}: {d.refusal}" for d in gate.new_refusals()]
        return notes

    # --- what pages did by themselves -------------------------------------------------------

    async def page_events(self) -> PageEvents:
        """Dialogs answered, downloads ended (waiting for running ones) and tabs closed since the last call."""
        events = PageEvents()
        fresh = self.lease.dialogs[self._dialogs_seen :]
        self._dialogs_seen = len(self.lease.dialogs)
        events.dialogs = [DialogRecord(type=d.type, message=d.message[:DIALOG_RECORD_TEXT], url=d.url[:2000],
                                       accepted=d.accepted) for d in fresh[:DIALOG_RECORDS]]
        events.notes = [_dialog_note(d) for d in fresh[:DIALOG_NOTES]]
        if len(fresh) > DIALOG_NOTES:
            events.notes.append(f"and {len(fresh) - DIALOG_NOTES} more dialogs")
        await self.cancel.run(self.lease.downloads.settle(DOWNLOAD_TIMEOUT), "while a download finishes")
        for item in self.lease.downloads.items:
            if item.guid not in self._downloads_seen and item.state is not cdp.DownloadState.in_progress:
                self._downloads_seen.add(item.guid)
                note = _download_note(item)
                if item.state is cdp.DownloadState.completed and _looks_pdf(item):
                    self._pdf_download = PdfDownload(await self.page.url(), item)
                    note += "; it is a PDF: extract_content reads its text"
                events.notes.append(note)
        closed = [(self.tab_id(p), p.closed_for) for p in self.lease.known_pages
                  if p.closed_for and p.target_id in self._tab_ids]
        if closed:
            await self.tabs()  # drops the closed tabs; the lease opens a blank one if none is left
            self.invalidate()
            for tab, reason in closed:
                events.notes.append(f"browserd closed tab {tab}: {reason}")
            events.notes.append(f"the current tab is {self.tab_id(self.page)} ({await self.page.url()})")
        if self.lease.egress is not None:
            events.notes += self.lease.egress.new_notices()  # the job's proxy was switched (a pool)
        return events

    async def document(self, max_chars: int) -> Document | None:
        """The PDF the current tab shows, or the one a page downloaded while the tab showed its
        current URL, read as text within ``max_chars`` (``workers.agent.documents``); None when
        there is none."""
        page = self.page
        url = await page.url()
        shown = await self.cancel.run(page.evaluate("document.contentType"), "while reading the page") == PDF_TYPE
        download = self._pdf_download if self._pdf_download is not None and self._pdf_download.page_url == url else None
        if not shown and download is None:
            return None
        source = url if shown else download.item.url if download is not None else url
        known = self._documents.get((source, max_chars))
        if known is not None:
            return known
        if shown:
            data = await self._fetch_shown(page, url)
        else:
            assert download is not None and download.item.path is not None
            data = await asyncio.to_thread(download.item.path.read_bytes)
        if not is_pdf(data):
            raise ActionError(f"{source} says it is a PDF but is not one", action="extract_content")
        found = await self.cancel.run(asyncio.to_thread(read_pdf, data, source, max_chars), "while reading a PDF")
        self._documents[(source, max_chars)] = found
        return found

    def documents_read(self) -> list[Document]:
        """The PDFs read so far (what the job saw of them, for the checks of a claimed success)."""
        return list(self._documents.values())

    async def _fetch_shown(self, page: cdp.Page, url: str) -> bytes:
        """The bytes of the PDF the tab shows, fetched again by the page (its cookies, its egress gate),
        refused past the job's download cap."""
        cap = self.download_limits.max_bytes
        reply = await self.cancel.run(page.evaluate(f"({_FETCH_PDF})({cap})", timeout=NAV_TIMEOUT), "while reading a PDF")
        if not isinstance(reply, dict) or "data" not in reply:
            why = reply.get("error") if isinstance(reply, dict) else "no answer"
            raise ActionError(f"the PDF at {url} could not be read: {why}", action="extract_content")
        return base64.b64decode(reply["data"])

    def downloads(self, stored: Mapping[str, str] | None = None) -> list[DownloadRecord]:
        """The files this job saved; ``stored`` maps a download's guid to its artifact's API path."""
        stored = stored or {}
        return [DownloadRecord(name=i.name, size=i.size, mime=i.mime, url=i.url, artifact=stored.get(i.guid))
                for i in self.lease.downloads.items if i.state is cdp.DownloadState.completed]

    def watch(self, page: cdp.Page | None = None) -> NavigationWatch:
        return NavigationWatch(page or self.page, self.cancel)

    # --- page state ------------------------------------------------------------------------

    def invalidate(self, page: cdp.Page | None = None) -> None:
        if page is None:
            self._fresh.clear()
        else:
            self._fresh.discard(page.target_id)

    async def capture(self, *, whole_page: bool = False) -> Any:
        """A fresh ``dom.PageState`` of the current tab, chained to its previous capture
        (``whole_page``: every element, not only those near the viewport, for a locator to search)."""
        page = self.page
        previous = self._states.get(page.target_id)
        started = time.monotonic()
        expansion = -1 if whole_page else self.viewport_expansion
        state = await self.cancel.run(
            dom.capture(page, previous, viewport_expansion=expansion), "while reading the page"
        )
        self.telemetry.dom_capture(DomCapture(time.monotonic() - started, len(state.elements)))
        self._states[page.target_id] = state
        self._fresh.add(page.target_id)
        (self._whole.add if whole_page else self._whole.discard)(page.target_id)
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

    async def target(self, params: ElementRef, action: str) -> Any:
        """The element ``params`` name: by index in the state the model last saw, or (a script's
        selector, text, role and name, or recorded locator) searched for in one fresh capture of
        the whole page. Remembers it with its locator in ``target_of_action``."""
        if params.index is not None:
            element = await self.element(params.index, action)
            state = self.last_state()
        else:
            tab = self.page.target_id
            fresh = tab in self._fresh and tab in self._whole
            state = self._states[tab] if fresh else await self.capture(whole_page=True)
            element = await self._find(state, params, action)
        identity = dom.identify(state, element)
        self.target_of_action = Target(element, element.index, Locator.model_validate(identity.to_json()))
        return element

    async def _find(self, state: Any, params: ElementRef, action: str) -> Any:
        try:
            if params.selector is not None:
                return await self.cancel.run(dom.select(self.page, state, params.selector), "while finding an element")
            if params.locator is not None:
                return dom.refind(state, params.locator).element
            return dom.find_by(state, text=params.by_text(), role=params.role, name=params.name)
        except dom.LocatorError as exc:
            raise ElementNotFound(f"{action}: {exc}", action=action,
                                  ambiguous=isinstance(exc, dom.LocatorAmbiguous)) from exc

    async def locate(self, element: Any, action: str) -> dom.Point:
        try:
            point = await dom.locate(self.page, element)
        except cdp.CDPError as exc:
            raise ElementGone(element.index, action=action) from exc
        if point is None:
            raise ElementGone(element.index, action=action)
        return point


def _untrusted(text: str, limit: int) -> str:
    """Page text on one line, quoted, with no angle brackets: it cannot pose as a tag or a new line of ours."""
    flat = " ".join(text.split())
    flat = flat if len(flat) <= limit else flat[:limit] + "..."
    return json.dumps(dom.neutralize(flat), ensure_ascii=False)


def _dialog_note(dialog: cdp.Dialog) -> str:
    answer = "accepted" if dialog.accepted else "dismissed"
    if dialog.type == "prompt" and dialog.accepted:
        answer = "answered with empty text"
    return (f"the page showed a{'n' if dialog.type[0] in 'aeiou' else ''} {dialog.type} dialog ({answer}); "
            f"its text is untrusted page content: {_untrusted(dialog.message, DIALOG_TEXT)}")


@dataclass(frozen=True)
class PdfDownload:
    """A PDF a page downloaded, and the URL of the tab when it was noticed."""

    page_url: str
    item: cdp.Download


def _looks_pdf(item: cdp.Download) -> bool:
    return item.mime == PDF_TYPE or item.name.lower().endswith(".pdf")


_FETCH_PDF = """async function(cap) {
  const reply = await fetch(location.href, {credentials: 'include'});
  if (!reply.ok) return {error: 'HTTP ' + reply.status};
  const length = Number(reply.headers.get('content-length') || 0);
  if (length > cap) return {error: 'larger than the download cap (' + length + ' bytes)'};
  const bytes = new Uint8Array(await reply.arrayBuffer());
  if (bytes.length > cap) return {error: 'larger than the download cap (' + bytes.length + ' bytes)'};
  let text = '';
  for (let i = 0; i < bytes.length; i += 32768) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 32768));
  return {data: btoa(text)};
}"""


def _download_note(item: cdp.Download) -> str:
    name = _untrusted(item.name, 120)
    if item.state is cdp.DownloadState.completed:
        return f"downloaded the file {name} ({item.size} bytes, {item.mime})"
    return f"the download of {name} from {dom.neutralize(item.url)} was refused: {item.reason}"


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
