"""Ending an asyncio task without trusting its cancel to land.

A ``task.cancel()`` followed by ``await task`` waits forever when the task swallows the cancel, and
libraries do: on Python 3.11 ``asyncio.wait_for`` (which redis-py wraps socket writes in) drops a
cancel that arrives just after the inner call finished, so the task loops on. A job's result once
sat unrecorded until its own timeout behind such a wait (issue 25). Every cleanup that cancels a
task therefore goes through ``cancel_and_wait``: it cancels, waits a bounded time, cancels again
while the bound lasts, and gives up with a warning rather than hold its caller. It lives in
``config`` because every layer that runs tasks (``cdp``, ``workers``, ``daemon``) may import it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("browserd")

STOP_SECONDS = 2.0  # how long a cleanup waits, by default, for the tasks it cancelled
RECANCEL_SECONDS = 0.1  # how often a task that ignored its cancel is cancelled again within the bound


async def cancel_and_wait(tasks: asyncio.Future[Any] | Iterable[asyncio.Future[Any] | None], what: str = "task",
                          timeout: float = STOP_SECONDS) -> bool:
    """Cancel ``tasks`` and wait at most ``timeout`` seconds for them to end, re-cancelling those
    that swallowed their cancel; True when all ended. Their results and errors are retrieved (and
    dropped): the caller is cleaning up, not asking how they went. A task still running at the
    bound is left behind, named in a warning, so the caller goes on."""
    given = [tasks] if isinstance(tasks, asyncio.Future) else [task for task in tasks if task is not None]
    pending = set(given)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while pending:
        for task in pending:
            task.cancel()
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=min(RECANCEL_SECONDS, remaining))
    for task in pending:
        task.add_done_callback(_drop_outcome)
        log.warning("%s %s did not end within %gs of its cancel; left behind", what,
                    task.get_name() if isinstance(task, asyncio.Task) else task, timeout)
    for task in given:
        if task.done():
            _drop_outcome(task)
    return not pending


def _drop_outcome(task: asyncio.Future[Any]) -> None:
    """Mark a finished task's exception as retrieved, so asyncio logs no 'never retrieved' for it."""
    if not task.cancelled():
        task.exception()
