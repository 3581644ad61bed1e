"""Interactive sessions in Redis: the record, the command list a worker blocks on, the replies.

The API process holds nothing: ``open_session`` writes the record (under the open-sessions cap),
publishes ``browserd.run_session`` on the ``sessions`` queue and waits for the worker's reply to
the opening; every later command is pushed on the session's command list and answered on a reply
key of its own (``request``). The worker that leased the context renews the record's short TTL
while it serves the session, so a session whose worker died vanishes within ``SESSION_GRACE``
seconds, and stops counting towards ``BROWSERD_SESSION_MAX_OPEN``.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis

from config import Settings
from workers.jobs.errors import QueueUnavailable, SpecError
from workers.jobs.ids import is_id, new_id
from workers.jobs.model.browsing import Viewport
from workers.jobs.queue.publish import send_session
from workers.jobs.sessions.errors import (
    SessionCommandFailed,
    SessionLimitReached,
    SessionNotFound,
    SessionUnresponsive,
)
from workers.jobs.sessions.models import (
    COMMAND_WAIT,
    OPEN_WAIT,
    Command,
    ReplyCode,
    SessionCommand,
    SessionOptions,
    SessionRecord,
    SessionReply,
    SessionStatus,
    check_args,
)
from workers.jobs.store.keys import Keys
from workers.jobs.tenants.ceilings import Ceiling, check_networks, operator_ceiling
from workers.jobs.tenants.models import TenantLimits
from workers.jobs.tenants.quotas import Quotas
from workers.jobs.tenants.store import TenantStore
from workers.jobs.store.scripts import source

SESSION_GRACE = 15.0  # seconds a record outlives its worker's last heartbeat
REPLY_TTL = 60  # seconds an unread reply is kept
POLL_SECONDS = 1.0  # how often a waiting requester looks whether the session still exists
OPEN_REQUEST = "open"  # the request id the worker answers the opening on


def _epoch(value: str | None) -> datetime | None:
    return datetime.fromtimestamp(float(value), UTC) if value else None


def check_options(options: SessionOptions, settings: Settings, ceiling: Ceiling | None = None) -> SessionOptions:
    """The options with their idle timeout settled; a timeout above the settings' is refused, and so
    are networks outside the ``ceiling`` (default: the operator's, ``operator_ceiling``)."""
    check_networks(options.allowed_networks, ceiling or operator_ceiling(settings))
    limit = settings.session_idle_timeout
    if options.idle_timeout is not None and options.idle_timeout > limit:
        raise SpecError.at("idle_timeout", f"at most {limit:g} seconds (BROWSERD_SESSION_IDLE_TIMEOUT)")
    return options.model_copy(update={"idle_timeout": options.idle_timeout or limit})


class SessionStore:
    def __init__(self, client: aioredis.Redis, keys: Keys | None = None) -> None:
        self.redis = client
        self.keys = keys or Keys()
        self._open = client.register_script(source("session_open"))
        self._beat = client.register_script(source("session_beat"))

    # --- records ---------------------------------------------------------------------------

    async def create(self, options: SessionOptions, max_open: int, tenant: str | None = None) -> str:
        """A new record in state ``opening`` (``tenant``'s, or the operator's); ``SessionLimitReached``
        when ``max_open`` are open."""
        session_id, now = new_id(), time.time()
        ttl = OPEN_WAIT + SESSION_GRACE
        fields = {"id": session_id, "state": SessionStatus.opening.value, "created_at": repr(now),
                  "idle_timeout": repr(options.idle_timeout), "start_url": str(options.start_url or ""),
                  "allowed_networks": json.dumps(options.allowed_networks),
                  "allowed_domains": json.dumps(options.allowed_domains),
                  "denied_domains": json.dumps(options.denied_domains),
                  "viewport": options.viewport.model_dump_json() if options.viewport else "", "tenant": tenant or ""}
        argv = [repr(now), max_open, repr(now + ttl), int(ttl), session_id, *(x for kv in fields.items() for x in kv)]
        if not await self._open(keys=[self.keys.sessions, self.keys.session(session_id)], args=argv):
            raise SessionLimitReached(max_open)
        return session_id

    async def get(self, session_id: str) -> SessionRecord | None:
        if not is_id(session_id):
            return None
        raw = await self.redis.hgetall(self.keys.session(session_id))
        return _record(raw) if raw.get("id") else None

    async def require(self, session_id: str) -> SessionRecord:
        record = await self.get(session_id)
        if record is None:
            raise SessionNotFound(session_id)
        return record

    async def list(self, tenant: str | None = None) -> list[SessionRecord]:
        """Open and opening sessions, oldest first; ``tenant``: only that tenant's (None: everyone's)."""
        await self.redis.zremrangebyscore(self.keys.sessions, "-inf", time.time())
        ids = await self.redis.zrange(self.keys.sessions, 0, -1)
        records = [await self.get(i) for i in ids]
        return sorted((r for r in records if r is not None and (tenant is None or r.tenant == tenant)),
                      key=lambda r: r.created_at)

    async def open_count(self) -> int:
        return int(await self.redis.zcount(self.keys.sessions, time.time(), "+inf"))

    # --- the worker's side -----------------------------------------------------------------

    async def beat(self, session_id: str, **fields: Any) -> bool:
        """Renew the record (setting ``fields``); False when it is gone: the session must close."""
        ttl = SESSION_GRACE
        argv = [repr(time.time() + ttl), int(ttl), session_id,
                *(x for k, v in fields.items() for x in (k, "" if v is None else str(v)))]
        return bool(await self._beat(keys=[self.keys.sessions, self.keys.session(session_id)], args=argv))

    async def next_command(self, session_id: str, wait: float) -> SessionCommand | None:
        """The next command, waiting up to ``wait`` seconds for one."""
        got = await self.redis.blpop([self.keys.session_commands(session_id)], timeout=wait)
        return SessionCommand.model_validate_json(got[1]) if got else None

    async def reply(self, session_id: str, request: str, reply: SessionReply) -> None:
        key = self.keys.session_reply(session_id, request)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.rpush(key, reply.model_dump_json())
            pipe.expire(key, REPLY_TTL)
            await pipe.execute()

    async def remove(self, session_id: str) -> list[SessionCommand]:
        """Drop the session; returns the commands still waiting (their senders are owed a reply)."""
        commands = self.keys.session_commands(session_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrange(commands, 0, -1)
            pipe.delete(commands, self.keys.session(session_id))
            pipe.zrem(self.keys.sessions, session_id)
            pending, *_ = await pipe.execute()
        return [SessionCommand.model_validate_json(raw) for raw in pending]

    # --- the requester's side ----------------------------------------------------------------

    async def request(self, session_id: str, name: Command, args: dict[str, Any] | None = None,
                      wait: float = COMMAND_WAIT) -> SessionReply:
        """Send one command and wait for its reply; raises the session's typed errors."""
        checked = check_args(name, args or {})
        await self.require(session_id)
        command = SessionCommand(request=new_id(), name=name, args=checked)
        key = self.keys.session_commands(session_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.rpush(key, command.model_dump_json())
            pipe.expire(key, int(wait + SESSION_GRACE))
            await pipe.execute()
        return await self.await_reply(session_id, command.request, wait, f"the {name} command")

    async def await_reply(self, session_id: str, request: str, wait: float, what: str) -> SessionReply:
        key = self.keys.session_reply(session_id, request)
        deadline = time.monotonic() + wait
        while True:
            got = await self.redis.blpop([key], timeout=POLL_SECONDS)
            if got:
                return _checked(SessionReply.model_validate_json(got[1]), session_id)
            if await self.get(session_id) is None:
                late = await self.redis.lpop(key)  # answered just before it closed
                if late:
                    return _checked(SessionReply.model_validate_json(late), session_id)
                raise SessionNotFound(session_id)
            if time.monotonic() >= deadline:
                raise SessionUnresponsive(session_id, what, wait)


def _checked(reply: SessionReply, session_id: str) -> SessionReply:
    if reply.ok:
        return reply
    if reply.code is ReplyCode.closed:
        raise SessionNotFound(session_id)
    raise SessionCommandFailed(reply.code or ReplyCode.action_failed, reply.error or "the command failed")


def _record(raw: dict[str, str]) -> SessionRecord:
    return SessionRecord(
        id=raw["id"], state=SessionStatus(raw.get("state") or SessionStatus.opening),
        created_at=_epoch(raw.get("created_at")),  # type: ignore[arg-type]
        last_command_at=_epoch(raw.get("last_command_at")), idle_timeout=float(raw.get("idle_timeout") or 0),
        worker=raw.get("worker") or None, url=raw.get("url") or None, start_url=raw.get("start_url") or None,
        allowed_networks=json.loads(raw.get("allowed_networks") or "[]"),
        allowed_domains=json.loads(raw.get("allowed_domains") or "[]"),
        denied_domains=json.loads(raw.get("denied_domains") or "[]"),
        viewport=Viewport.model_validate_json(raw["viewport"]) if raw.get("viewport") else None,
        tenant=raw.get("tenant") or None,
    )


async def open_session(store: SessionStore, options: SessionOptions, settings: Settings,
                       wait: float = OPEN_WAIT, ceiling: Ceiling | None = None, tenant: str | None = None) -> SessionRecord:
    """Record a session, hand it to a worker on the ``sessions`` queue and wait until it is open.

    A session no worker opens within ``wait`` is dropped (a worker that takes its message later
    finds no record and does nothing); one whose start URL fails is closed by its worker, and the
    action's error comes back as ``SessionCommandFailed``.
    """
    options = check_options(options, settings, ceiling)
    if tenant is not None:  # the tenant's quota of open sessions (its limits as they are now)
        owner = await TenantStore(store.redis, store.keys).get(tenant)
        limits = owner.limits if owner is not None else TenantLimits()
        await Quotas(store.redis, store.keys).check_sessions(tenant, limits, len(await store.list(tenant)))
    session_id = await store.create(options, settings.session_max_open, tenant)
    try:
        await asyncio.to_thread(send_session, session_id, settings.session_max_seconds)
    except Exception as exc:
        await store.remove(session_id)
        raise QueueUnavailable(f"the session could not be queued: {exc}") from exc
    try:
        await store.await_reply(session_id, OPEN_REQUEST, wait, "opening (no worker took it: is one consuming "
                                "the 'sessions' queue?)")
    except SessionUnresponsive:
        await store.remove(session_id)
        raise
    return await store.require(session_id)
