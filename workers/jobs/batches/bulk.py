"""Publishing thousands of job messages at once: one Redis pipeline instead of one publish per job.

``send_job`` costs about a millisecond per message (Celery builds the message,
kombu looks up the exchange's bindings in Redis, a task-sent event is published), so 10,000 jobs
would take ten seconds or more. Kombu's ``Producer.batch()`` halves that; the rest is per-message
Python work. Here the message is built once by Celery itself (``app.amqp.create_task_message``)
as a template, and each job's copy only changes the job id, the task id and the delivery tag, then
the copies are ``LPUSH``-ed onto their queue's Redis list a few thousand per command, as kombu's Redis transport
itself stores a message (``Channel._put``: the JSON envelope on the list named after the queue).

What this skips, on purpose: the exchange lookup (each priority queue is bound only to its own
direct exchange, so the queue name is the destination). The ``task-sent`` event of each message
is still sent (``announce_sent``), after the messages are on their queues, with the fields
``send_task`` gives it, so Flower and celery-exporter count batch jobs like any other task. The
events go out ``EVENTS_PER_MESSAGE`` to a ``task.multi`` message, as a Celery worker on Redis sends
its own task events (its dispatcher's ``buffer_group``; every ``EventReceiver`` unpacks a list):
one ``PUBLISH`` per event cost 0.2 ms each, most of a 10,000-job batch's acceptance.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from workers.jobs.model.status import Priority
from workers.jobs.queue.app import app
from workers.jobs.queue.limits import hard_limit
from workers.jobs.queue.names import RUN_JOB, task_id_of

PUSH_CHUNK = 2000  # messages per LPUSH command
EVENTS_PER_MESSAGE = 500  # task-sent events per task.multi message (about 200 KB)
HOLE = "@@"  # marks the spots filled per job in a serialised template
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
_BODY_TAIL = f"], {{}}, {json.dumps(EMBED)}]"  # a body is json.dumps([[job_id], {}, EMBED]): this is after the id


@dataclass(frozen=True)
class Outgoing:
    job_id: str
    priority: Priority
    soft_limit: float


class _Templates:
    """One message per (queue, soft limit), built by Celery, reused for every job that shares them.

    The template is serialised once with placeholders; each job's message is that text with its
    task id, arguments and body spliced in (all three are plain ASCII, safe inside JSON strings).
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[str, float], list[str]] = {}

    def message(self, job: Outgoing) -> str:
        key = (job.priority.value, job.soft_limit)
        parts = self._cache.get(key)
        if parts is None:
            parts = self._cache[key] = json.dumps(self._build(*key)).split(HOLE)
        task_id = task_id_of(job.job_id)
        body = base64.b64encode(f"[[{json.dumps(job.job_id)}{_BODY_TAIL}".encode()).decode()
        fill = {"ID": task_id, "ARGS": repr((job.job_id,)), "BODY": body}
        return "".join(fill.get(part, part) if i % 2 else part for i, part in enumerate(parts))

    @staticmethod
    def _build(queue: str, soft: float) -> dict[str, Any]:
        task = app.amqp.create_task_message(
            "00000000-0000-0000-0000-000000000000", RUN_JOB, ("",), {},
            time_limit=hard_limit(soft), soft_time_limit=soft,
        )
        task_id = f"{HOLE}ID{HOLE}"
        headers = {**task.headers, "id": task_id, "root_id": task_id, "argsrepr": f"{HOLE}ARGS{HOLE}"}
        properties = {
            **task.properties,
            "correlation_id": task_id,
            "delivery_mode": 2,
            "delivery_info": {"exchange": queue, "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": task_id,
        }
        return {"body": f"{HOLE}BODY{HOLE}", "content-encoding": "utf-8", "content-type": "application/json",
                "headers": headers, "properties": properties}


def encode_jobs(jobs: Iterable[Outgoing]) -> dict[str, list[str]]:
    """The ``browserd.run_job`` message of each job, grouped by the Redis list (queue) it goes on."""
    templates = _Templates()
    out: dict[str, list[str]] = {}
    for job in jobs:
        out.setdefault(job.priority.value, []).append(templates.message(job))
    return out


def messages_of(jobs: Iterable[Outgoing]) -> list[str]:
    """The ``browserd.run_job`` message of each job, in order (a tenant's, parked for fair dispatch)."""
    templates = _Templates()
    return [templates.message(job) for job in jobs]


async def publish_encoded(client: aioredis.Redis, encoded: dict[str, list[str]]) -> int:
    """Push every message in one round trip: one ``LPUSH queue m1 m2 ...`` per queue (in chunks).

    ``client`` is connected to the broker's database. Workers pop from the other end, so jobs
    start in submission order.
    """
    async with client.pipeline(transaction=False) as pipe:
        for queue, messages in encoded.items():
            for start in range(0, len(messages), PUSH_CHUNK):
                pipe.lpush(queue, *messages[start:start + PUSH_CHUNK])
        await pipe.execute()
    return sum(len(m) for m in encoded.values())


def announce_sent(jobs: Iterable[Outgoing]) -> int:
    """One ``task-sent`` event per published job, as ``send_task`` emits it (blocking I/O).

    Events are fire-and-forget on the broker's fan-out channel: one producer and one event
    dispatcher serve the whole batch, ``EVENTS_PER_MESSAGE`` events to a message.
    """
    sent = 0
    with app.amqp.producer_pool.acquire(block=True) as producer, app.events.Dispatcher(
            producer.connection, channel=producer.channel, buffer_while_offline=False, buffer_group=("task",),
            buffer_limit=EVENTS_PER_MESSAGE) as dispatcher:
        for job in jobs:
            task_id = task_id_of(job.job_id)
            queue = job.priority.value
            dispatcher.send("task-sent", uuid=task_id, root_id=task_id, parent_id=None, name=RUN_JOB,
                            args=repr((job.job_id,)), kwargs="{}", retries=0, eta=None, expires=None,
                            queue=queue, exchange=queue, routing_key=queue)
            sent += 1
        dispatcher.flush()  # the last, partial message
    return sent
