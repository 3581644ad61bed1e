"""A flattened target session: commands, event handlers, and waiting for one event."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cdp.errors import BrowserGone, CDPException, CDPTimeout, TargetClosed, TargetCrashed

if TYPE_CHECKING:
    from cdp.connection import Connection

log = logging.getLogger("browserd.cdp")

EventHandler = Callable[[dict[str, Any]], Any]
Predicate = Callable[[dict[str, Any]], bool]


class CDPSession:
    """Commands and events of one target (or of the browser itself when ``session_id`` is None)."""

    def __init__(
        self,
        connection: Connection,
        session_id: str | None,
        *,
        target_id: str,
        parent: CDPSession | None = None,
    ) -> None:
        self.connection = connection
        self.session_id = session_id
        self.target_id = target_id
        self.parent = parent
        self.failure: CDPException | None = None
        self._handlers: dict[str, list[EventHandler]] = defaultdict(list)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_send: list[Callable[[str], None]] = []

    def __repr__(self) -> str:
        return f"<CDPSession target={self.target_id} session={self.session_id}>"

    @property
    def crashed(self) -> bool:
        return isinstance(self.failure, TargetCrashed)

    async def send(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> dict[str, Any]:
        for listener in list(self._on_send):
            listener(method)
        return await self.connection.send_raw(method, params, self.session_id, timeout)

    def on_send(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(method)`` as each command is sent (e.g. to time a job's first command);
        returns a function that unsubscribes. A listener must not block: it runs before the send."""
        self._on_send.append(listener)

        def off() -> None:
            if listener in self._on_send:
                self._on_send.remove(listener)

        return off

    def on(self, event: str, handler: EventHandler) -> Callable[[], None]:
        """Call ``handler(params)`` for every ``event``; returns a function that unsubscribes."""
        self._handlers[event].append(handler)

        def off() -> None:
            try:
                self._handlers[event].remove(handler)
            except ValueError:
                pass

        return off

    async def wait_for(
        self, event: str, predicate: Predicate | None = None, *, timeout: float = 30.0
    ) -> dict[str, Any]:
        """The params of the next ``event`` that satisfies ``predicate``.

        Fails early, not at the timeout, when the target crashes, detaches or the browser dies.
        """
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def check(params: dict[str, Any]) -> None:
            if not fut.done() and (predicate is None or predicate(params)):
                fut.set_result(params)

        def failed(_: dict[str, Any]) -> None:
            if not fut.done() and self.failure is not None:
                fut.set_exception(self.failure_for(f"waiting for {event}"))

        off = self.on(event, check)
        off_fail = self.on("__failed__", failed)
        try:
            if self.failure is not None:
                raise self.failure_for(f"waiting for {event}")
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            raise CDPTimeout(f"waiting for {event}", timeout) from None
        finally:
            off()
            off_fail()

    # --- called by the connection ----------------------------------------------------------

    def emit(self, event: str, params: dict[str, Any]) -> None:
        for handler in list(self._handlers.get(event, ())):
            try:
                result = handler(params)
            except Exception:
                log.exception("handler for %s failed", event)
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    def failure_for(self, method: str) -> CDPException:
        """A fresh exception of this session's failure kind, naming the failed method."""
        failure = self.failure
        if isinstance(failure, TargetCrashed):
            return TargetCrashed(self.target_id, method=method)
        if isinstance(failure, TargetClosed):
            return TargetClosed(self.target_id, method=method)
        if isinstance(failure, BrowserGone):
            return BrowserGone(failure.reason, method=method)
        return failure or TargetClosed(self.target_id, method=method)

    def _fail(self, failure: CDPException) -> None:
        if self.failure is not None:
            return
        self.failure = failure
        self.connection.fail_session_calls(self.session_id, self.failure_for)
        self.emit("__failed__", {})

    def mark_crashed(self) -> None:
        self._fail(TargetCrashed(self.target_id))

    def mark_closed(self) -> None:
        self._fail(TargetClosed(self.target_id))

    def mark_gone(self, error: BrowserGone) -> None:
        self._fail(error)
