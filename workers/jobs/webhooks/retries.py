"""When a failed webhook delivery is tried again: a schedule that outlasts a receiver's outage.

Celery's ``retry_backoff`` with full jitter drew each wait between 0 and its cap, so 8 retries
were spent within about two minutes and a receiver down for a five-minute deploy lost everything
sent meanwhile (issue 25). The waits here double from one second up to ``MAX_INTERVAL`` and go
on at that interval until they add up to ``BROWSERD_WEBHOOK_RETRY_SECONDS`` (two hours by
default); jitter only ever lengthens a wait, so the schedule never ends early.
"""

from __future__ import annotations

import random

FIRST_INTERVAL = 1.0
MAX_INTERVAL = 600.0  # at most ten minutes between two attempts
JITTER = 0.25  # each wait is stretched by up to this share, so retries of many deliveries spread out


def retry_delays(window: float) -> list[float]:
    """The waits before each retry (without jitter), adding up to at least ``window`` seconds."""
    delays: list[float] = []
    while sum(delays) < window:
        delays.append(min(MAX_INTERVAL, FIRST_INTERVAL * 2 ** len(delays)))
    return delays


def retry_countdown(window: float, retries: int) -> float | None:
    """The wait before retry ``retries + 1`` (jittered); None when the schedule is spent (give up)."""
    delays = retry_delays(window)
    if retries >= len(delays):
        return None
    return delays[retries] * (1 + random.uniform(0, JITTER))
