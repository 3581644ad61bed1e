"""A browser: a connection, optionally the process we launched, and its targets.

The browser watches its own process: when Chrome dies, every pending call fails with
``BrowserGone`` at once (the process watch notices before any timeout would).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.request
from collections.abc import Callable
from typing import Any

from cdp.confinement import ChromeUser, Confinement
from cdp.connection import Connection
from cdp.errors import BrowserGone, CDPException, CDPTimeout, ChromeLaunchError
from cdp.launcher import ChromeProcess, Debugging, launch_chrome, tree_memory_bytes
from cdp.page import Page
from config.tasks import cancel_and_wait

log = logging.getLogger("browserd.cdp")


class Browser:
    """Use ``await Browser.launch()`` or ``await Browser.connect(endpoint)``; ``await close()`` always."""

    def __init__(self, connection: Connection, process: ChromeProcess | None = None) -> None:
        self.connection = connection
        self.process = process
        self.targets: dict[str, dict[str, Any]] = {}
        self._watch: asyncio.Task[None] | None = None
        root = connection.root
        root.on("Target.targetCreated", self._on_target)
        root.on("Target.targetInfoChanged", self._on_target)
        root.on("Target.targetDestroyed", lambda p: self.targets.pop(p["targetId"], None))
        if process is not None:
            self._watch = asyncio.get_running_loop().create_task(self._watch_process(process))

    @classmethod
    async def launch(
        cls,
        executable: str | None = None,
        *,
        extra_args: list[str] | tuple[str, ...] = (),
        timeout: float = 20.0,
        cdp_timeout: float = 30.0,
        debugging: Debugging = "pipe",
        confinement: Confinement | None = None,
    ) -> Browser:
        """Launch a Chrome and speak to it over its DevTools pipe: it opens no port a page could
        reach. ``debugging="port"`` opens a loopback port instead (to share the browser with
        another client, as tests of ``connect`` do)."""
        process = await launch_chrome(executable, extra_args=extra_args, timeout=timeout, debugging=debugging,
                                      confinement=confinement)
        try:
            if process.pipe is not None:
                connection = await Connection.pipe(process.pipe.read_fd, process.pipe.write_fd,
                                                   description=f"pipe to chrome {process.pid}",
                                                   default_timeout=cdp_timeout)
            else:
                connection = await Connection.open(process.ws_url, default_timeout=cdp_timeout)
            await _first_reply(connection, process, timeout)
        except BaseException:
            await process.kill(grace=0.5)
            raise
        return await cls._ready(connection, process)

    @classmethod
    async def connect(cls, endpoint: str, *, cdp_timeout: float = 30.0) -> Browser:
        """Attach to a running browser by ``ws://…`` URL or ``http://host:port``.

        That endpoint controls every context of the browser: it must not be reachable from the
        pages the browser loads (nor from anything untrusted on its network).
        """
        ws_url = endpoint
        if endpoint.startswith(("http://", "https://")):
            ws_url = await asyncio.to_thread(_ws_url_from_http, endpoint)
        connection = await Connection.open(ws_url, default_timeout=cdp_timeout)
        return await cls._ready(connection, None)

    @classmethod
    async def _ready(cls, connection: Connection, process: ChromeProcess | None) -> Browser:
        browser = cls(connection, process)
        try:
            await connection.root.send("Target.setDiscoverTargets", {"discover": True})
        except BaseException:
            await browser.close()
            raise
        return browser

    # --- state -----------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self.connection.closed and (self.process is None or self.process.alive)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def process_exited(self) -> bool:
        """The launched Chrome's process has ended, though its pipe may not have told us yet."""
        return self.process is not None and self.process.exited

    @property
    def chrome_user(self) -> ChromeUser | None:
        """The user a launched Chrome runs as when it is not the worker's (files Chrome writes must be its)."""
        confinement = self.process.confinement if self.process else None
        return confinement.user if confinement else None

    def on_gone(self, callback: Callable[[BrowserGone], None]) -> None:
        self.connection.on_close(callback)

    def memory_bytes(self, past: int = 0) -> int | None:
        """Memory (PSS) of the whole process tree; None for a browser we did not launch. With
        ``past`` (a limit, in bytes), a tree that is within it by resident size is not read further
        (``tree_memory_bytes``): the answer is then its resident size, still within the limit."""
        return tree_memory_bytes(self.process.pid, past) if self.process else None

    def pages_in(self, context_id: str) -> list[dict[str, Any]]:
        """Target infos of the page targets (tabs) in one browser context, oldest first."""
        return [t for t in self.targets.values() if t.get("browserContextId") == context_id and t.get("type") == "page"]

    def _on_target(self, params: dict[str, Any]) -> None:
        info = params["targetInfo"]
        self.targets[info["targetId"]] = info

    async def _watch_process(self, process: ChromeProcess) -> None:
        code = await process.proc.wait()
        if not self.connection.closed:
            self.connection.abort(f"browser process {process.pid} exited with code {code}")

    # --- contexts and pages ----------------------------------------------------------------

    async def new_context(self, proxy_server: str | None = None) -> str:
        """An isolated browser context: its own cookies, storage and cache.

        With ``proxy_server`` every request of the context goes through that proxy, loopback
        included (``<-loopback>`` removes Chrome's implicit bypass for it): see ``cdp.egress``.
        """
        params: dict[str, Any] = {"disposeOnDetach": True}
        if proxy_server is not None:
            params.update(proxyServer=proxy_server, proxyBypassList="<-loopback>")
        reply = await self.connection.root.send("Target.createBrowserContext", params)
        return reply["browserContextId"]

    async def dispose_context(self, context_id: str) -> None:
        with contextlib.suppress(CDPException):
            await self.connection.root.send("Target.disposeBrowserContext", {"browserContextId": context_id}, timeout=10)

    async def new_page(self, context_id: str | None = None, url: str = "about:blank") -> Page:
        params: dict[str, Any] = {"url": url}
        if context_id:
            params["browserContextId"] = context_id
        reply = await self.connection.root.send("Target.createTarget", params)
        return await Page.attach(self.connection.root, reply["targetId"], context_id)

    async def attach_page(self, target_id: str, context_id: str | None) -> Page:
        """Attach to a tab the page itself opened (``window.open``, ``target=_blank``)."""
        return await Page.attach(self.connection.root, target_id, context_id)

    async def version(self) -> dict[str, Any]:
        return await self.connection.root.send("Browser.getVersion")

    async def close(self) -> None:
        """Close the connection and, if we launched it, stop the browser and delete its profile."""
        if self.process is not None and not self.connection.closed:
            with contextlib.suppress(CDPException):
                await self.connection.root.send("Browser.close", timeout=2)
        await self.connection.close()
        if self.process is not None:
            await self.process.kill()
        if self._watch is not None:
            await cancel_and_wait(self._watch, "browser watch")


async def _first_reply(connection: Connection, process: ChromeProcess, timeout: float) -> None:
    """Wait until Chrome answers; a Chrome that dies first is a launch error with its stderr."""
    try:
        await connection.root.send("Browser.getVersion", timeout=timeout)
    except (BrowserGone, CDPTimeout) as exc:
        await connection.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.proc.wait(), 1.0)
        code = process.proc.returncode
        what = f"exited with code {code}" if code is not None else f"did not answer within {timeout:g}s"
        raise ChromeLaunchError(f"chrome {what} on its DevTools {connection.url}", process.stderr_tail()) from exc


def _ws_url_from_http(endpoint: str) -> str:
    url = endpoint.rstrip("/") + "/json/version"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.load(resp)["webSocketDebuggerUrl"]
    except (OSError, KeyError, ValueError) as exc:
        raise BrowserGone(f"cannot read the DevTools endpoint from {url}: {exc}") from exc
