"""The session kernel against a real redis-server: the open-sessions cap, a dead worker's sessions
no longer counting, the command/reply round trip and its typed errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from workers.jobs.sessions.errors import SessionCommandFailed, SessionLimitReached, SessionNotFound, SessionUnresponsive
from workers.jobs.sessions.models import SessionOptions, SessionReply
from workers.jobs.sessions.store import SessionStore
from workers.jobs.store.jobs import JobStore


@pytest_asyncio.fixture
async def sessions(store: JobStore) -> AsyncIterator[SessionStore]:
    yield SessionStore(store.redis, store.keys)


OPTIONS = SessionOptions(idle_timeout=30)


async def test_the_cap_counts_live_sessions_only(sessions: SessionStore) -> None:
    first = await sessions.create(OPTIONS, max_open=2)
    await sessions.create(OPTIONS, max_open=2)
    with pytest.raises(SessionLimitReached, match="2 sessions are open already"):
        await sessions.create(OPTIONS, max_open=2)
    assert await sessions.open_count() == 2
    # a worker that died stops renewing: once its record's time is past, it no longer counts
    await sessions.redis.zadd(sessions.keys.sessions, {first: time.time() - 1})
    await sessions.redis.delete(sessions.keys.session(first))
    await sessions.create(OPTIONS, max_open=2)
    assert len(await sessions.list()) == 2
    await sessions.remove(first)


async def test_a_command_gets_its_reply_or_a_typed_error(sessions: SessionStore) -> None:
    sid = await sessions.create(OPTIONS, max_open=10)

    async def worker(reply: SessionReply) -> None:
        command = await sessions.next_command(sid, wait=5)
        assert command is not None and command.name == "click" and command.args == {"index": 3}
        await sessions.reply(sid, command.request, reply)

    served = asyncio.create_task(worker(SessionReply(result="clicked [3]")))
    assert (await sessions.request(sid, "click", {"index": 3})).result == "clicked [3]"
    await served
    served = asyncio.create_task(worker(SessionReply(ok=False, code="url_blocked", error="blocked: private")))
    with pytest.raises(SessionCommandFailed, match="blocked: private") as failed:
        await sessions.request(sid, "click", {"index": 3})
    assert failed.value.code == "url_blocked"
    await served
    with pytest.raises(ValueError):
        await sessions.request(sid, "click", {"index": -1})
    with pytest.raises(SessionUnresponsive, match="got no answer within 1s"):
        await sessions.request(sid, "tabs", wait=1)
    assert [c.name for c in await sessions.remove(sid)] == ["tabs"]  # owed a reply by whoever closes
    with pytest.raises(SessionNotFound, match="no open session"):
        await sessions.request(sid, "tabs")
    assert not await sessions.beat(sid), "a worker learns its session was dropped"
