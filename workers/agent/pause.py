"""Pausing between steps (Nanobrowser's ``pause()``/``resume()``): the job's owner flips a flag; the
agent notices it before its next step and waits there, its browser context and history intact,
until the flag is cleared, the job is cancelled, or it has held its browser as long as it may.

The time paused counts towards the job's own wall-clock limit (its timeout is wall-clock time), so
a pause ends at the sooner of ``BROWSERD_PAUSE_MAX_SECONDS`` and that limit; either way the job
fails ``timeout`` with a message saying it was paused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from workers.agent.cancel import CancelToken
from workers.agent.errors import PausedTooLong
from workers.agent.events import Actor, Events, ExecutionState
from workers.agent.human import HumanGate

POLL_SECONDS = 0.1  # the flag is set by the worker's ticker from Redis; this only reads memory
JOB_LIMIT_MARGIN = 1.0  # a pause ends this long before the job's limit, so the pause is what is reported


class PauseGate:
    """Wraps the job's ``is_paused`` callback (None: the job cannot be paused)."""

    def __init__(self, is_paused: Callable[[], bool] | None = None, *, max_seconds: float = 300.0) -> None:
        self._is_paused = is_paused
        self.max_seconds = max_seconds
        self.deadline: asyncio.Timeout | None = None  # the run's wall-clock limit, set by the session
        self.human = HumanGate()  # the job's requests for help (a job that may ask: set by the session)

    @property
    def paused(self) -> bool:
        return bool(self._is_paused and self._is_paused())

    async def hold(self, cancel: CancelToken, events: Events) -> None:
        """Between steps: wait for the human the last step asked for, if any; then return at once when
        not paused, else wait for resume (events say both)."""
        await self.human.hold(cancel, events)
        if not self.paused:
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        limit, job_limit = self._limit(started)
        await events.emit(Actor.system, ExecutionState.TASK_PAUSE, "paused between steps")
        while self.paused:
            cancel.check("while paused")
            if loop.time() >= limit:
                raise PausedTooLong(loop.time() - started, job_limit=job_limit)
            await asyncio.sleep(POLL_SECONDS)
        cancel.check("while paused")
        await events.emit(Actor.system, ExecutionState.TASK_RESUME, f"resumed after {loop.time() - started:.1f}s")

    def _limit(self, started: float) -> tuple[float, bool]:
        """When the pause must end (loop time), and whether the job's own limit is what bounds it."""
        limit = started + self.max_seconds
        when = self.deadline.when() if self.deadline is not None else None
        if when is not None and when - JOB_LIMIT_MARGIN < limit:
            return when - JOB_LIMIT_MARGIN, True
        return limit, False
