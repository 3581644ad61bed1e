"""One transport per browser (a pipe or a websocket), multiplexing every target session over it
(flattened sessions).

Replies are routed to futures by message id, events to the session named by their ``sessionId``.
When the transport closes every pending call fails at once with ``BrowserGone``: nobody waits for a
timeout on a browser that is already dead.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging

import orjson
from collections.abc import Callable
from typing import Any

from cdp.errors import BrowserGone, CDPError, CDPException, CDPTimeout
from cdp.session import CDPSession
from cdp.transport import PipeTransport, Transport, TransportClosed, WebSocketTransport
from config.tasks import cancel_and_wait

log = logging.getLogger("browserd.cdp")

DEFAULT_TIMEOUT = 30.0


class Connection:
    """A live DevTools connection: ``await Connection.open(ws_url)`` or ``await Connection.pipe(r, w)``."""

    def __init__(self, transport: Transport, *, default_timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = transport.description
        self.default_timeout = default_timeout
        self._transport = transport
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]], str, str | None]] = {}
        self._sessions: dict[str | None, CDPSession] = {}
        self._close_callbacks: list[Callable[[BrowserGone], None]] = []
        self.gone: BrowserGone | None = None
        self.root = CDPSession(self, None, target_id="browser")
        self._sessions[None] = self.root
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(), name=f"cdp-reader {self.url}")

    @classmethod
    async def open(cls, ws_url: str, *, timeout: float = 10.0, default_timeout: float = DEFAULT_TIMEOUT) -> Connection:
        """Attach over a DevTools websocket (a browser browserd did not launch)."""
        return cls(await WebSocketTransport.connect(ws_url, timeout=timeout), default_timeout=default_timeout)

    @classmethod
    async def pipe(cls, read_fd: int, write_fd: int, *, description: str = "pipe",
                   default_timeout: float = DEFAULT_TIMEOUT) -> Connection:
        """Speak over the pipes of a Chrome started with ``--remote-debugging-pipe``."""
        transport = await PipeTransport.open(read_fd, write_fd, description=description)
        return cls(transport, default_timeout=default_timeout)

    @property
    def closed(self) -> bool:
        return self.gone is not None

    # --- sessions --------------------------------------------------------------------------

    def session(self, session_id: str, target_id: str, parent: CDPSession | None = None) -> CDPSession:
        """The session object for a flattened session id, created on first use."""
        sess = self._sessions.get(session_id)
        if sess is None:
            sess = CDPSession(self, session_id, target_id=target_id, parent=parent)
            self._sessions[session_id] = sess
        return sess

    def session_for_target(self, target_id: str) -> CDPSession | None:
        for sess in self._sessions.values():
            if sess.target_id == target_id and sess.session_id is not None:
                return sess
        return None

    def on_close(self, callback: Callable[[BrowserGone], None]) -> None:
        """Call ``callback(error)`` once when the connection is lost (at once if already lost)."""
        if self.gone is not None:
            callback(self.gone)
        else:
            self._close_callbacks.append(callback)

    # --- commands --------------------------------------------------------------------------

    async def send_raw(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one command and wait for its reply. Also the interface ``cdp-use`` expects."""
        if self.gone is not None:
            raise BrowserGone(self.gone.reason, method=method)
        sess = self._sessions.get(session_id)
        if sess is not None and sess.failure is not None:
            raise sess.failure_for(method)
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (fut, method, session_id)
        try:
            await self._transport.send(json.dumps(message))
        except TransportClosed as exc:
            self._pending.pop(msg_id, None)
            self._lost(exc.reason)
            raise BrowserGone(self.gone.reason if self.gone else exc.reason, method=method) from exc
        limit = self.default_timeout if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                return await fut
        except TimeoutError:
            raise CDPTimeout(method, limit) from None
        finally:
            self._pending.pop(msg_id, None)

    def fail_session_calls(self, session_id: str | None, error_for: Callable[[str], CDPException]) -> None:
        """Fail every call pending on one session (its target crashed or detached)."""
        for fut, method, sid in list(self._pending.values()):
            if sid == session_id and not fut.done():
                fut.set_exception(error_for(method))

    @property
    def typed(self) -> Any:
        """Typed domain clients from ``cdp-use``, over this connection's ``send_raw``."""
        from cdp_use.cdp.library import CDPLibrary

        return CDPLibrary(self)  # type: ignore[arg-type]

    # --- reading ---------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                self._dispatch(_loads(await self._transport.recv()))
        except TransportClosed as exc:
            reason = exc.reason
        except Exception as exc:  # a bug in a handler must not leave callers hanging
            log.exception("cdp reader failed")
            reason = f"reader failed: {exc!r}"
        self._lost(reason)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        msg_id = msg.get("id")
        if msg_id is not None:
            entry = self._pending.get(msg_id)
            if entry is None or entry[0].done():
                return
            fut, method, _ = entry
            if "error" in msg:
                err = msg["error"]
                fut.set_exception(CDPError(method, err.get("code", 0), err.get("message", ""), err.get("data")))
            else:
                fut.set_result(msg.get("result", {}))
            return
        method = msg.get("method", "")
        params = msg.get("params", {})
        sess = self._sessions.get(msg.get("sessionId"))
        if sess is None:
            return
        self._track_targets(sess, method, params)
        sess.emit(method, params)

    def _track_targets(self, sess: CDPSession, method: str, params: dict[str, Any]) -> None:
        """Keep the session table and crash/detach state right before handlers run."""
        if method == "Target.attachedToTarget":
            info = params["targetInfo"]
            self.session(params["sessionId"], info["targetId"], parent=sess)
        elif method == "Target.detachedFromTarget":
            child = self._sessions.pop(params.get("sessionId"), None)
            if child is not None:
                child.mark_closed()
        elif method == "Inspector.targetCrashed":
            sess.mark_crashed()
        elif method == "Target.targetCrashed":
            crashed = self.session_for_target(params.get("targetId", ""))
            if crashed is not None:
                crashed.mark_crashed()

    def _lost(self, reason: str) -> None:
        if self.gone is not None:
            return
        self.gone = BrowserGone(reason)
        log.debug("cdp connection lost: %s", reason)
        for fut, method, _ in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(BrowserGone(reason, method=method))
        for sess in list(self._sessions.values()):
            sess.mark_gone(self.gone)
        callbacks, self._close_callbacks = self._close_callbacks, []
        for cb in callbacks:
            try:
                cb(self.gone)
            except Exception:
                log.exception("cdp close callback failed")

    def abort(self, reason: str) -> None:
        """Declare the browser gone now (its process died) and drop the transport."""
        self._lost(reason)
        asyncio.get_running_loop().create_task(self._transport.close())

    async def close(self) -> None:
        self._lost("connection closed by browserd")
        await self._transport.close()
        await cancel_and_wait(self._reader, "cdp reader")


def _loads(message: str) -> Any:
    """One message from the browser, parsed: with orjson (the read loop's largest cost when it parsed
    with ``json``: a DOM snapshot is megabytes; it reads an integer past 64 bits as the double Chrome
    meant), and with ``json`` whatever orjson refuses, so no message a page shapes can stop the loop."""
    try:
        return orjson.loads(message)
    except orjson.JSONDecodeError:
        return json.loads(message)
