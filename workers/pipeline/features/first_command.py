"""The first command: when the job's tab sent its first CDP command (``first_command_at``).

Enqueue to first command is the queue's overhead per job as a user feels it (``bench.queue``).
The tab's session tells its sends to a listener (``cdp.CDPSession.on_send``); the first one after
the lease is in the job's hands is written to the record, and the listener goes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from workers.jobs.model.result import JobResult
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun


@dataclass
class _Sent:
    at: float | None = None
    off: Callable[[], None] | None = None


class FirstCommand(Feature):
    def __init__(self, services) -> None:  # type: ignore[no-untyped-def]
        super().__init__(services)
        self._writes: set[asyncio.Task[bool]] = set()

    async def attach(self, run: JobRun) -> None:
        assert run.lease is not None
        sent = _Sent()

        def first(_method: str) -> None:
            if sent.at is not None:
                return
            sent.at = time.time()
            if sent.off is not None:
                sent.off()
            task = asyncio.get_running_loop().create_task(
                self.services.records.progress(run.job_id, run.attempt, first_command_at=sent.at))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

        sent.off = run.lease.page.session.on_send(first)
        run.put(sent)

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        sent = run.get(_Sent)
        if sent is not None and sent.off is not None:
            sent.off()
        return result
