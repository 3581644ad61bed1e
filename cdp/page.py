"""One tab: navigation with lifecycle waits, JavaScript, screenshots, and its out-of-process frames."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from cdp.errors import CDPException, CDPTimeout, NavigationError, TargetClosed
from cdp.session import CDPSession

log = logging.getLogger("browserd.cdp")

WaitUntil = Literal["commit", "domcontentloaded", "load", "networkidle"]

_LIFECYCLE = {"domcontentloaded": "DOMContentLoaded", "load": "load", "networkidle": "networkAlmostIdle"}

# A page that opens more dialogs than this within DIALOG_WINDOW seconds is in a loop (``while
# (true) alert()``): answering each one lets its script spin on, and neither Runtime.terminateExecution
# nor disabling script answers while it does, so the tab is closed.
DIALOG_BURST = 20
DIALOG_WINDOW = 5.0
SETUP_TIMEOUT = 10.0  # a tab whose Page domain cannot be enabled is stuck (a dialog opened before we attached)


@dataclass(frozen=True)
class Dialog:
    """A JavaScript dialog a page opened, and how it was answered (``message`` is page text: untrusted)."""

    type: str  # alert, confirm, prompt, beforeunload
    message: str
    url: str
    accepted: bool
    target_id: str


DialogListener = Callable[[Dialog], None]


class EvaluationError(Exception):
    """The page's JavaScript threw; ``text`` is Chrome's description of the exception."""

    def __init__(self, expression: str, text: str) -> None:
        self.expression, self.text = expression, text
        super().__init__(f"javascript error: {text}")


class Page:
    """A page target attached with a flattened session.

    Cross-origin iframes run in other renderer processes and are separate targets; the page
    auto-attaches to them so ``frame_sessions`` always maps each such frame to its session.
    """

    def __init__(self, session: CDPSession, *, target_id: str, context_id: str | None) -> None:
        self.session = session
        self.target_id = target_id
        self.context_id = context_id
        self.frame_sessions: dict[str, CDPSession] = {}
        self.main_frame_id: str = target_id  # a page's main frame id equals its target id
        self.frame_ids: set[str] = {target_id}  # every frame of the tab, in-process or not
        self._lifecycle: list[dict[str, Any]] = []
        self.accept_dialogs = False
        self.dialog_listener: DialogListener | None = None
        self.dialogs: list[Dialog] = []  # kept from the start: a tab may alert while it is being attached
        self.closed_for: str | None = None  # why browserd closed this tab itself (a dialog loop)
        self._dialog_times: deque[float] = deque(maxlen=DIALOG_BURST + 1)

    def __repr__(self) -> str:
        return f"<Page {self.target_id[:8]} context={self.context_id and self.context_id[:8]}>"

    @classmethod
    async def attach(cls, root: CDPSession, target_id: str, context_id: str | None) -> Page:
        reply = await root.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        session = root.connection.session(reply["sessionId"], target_id, parent=root)
        page = cls(session, target_id=target_id, context_id=context_id)
        await page._setup()
        return page

    async def _setup(self) -> None:
        s = self.session
        s.on("Page.lifecycleEvent", self._on_lifecycle)
        s.on("Page.javascriptDialogOpening", self._on_dialog)
        s.on("Page.frameAttached", lambda p: self.frame_ids.add(p["frameId"]))
        s.on("Page.frameDetached", lambda p: p.get("reason") != "swap" and self.frame_ids.discard(p["frameId"]))
        s.on("Target.attachedToTarget", self._on_child_attached)
        s.on("Target.detachedFromTarget", self._on_child_detached)
        try:
            await asyncio.gather(
                s.send("Page.enable", timeout=SETUP_TIMEOUT),
                s.send("Page.setLifecycleEventsEnabled", {"enabled": True}, timeout=SETUP_TIMEOUT),
                s.send("Inspector.enable", timeout=SETUP_TIMEOUT),
                _auto_attach(s),
            )
        except CDPTimeout:
            # A dialog opened before Page was enabled is never reported and cannot be answered;
            # the tab's renderer stays blocked, so the tab is of no use: close it.
            self.closed_for = "it was stuck (a dialog opened before browserd attached to it)"
            await self.close()
            raise TargetClosed(self.target_id, method="Page.enable") from None

    def has_frame(self, frame_id: str) -> bool:
        return frame_id in self.frame_ids or frame_id in self.frame_sessions

    # --- dialogs ---------------------------------------------------------------------------

    async def _on_dialog(self, params: dict[str, Any]) -> None:
        """Answer a dialog at once (it blocks the page's scripts, its load and every evaluate)."""
        kind = params.get("type", "alert")
        accept = self.accept_dialogs or kind == "beforeunload"  # leaving was asked for by the agent
        dialog = Dialog(kind, params.get("message", ""), params.get("url", ""), accept, self.target_id)
        now = time.monotonic()
        self._dialog_times.append(now)
        flood = len(self._dialog_times) > DIALOG_BURST and now - self._dialog_times[0] < DIALOG_WINDOW
        self.dialogs.append(dialog)
        if self.dialog_listener is not None:
            self.dialog_listener(dialog)
        try:
            await self.session.send("Page.handleJavaScriptDialog", {"accept": accept, "promptText": ""}, timeout=5)
        except CDPException as exc:
            log.debug("dialog on %s not answered: %s", self, exc)
        if flood and self.closed_for is None:
            self.closed_for = f"it opened more than {DIALOG_BURST} dialogs within {DIALOG_WINDOW:g}s"
            log.info("closing %s: %s", self, self.closed_for)
            await self.close()

    # --- frames ----------------------------------------------------------------------------

    def _on_child_attached(self, params: dict[str, Any]) -> Any:
        info = params["targetInfo"]
        if info.get("type") != "iframe":
            return None
        child = self.session.connection.session(params["sessionId"], info["targetId"], parent=self.session)
        self.frame_sessions[info["targetId"]] = child
        child.on("Target.attachedToTarget", self._on_child_attached)  # nested cross-origin frames
        child.on("Target.detachedFromTarget", self._on_child_detached)
        return self._resume_child(child)

    async def _resume_child(self, child: CDPSession) -> None:
        try:
            await asyncio.gather(_auto_attach(child), child.send("Runtime.runIfWaitingForDebugger"))
        except Exception as exc:  # the frame may be gone already; nothing to resume then
            log.debug("child frame setup failed: %s", exc)

    def _on_child_detached(self, params: dict[str, Any]) -> None:
        target_id = params.get("targetId")
        if target_id:
            self.frame_sessions.pop(target_id, None)
        else:
            for tid, sess in list(self.frame_sessions.items()):
                if sess.session_id == params.get("sessionId"):
                    del self.frame_sessions[tid]

    # --- navigation ------------------------------------------------------------------------

    def _on_lifecycle(self, params: dict[str, Any]) -> None:
        if params.get("frameId") == self.main_frame_id:
            self._lifecycle.append(params)
            del self._lifecycle[:-50]

    async def goto(self, url: str, *, wait_until: WaitUntil = "load", timeout: float = 30.0) -> None:
        """Navigate and wait until the page reaches ``wait_until``."""
        self._lifecycle.clear()
        reply = await self.session.send("Page.navigate", {"url": url}, timeout=timeout)
        if reply.get("errorText"):
            raise NavigationError(url, reply["errorText"])
        loader_id = reply.get("loaderId")
        if loader_id is None or wait_until == "commit":
            return  # same-document navigation (a #hash) has no new document to wait for
        await self.wait_for_lifecycle(_LIFECYCLE[wait_until], loader_id=loader_id, timeout=timeout)

    async def wait_for_lifecycle(self, name: str, *, loader_id: str | None = None, timeout: float = 30.0) -> None:
        """Wait for a main-frame lifecycle event (``load``, ``networkAlmostIdle``, …)."""

        def matches(ev: dict[str, Any]) -> bool:
            return (
                ev.get("frameId") == self.main_frame_id
                and ev.get("name") == name
                and (loader_id is None or ev.get("loaderId") == loader_id)
            )

        if any(matches(ev) for ev in self._lifecycle):
            return
        await self.session.wait_for("Page.lifecycleEvent", matches, timeout=timeout)

    async def reload(self, *, timeout: float = 30.0) -> None:
        self._lifecycle.clear()
        waiter = asyncio.ensure_future(self.wait_for_lifecycle("load", timeout=timeout))
        try:
            await self.session.send("Page.reload", timeout=timeout)
            await waiter
        finally:
            waiter.cancel()

    async def go_back(self, *, timeout: float = 30.0) -> bool:
        """Go one entry back in history; False when there is nothing to go back to."""
        history = await self.session.send("Page.getNavigationHistory")
        index = history["currentIndex"]
        if index <= 0:
            return False
        self._lifecycle.clear()
        entry = history["entries"][index - 1]
        await self.session.send("Page.navigateToHistoryEntry", {"entryId": entry["id"]}, timeout=timeout)
        try:
            await self.wait_for_lifecycle("load", timeout=timeout)
        except Exception:
            pass  # back/forward cache restores without a new load event
        return True

    # --- reading ---------------------------------------------------------------------------

    async def evaluate(self, expression: str, *, await_promise: bool = True, timeout: float | None = None) -> Any:
        """Run ``expression`` in the main frame and return its JSON value."""
        reply = await self.session.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
            timeout=timeout,
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "error")
            raise EvaluationError(expression, text)
        return reply.get("result", {}).get("value")

    async def info(self) -> dict[str, Any]:
        """Chrome's target info: ``url``, ``title``, ``type``, … without touching the page's JS."""
        root = self.session.parent
        assert root is not None
        reply = await root.send("Target.getTargetInfo", {"targetId": self.target_id})
        return reply["targetInfo"]

    async def url(self) -> str:
        return (await self.info())["url"]

    async def title(self) -> str:
        return (await self.info())["title"]

    async def screenshot(self, *, full_page: bool = False, jpeg_quality: int | None = None,
                         scale: float = 1.0) -> bytes:
        """A PNG of the viewport (or the whole page); a JPEG with ``jpeg_quality``, shrunk by ``scale``."""
        params: dict[str, Any] = {"format": "png"} if jpeg_quality is None else {
            "format": "jpeg", "quality": jpeg_quality, "optimizeForSpeed": True}  # about half the time
        if scale != 1.0 and not full_page:
            metrics = await self.session.send("Page.getLayoutMetrics")
            view = metrics.get("cssVisualViewport") or metrics["visualViewport"]
            params["clip"] = {"x": view.get("pageX", 0), "y": view.get("pageY", 0), "width": view["clientWidth"],
                              "height": view["clientHeight"], "scale": scale}
        if full_page:
            params["captureBeyondViewport"] = True
            metrics = await self.session.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        reply = await self.session.send("Page.captureScreenshot", params)
        return base64.b64decode(reply["data"])

    async def set_viewport(self, width: int, height: int) -> None:
        """Render the tab at this size (CSS pixels), whatever the browser window's."""
        await self.session.send("Emulation.setDeviceMetricsOverride",
                                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    async def bring_to_front(self) -> None:
        await self.session.send("Page.bringToFront")

    async def close(self) -> None:
        """Close the tab and wait until Chrome reports it destroyed, so tab lists agree at once."""
        root = self.session.parent
        if root is None or self.session.failure is not None:
            return
        gone = asyncio.ensure_future(
            root.wait_for("Target.targetDestroyed", lambda p: p.get("targetId") == self.target_id, timeout=5)
        )
        try:
            await root.send("Target.closeTarget", {"targetId": self.target_id}, timeout=5)
            await gone
        except CDPException:
            pass  # already closed, or the browser is going away
        finally:
            gone.cancel()


async def _auto_attach(session: CDPSession) -> None:
    await session.send(
        "Target.setAutoAttach",
        {
            "autoAttach": True,
            "waitForDebuggerOnStart": False,
            "flatten": True,
            "filter": [{"type": "iframe", "exclude": False}, {"exclude": True}],
        },
    )
