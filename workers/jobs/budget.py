"""One time budget per job run: made once when the run starts, read by every stage.

A job's ``timeout`` (else ``BROWSERD_JOB_TIMEOUT``) is wall-clock time for everything the run
does: waiting for a politeness slot, waiting for a browser, and the agent's steps. Each stage asks
the budget instead of computing its own limit, so waiting and running together stay within the
job's limit, and the limit named in a timeout's message is the job's own.

Three lines stand behind the job's own limit (the *soft* limit):

* ``deadline``: the soft limit. The agent stops there with ``JobTimeout``; a wait for a slot or a
  lease stops there too.
* ``backstop``: ``SOFT_LIMIT_SLACK`` later. The pipeline cancels whatever still runs (the final
  artifacts are taken in the slack) and records ``timeout``.
* the *hard* limit (``workers.jobs.queue.hard_limit``), later still, is the worker thread's: it
  abandons a run that ignored both (``WorkerRuntime.run``).

A follow-up run of a kept session gets a budget of its own, the job's whole limit.

Time spent waiting for a human (``request_human``) is not the job's: ``extend`` moves the deadline
and the backstop, and every ``asyncio.Timeout`` the budget handed out, by that much.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

SOFT_LIMIT_SLACK = 4.5
"""Seconds past the job's own limit in which its artifacts are taken; below the hard limit's grace."""


HANDED_MAX = 8  # timeouts a budget keeps moving: a run hands out a few (its deadline, its backstop, waits)


def _now() -> float:
    return asyncio.get_running_loop().time()


@dataclass
class TimeBudget:
    """``limit`` seconds from ``started`` (the event loop's clock)."""

    limit: float
    started: float = field(default_factory=_now)
    extended: float = 0.0  # seconds added outside the job's own limit (waiting for a human)
    _handed: list[tuple[asyncio.Timeout, float]] = field(default_factory=list, repr=False)  # (timeout, past deadline)

    @property
    def deadline(self) -> float:
        """When the job's own limit is reached (loop time): the agent and every wait stop here."""
        return self.started + self.limit + self.extended

    def extend(self, seconds: float) -> None:
        """Move the deadline (and every timeout handed out that has not fired) by ``seconds``."""
        self.extended += seconds
        for timeout, past in self._handed:
            if timeout.when() is not None and not timeout.expired():
                with contextlib.suppress(RuntimeError):  # not entered yet, or exited: nothing runs under it
                    timeout.reschedule(self.deadline + past)

    @property
    def backstop(self) -> float:
        """When the pipeline cancels a run that did not stop at its deadline (loop time)."""
        return self.deadline + SOFT_LIMIT_SLACK

    def spent(self) -> float:
        """Seconds used so far."""
        return _now() - self.started

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - _now())

    def expired(self) -> bool:
        return _now() >= self.deadline

    def until_deadline(self) -> asyncio.Timeout:
        """``async with budget.until_deadline():`` raises ``TimeoutError`` at the deadline."""
        return self._hand(0.0)

    def until_backstop(self) -> asyncio.Timeout:
        return self._hand(SOFT_LIMIT_SLACK)

    def _hand(self, past: float) -> asyncio.Timeout:
        self._handed = [(t, p) for t, p in self._handed if not t.expired()][-HANDED_MAX:]
        timeout = asyncio.timeout_at(self.deadline + past)
        self._handed.append((timeout, past))
        return timeout
