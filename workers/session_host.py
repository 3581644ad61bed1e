"""The worker's side of an interactive session: lease a context, serve commands from Redis, close.

``SessionHost.serve`` runs on the worker's loop for the whole session (the Celery task that
started it holds one job slot meanwhile, so sessions and jobs share a worker's concurrency). It
blocks on the session's command list a second at a time, renewing the record's TTL between
commands, and ends on ``close``, after the session's idle timeout, after
``BROWSERD_SESSION_MAX_SECONDS``, when the record is gone (dropped by the API), when the worker
begins a warm shutdown, or when the browser dies. However it ends, the lease is released (the context and its gate are disposed), the
record is removed, and every command still waiting is answered ``closed``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import cdp
from config import Settings, bind
from workers.agent import SessionBrowser
from workers.agent.config import AgentConfig
from workers.jobs.metrics import observe_session_command, observe_session_ended
from workers.jobs.sessions.models import ReplyCode, SessionCommand, SessionRecord, SessionReply, SessionStatus
from workers.jobs.sessions.store import OPEN_REQUEST, SessionStore

log = logging.getLogger("browserd.worker")

WAIT_SLICE = 1.0  # seconds between heartbeats while no command comes
LEASE_TIMEOUT = 60.0


class SessionHost:
    def __init__(self, store: SessionStore, pool: cdp.BrowserPool, settings: Settings, agent: AgentConfig,
                 worker_id: str, session_id: str, stopping: Callable[[], bool] = lambda: False) -> None:
        self.store, self.pool, self.settings, self.agent, self.stopping = store, pool, settings, agent, stopping
        self.worker_id, self.session_id = worker_id, session_id
        self.opened = False  # the opening was answered (with the session or with why it failed)
        self.running: SessionCommand | None = None  # the command being run, until it is answered

    async def serve(self) -> str:
        """Serve the session to its end; returns why it ended."""
        with bind(session_id=self.session_id):
            record = await self.store.get(self.session_id)
            if record is None or record.state is not SessionStatus.opening or not await self.store.beat(
                    self.session_id, worker=self.worker_id):
                log.info("session %s: not opened (dropped before a worker took it)", self.session_id)
                return "gone"
            reason = "failed"
            try:
                reason = await self._in_lease(record)
            except Exception as exc:
                browser = isinstance(exc, (cdp.BrowserGone, cdp.TargetCrashed, cdp.ResourceLimitExceeded))
                reason = "browser_failed" if browser else "failed"
                log.warning("session %s: %s: %s: %s", self.session_id, reason, type(exc).__name__, exc)
                if not self.opened:  # the opener is waiting: tell it why, not just that the session is gone
                    await self.store.reply(self.session_id, OPEN_REQUEST, SessionReply(
                        ok=False, code=ReplyCode.start_failed, error=f"the session could not start: {exc}"))
                elif self.running is not None:  # so is the sender of the command that met the failure
                    await self.store.reply(self.session_id, self.running.request, SessionReply(
                        ok=False, code=ReplyCode.action_failed, error=f"{reason}: {exc}; the session is closed"))
            finally:
                await self._closed(reason)
            return reason

    async def _in_lease(self, record: SessionRecord) -> str:
        async with self.pool.lease(LEASE_TIMEOUT) as lease:
            session = await SessionBrowser.open(lease, self.agent, session_id=self.session_id, access=record)
            opened = SessionReply(result="the session is open", url="about:blank")
            if record.start_url:
                opened = await session.run("navigate", {"url": record.start_url})
                if not opened.ok:
                    blocked = opened.code is ReplyCode.url_blocked
                    opened.code = ReplyCode.url_blocked if blocked else ReplyCode.start_failed
                    opened.error = f"could not open the start URL: {opened.error}"
                    await self.store.reply(self.session_id, OPEN_REQUEST, opened)
                    self.opened = True
                    return "start_failed"
            await self.store.beat(self.session_id, state=SessionStatus.open, url=opened.url)
            await self.store.reply(self.session_id, OPEN_REQUEST, opened)
            self.opened = True
            log.info("session %s: open on %s", self.session_id, opened.url)
            return await self._commands(session, record.idle_timeout)

    async def _commands(self, session: SessionBrowser, idle_timeout: float) -> str:
        started = last = time.monotonic()
        while True:
            now = time.monotonic()
            if now - last >= idle_timeout:
                return "idle"
            if now - started >= self.settings.session_max_seconds:
                return "max_seconds"
            if self.stopping():
                return "worker_stopping"
            command = await self.store.next_command(self.session_id, min(WAIT_SLICE, idle_timeout - (now - last)))
            if command is None:
                if not await self.store.beat(self.session_id):
                    return "dropped"
                continue
            last = time.monotonic()
            self.running = command
            reply = await session.run(command.name, command.args)
            observe_session_command(command.name, reply.code or "ok")
            await self.store.reply(self.session_id, command.request, reply)
            self.running = None
            if not await self.store.beat(self.session_id, last_command_at=repr(time.time()), url=reply.url):
                return "dropped"
            if command.name == "close":
                return "closed"

    async def _closed(self, reason: str) -> None:
        observe_session_ended(reason)
        pending = await self.store.remove(self.session_id)
        for command in pending:
            await self._refuse(command, reason)
        log.info("session %s: ended (%s)", self.session_id, reason)

    async def _refuse(self, command: SessionCommand, reason: str) -> None:
        await self.store.reply(self.session_id, command.request, SessionReply(
            ok=False, code=ReplyCode.closed, error=f"the session ended ({reason}) before this command ran"))
