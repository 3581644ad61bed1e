"""A browser context's storage state (cookies, per-origin localStorage): written before a job's first
navigation, read back at its end. The state is a plain dict in Playwright's ``storageState`` shape.

Cookies go through ``Storage.setCookies`` / ``Storage.getCookies`` with the context's id: one
call each, for the whole context, no page involved.

localStorage has no context-wide CDP call: ``DOMStorage`` only reaches origins a live frame
holds, and ``Page.addScriptToEvaluateOnNewDocument`` would run again in every later document of
the origin (putting back keys the site itself removed, e.g. at logout) and only in the tab it was
added to. So, as Playwright does, a scratch tab of the context visits each origin with every
request answered by ``Fetch.fulfillRequest`` with an empty page: the document is the origin's
(same storage) but nothing leaves the browser, no site script runs, and no service worker answers
(``Network.setBypassServiceWorker``). The tab is closed before the job sees its tabs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from cdp.browser import Browser
from cdp.errors import CDPException
from cdp.page import Page
from cdp.session import CDPSession

BLANK = base64.b64encode(b"<!doctype html><title></title>").decode()
VISIT_TIMEOUT = 10.0
_READ = "JSON.stringify(Object.keys(localStorage).map(k => ({name: k, value: localStorage.getItem(k)})))"


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


class OriginLog:
    """Every http(s) origin the context's tabs and out-of-process frames showed (for reading back
    their localStorage); ``close()`` stops listening."""

    def __init__(self, browser: Browser, context_id: str) -> None:
        self.context_id = context_id
        self.origins: set[str] = set()
        root = browser.connection.root
        self._off: list[Callable[[], None]] = [root.on(event, self._seen) for event in
                                               ("Target.targetCreated", "Target.targetInfoChanged")]
        for info in browser.targets.values():
            self._seen({"targetInfo": info})

    def _seen(self, params: dict[str, Any]) -> None:
        info = params["targetInfo"]
        if info.get("browserContextId") == self.context_id and info.get("type") in ("page", "iframe"):
            origin = origin_of(info.get("url", ""))
            if origin is not None:
                self.origins.add(origin)

    def close(self) -> None:
        for off in self._off:
            off()


async def write_state(browser: Browser, context_id: str, state: dict[str, Any]) -> None:
    """Put ``state``'s cookies and localStorage into the context (before any of its pages navigate)."""
    cookies = [_cdp_cookie(c) for c in state.get("cookies", [])]
    if cookies:
        await browser.connection.root.send("Storage.setCookies", {"cookies": cookies, "browserContextId": context_id})
    origins = [o for o in state.get("origins", []) if o.get("localStorage")]
    if origins:
        async with _scratch_tab(browser, context_id) as page:
            for entry in origins:
                await _visit(page, entry["origin"])
                items = json.dumps({i["name"]: i["value"] for i in entry["localStorage"]})
                await page.evaluate(f"(() => {{ const items = {items}; localStorage.clear(); "
                                    "for (const [k, v] of Object.entries(items)) localStorage.setItem(k, v); })()")


async def read_state(browser: Browser, context_id: str, origins: set[str]) -> dict[str, Any]:
    """The context's cookies, and the localStorage of each of ``origins`` that holds any."""
    reply = await browser.connection.root.send("Storage.getCookies", {"browserContextId": context_id})
    state: dict[str, Any] = {"cookies": [_playwright_cookie(c) for c in reply.get("cookies", [])], "origins": []}
    if origins:
        async with _scratch_tab(browser, context_id) as page:
            for origin in sorted(origins):
                await _visit(page, origin)
                items = json.loads(await page.evaluate(_READ))
                if items:
                    state["origins"].append({"origin": origin, "localStorage": items})
    return state


@contextlib.asynccontextmanager
async def _scratch_tab(browser: Browser, context_id: str) -> Any:
    page = await browser.new_page(context_id)
    session = page.session
    off = session.on("Fetch.requestPaused", lambda p: _answer_blank(session, p))
    try:
        await session.send("Network.enable")
        await session.send("Network.setBypassServiceWorker", {"bypass": True})
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})
        yield page
    finally:
        off()
        await page.close()


async def _answer_blank(session: CDPSession, params: dict[str, Any]) -> None:
    with contextlib.suppress(CDPException):
        await session.send("Fetch.fulfillRequest", {
            "requestId": params["requestId"], "responseCode": 200, "body": BLANK,
            "responseHeaders": [{"name": "Content-Type", "value": "text/html; charset=utf-8"},
                                {"name": "Cache-Control", "value": "no-store"}]})


async def _visit(page: Page, origin: str) -> None:
    await asyncio.wait_for(page.goto(origin + "/", wait_until="load", timeout=VISIT_TIMEOUT), VISIT_TIMEOUT + 1)


def _cdp_cookie(cookie: dict[str, Any]) -> dict[str, Any]:
    out = {"name": cookie["name"], "value": cookie["value"], "domain": cookie["domain"],
           "path": cookie.get("path", "/"), "secure": cookie.get("secure", False),
           "httpOnly": cookie.get("httpOnly", False)}
    if cookie.get("sameSite"):
        out["sameSite"] = cookie["sameSite"]
    if cookie.get("expires", -1) not in (-1, None) and cookie["expires"] > 0:
        out["expires"] = cookie["expires"]
    return out


def _playwright_cookie(cookie: dict[str, Any]) -> dict[str, Any]:
    out = {"name": cookie["name"], "value": cookie["value"], "domain": cookie["domain"], "path": cookie["path"],
           "expires": -1 if cookie.get("session") else cookie.get("expires", -1),
           "httpOnly": cookie.get("httpOnly", False), "secure": cookie.get("secure", False)}
    if cookie.get("sameSite"):
        out["sameSite"] = cookie["sameSite"]
    return out
