"""Cleanups that cancel a task never wait on a cancel a library may drop (issue 25, item 0).

On Python 3.11 ``asyncio.wait_for`` (inside redis-py's socket writes) drops a cancel that arrives
just after the inner call finished; a task cancelled then loops on. ``Stubborn`` plays that task:
it swallows its first ``swallow`` cancels. Each cleanup path that cancels a task must end anyway.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from config.tasks import cancel_and_wait
from workers.agent.cancel import CancelToken
from workers.agent.errors import Cancelled

HANG_GUARD = 60  # only so a regression fails instead of hanging the suite; never a timing assertion


class Stubborn:
    """A coroutine that swallows its first ``swallow`` cancels, as a dropped ``wait_for`` cancel does."""

    def __init__(self, swallow: int) -> None:
        self.swallow = swallow
        self.cancels = 0
        self.running = asyncio.Event()

    async def __call__(self) -> str:
        self.running.set()
        while True:
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                self.cancels += 1
                if self.cancels > self.swallow:
                    raise


async def test_a_task_that_swallows_its_first_cancel_still_ends() -> None:
    stubborn = Stubborn(swallow=1)
    task = asyncio.get_running_loop().create_task(stubborn())
    await stubborn.running.wait()
    ended = await asyncio.wait_for(cancel_and_wait(task, "stubborn"), HANG_GUARD)
    assert ended and task.cancelled() and stubborn.cancels == 2


async def test_a_task_that_swallows_every_cancel_is_left_behind_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    stubborn = Stubborn(swallow=10**9)
    task = asyncio.get_running_loop().create_task(stubborn(), name="never-ends")
    await stubborn.running.wait()
    with caplog.at_level(logging.WARNING):
        ended = await asyncio.wait_for(cancel_and_wait(task, "stubborn", timeout=0.3), HANG_GUARD)
    assert not ended and not task.done()
    assert "never-ends did not end within 0.3s of its cancel" in caplog.text
    stubborn.swallow = 0  # let it go so the loop closes cleanly
    await cancel_and_wait(task, "stubborn")
    assert task.cancelled()


async def test_tasks_already_finished_or_failed_are_collected_without_noise() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    failed = asyncio.get_running_loop().create_task(fails())
    await asyncio.sleep(0)
    assert await cancel_and_wait([failed, None], "done")  # type: ignore[list-item]


async def test_a_cancelled_job_does_not_wait_on_a_call_that_swallows_its_first_cancel() -> None:
    """``CancelToken.run`` abandons a slow call when the job is cancelled; it used to ``await`` the
    cancelled call, which hung forever on one that swallowed its cancel."""
    stubborn = Stubborn(swallow=1)
    cancelled = False
    token = CancelToken(lambda: cancelled)

    async def cancel_soon() -> None:
        nonlocal cancelled
        await stubborn.running.wait()
        cancelled = True

    asyncio.get_running_loop().create_task(cancel_soon())
    with pytest.raises(Cancelled):
        await asyncio.wait_for(token.run(stubborn(), "while testing"), HANG_GUARD)
    assert stubborn.cancels == 2
