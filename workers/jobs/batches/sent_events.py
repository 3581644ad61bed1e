"""A batch's ``task-sent`` events, sent after the batch is answered instead of before.

The events exist for Celery's own tools (Flower, celery-exporter count a batch's jobs like any
task): a job is queued once its message is on its queue (``bulk.publish_encoded``), whether or
not its event went out, and ``publish_jobs`` has always logged a failed send and gone on. Sending
10,000 of them (``bulk.announce_sent``: the events built, encoded and published) is about a
quarter of a second of the API's one CPU, some 15% of accepting the batch (issue 27, ``bench.batch``).
So the API hands them to a ``SentEvents``, which sends them in a thread once the request is done
and waits for what is still pending when the API stops (its lifespan's ``drain``).

A worker may take a job and send its ``task-received`` before the job's ``task-sent`` arrives (it
could before, too: the messages are pushed first). Celery's event state (``celery.events.state``,
what Flower keeps) merges an event whose state happens before the task's current one without moving
the state back, so a late ``task-sent`` only fills in its fields.
"""

from __future__ import annotations

import asyncio
import logging

from workers.jobs.batches.bulk import Outgoing, announce_sent

log = logging.getLogger("browserd.batches")


async def send_now(outgoing: list[Outgoing]) -> None:
    """The events of ``outgoing`` (jobs already published), sent before returning; a failure is
    logged, never raised (the jobs are queued regardless)."""
    try:
        await asyncio.to_thread(announce_sent, outgoing)
    except Exception as exc:
        log.warning("task-sent events of %d jobs not sent: %s", len(outgoing), exc)


class SentEvents:
    """Sends the events of published jobs in the background, one task per batch; ``drain`` waits
    for those still going (a stopping API sends what it accepted)."""

    def __init__(self) -> None:
        self._pending: set[asyncio.Task[None]] = set()

    def send(self, outgoing: list[Outgoing]) -> None:
        task = asyncio.get_running_loop().create_task(send_now(outgoing))
        self._pending.add(task)  # held until done: the loop keeps only a weak reference to a task
        task.add_done_callback(self._pending.discard)

    async def drain(self) -> None:
        while self._pending:
            await asyncio.gather(*self._pending)
