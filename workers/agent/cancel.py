"""Cooperative cancellation: a job's owner flips a flag; the agent checks it between actions and
races it against anything slow (an LLM call, a wait, a page load) so those end promptly too."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from config.tasks import cancel_and_wait
from workers.agent.errors import Cancelled

T = TypeVar("T")

POLL_SECONDS = 0.1


class CancelToken:
    """Wraps the job's ``is_cancelled`` callback (None: the job cannot be cancelled)."""

    def __init__(self, is_cancelled: Callable[[], bool] | None = None) -> None:
        self._is_cancelled = is_cancelled

    @property
    def cancelled(self) -> bool:
        return bool(self._is_cancelled and self._is_cancelled())

    def check(self, where: str = "") -> None:
        if self.cancelled:
            raise Cancelled(where)

    async def run(self, awaitable: Awaitable[T], where: str = "") -> T:
        """Await ``awaitable``, abandoning (cancelling) it as soon as the job is cancelled."""
        if self._is_cancelled is None:
            return await awaitable
        task = asyncio.ensure_future(awaitable)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=POLL_SECONDS)
                if done:
                    return task.result()
                if self.cancelled:
                    raise Cancelled(where)
        finally:
            if not task.done():
                await cancel_and_wait(task, f"job step {where or 'call'}")

    async def sleep(self, seconds: float, where: str = "while waiting") -> None:
        self.check(where)
        await self.run(asyncio.sleep(seconds), where)
