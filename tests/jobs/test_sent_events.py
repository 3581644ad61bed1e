"""A batch's ``task-sent`` events sent after its answer (``batches.sent_events``), on a real
redis-server: ``send`` returns at once and ``drain`` waits until every job's event is on the
broker's event channel, grouped as Celery's ``task.multi``; a broker that cannot be reached is
logged, never raised, and ``drain`` still returns."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Iterator

import pytest

from config import load_settings
from tests.support.redis_server import RedisServer, free_port
from workers.jobs.batches.bulk import Outgoing
from workers.jobs.batches.sent_events import SentEvents
from workers.jobs.ids import new_id
from workers.jobs.model.status import Priority
from workers.jobs.queue.app import app, bind
from workers.jobs.queue.names import task_id_of
from workers.jobs.store.connection import connect


@pytest.fixture(autouse=True)
def rebound() -> Iterator[None]:
    """The process's Celery app bound back to where it published before (later tests in this worker)."""
    before = app.conf.broker_url
    yield
    bind(load_settings(redis_url=before))


def jobs(n: int) -> list[Outgoing]:
    return [Outgoing(new_id(), Priority.normal, 60.0) for _ in range(n)]


def sent_ids(message: dict) -> list[str]:
    body = json.loads(base64.b64decode(message["body"]) if message.get("properties", {}).get("body_encoding")
                      == "base64" else message["body"])
    return [e["uuid"] for e in (body if isinstance(body, list) else [body]) if e.get("type") == "task-sent"]


async def test_drain_waits_until_every_event_is_out(redis: RedisServer) -> None:
    bind(load_settings(redis_url=redis.url))
    client = connect(redis.url)
    listener = client.pubsub()
    await listener.psubscribe("*celeryev*")
    confirmed = await listener.get_message(timeout=5)  # subscribed before anything is sent
    assert confirmed is not None and confirmed["type"] == "psubscribe", confirmed
    outgoing = jobs(1_200)  # three task.multi messages: 500, 500 and 200
    events = SentEvents()
    events.send(outgoing)
    await events.drain()
    seen: list[str] = []
    while len(seen) < len(outgoing):
        message = await listener.get_message(ignore_subscribe_messages=True, timeout=5)
        assert message is not None, f"{len(seen)} of {len(outgoing)} events arrived"
        seen += sent_ids(json.loads(message["data"]))
    assert sorted(seen) == sorted(task_id_of(job.job_id) for job in outgoing)
    await listener.aclose()
    await client.aclose()


async def test_an_unreachable_broker_is_logged_and_drain_returns(caplog: pytest.LogCaptureFixture) -> None:
    bind(load_settings(redis_url=f"redis://127.0.0.1:{free_port()}/0"))  # nothing listens there
    events = SentEvents()
    with caplog.at_level(logging.WARNING, logger="browserd.batches"):
        events.send(jobs(3))
        await asyncio.wait_for(events.drain(), 60)
    assert "task-sent events of 3 jobs not sent" in caplog.text
