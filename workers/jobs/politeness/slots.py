"""Per-domain limits in Redis, shared by every worker: concurrency slots and navigation spacing.

A **slot** is a lease: a member of the domain's sorted set whose score is when it lapses. Taking
one (``politeness_slot_take.lua``) first drops lapsed members, so a crashed worker's slot frees
itself once its lease runs out (the worker's heartbeat renews the slots of the jobs it runs;
nothing else does). A job's end in any way it can end in its process (success, failure, cancel, a timeout,
an exception) releases the slot at once (``release``).

**Spacing** reserves the time of each navigation (``politeness_navigation_reserve.lua``): the
earliest moment at least ``min_delay`` after the latest reserved navigation to that domain. A caller waits until its
reservation, then navigates; reservations are first come, first served, so waiting is fair.
Both use the Redis server's clock.

**Back-off** adapts the spacing to what the site says (``politeness_backoff.lua``): a 429 or 503
answered to a page, or a page a job reports ``blocked_by_site``, raises the domain's level by one;
navigations to it are then spaced by ``base * 2^(level-1)`` (at most ``cap``) and none goes before
the answer's ``Retry-After`` (at most ``cap``). Every worker's reservations read it, so the whole
fleet slows down at once. The level drops by one every ``recovery`` seconds without a new hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from email.utils import parsedate_to_datetime
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import redis.asyncio as aioredis

from workers.jobs.errors import JobsError
from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import source

SLOT_POLL_SECONDS = 0.2  # how often a waiting job asks for a slot again
BACKOFF_BASE = 1.0  # seconds between navigations to a domain at back-off level 1 (doubling per level)
BACKOFF_STATUSES = frozenset({429, 503})  # HTTP answers to a page that slow its domain down


@dataclass(frozen=True)
class BackoffRule:
    """How a domain slows down and recovers (``BROWSERD_POLITENESS_BACKOFF_*``)."""

    cap: float = 300.0  # the longest spacing, and the longest Retry-After honoured
    recovery: float = 60.0  # seconds without a hit per level recovered
    base: float = BACKOFF_BASE

    def spacing(self, level: int) -> float:
        return min(self.cap, self.base * 2 ** (level - 1)) if level > 0 else 0.0


@dataclass(frozen=True)
class SiteAnswer:
    """The last main-frame document a job's page was answered: its URL, HTTP status and Retry-After."""

    url: str
    status: int
    retry_after: float | None

    @property
    def slows(self) -> bool:
        """A 429 or 503: the site asked to be left alone (the page's content is not the page)."""
        return self.status in BACKOFF_STATUSES


@dataclass(frozen=True)
class BackedOff:
    """A domain's back-off after a hit: its level and how long no navigation goes to it."""

    domain: str
    level: int
    seconds: float


@dataclass(frozen=True)
class Reservation:
    """A navigation's turn on a domain: seconds to wait for it, and the domain's back-off level then."""

    wait: float
    level: int

    @property
    def quiet(self) -> bool:
        """No wait and no back-off: the domain asks nothing of a navigation with no delay of its own."""
        return self.wait <= 0 and self.level == 0


@dataclass(frozen=True)
class HeldSlot:
    """A job's slot on a domain (what the heartbeat renews)."""

    domain: str
    job_id: str


class SlotWaitExpired(JobsError):
    """No slot came free on ``domain`` within ``waited`` seconds."""

    def __init__(self, domain: str, limit: int, waited: float) -> None:
        self.domain, self.limit, self.waited = domain, limit, waited
        super().__init__(f"waited {waited:.0f}s for one of the {limit} slots on {domain} (politeness limit); "
                         "none came free")


class SlotWaitCancelled(JobsError):
    """The job was cancelled while it waited for a slot on ``domain``."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        super().__init__(f"cancelled while waiting for a slot on {domain} (politeness limit)")


class SlotsFreed:
    """Slots released in this process: a job of this process waiting for one asks again at once,
    not at its next poll.

    Polling alone left a domain's slot idle for half a poll on average each time one of this
    worker's jobs handed it on (a crawl's pages, a fraction of a second each, lost a good share of
    their turns so). Only the asking is sooner: taking the slot is the same Redis script, so the
    limit holds as before; another worker's release is still seen at the next poll."""

    def __init__(self) -> None:
        self._events: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}  # an Event belongs to one loop

    async def wait(self, seconds: float) -> None:
        """Until a slot is released here, or ``seconds`` at most."""
        event = self._events.setdefault(asyncio.get_running_loop(), asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    def notify(self) -> None:
        """A slot was released: wake every waiter (each asks for its own domain's slot once more)."""
        events, self._events = self._events, {}
        for event in events.values():
            event.set()


async def poll_slot(take: Callable[[], Awaitable[bool]], slot: HeldSlot, limit: int, patience: float,
                    cancelled: Callable[[], bool], freed: SlotsFreed) -> HeldSlot:
    """Ask ``take()`` for ``slot`` every ``SLOT_POLL_SECONDS``, or as soon as ``freed`` says a slot
    of this process was released, until it gives it; ``SlotWaitExpired`` after ``patience``
    seconds, ``SlotWaitCancelled`` as soon as ``cancelled()`` says so."""
    started = time.monotonic()
    while not await take():
        if cancelled():
            raise SlotWaitCancelled(slot.domain)
        waited = time.monotonic() - started
        if waited + SLOT_POLL_SECONDS > patience:
            raise SlotWaitExpired(slot.domain, limit, waited)
        await freed.wait(SLOT_POLL_SECONDS)
    return slot


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """An HTTP ``Retry-After`` value (delay seconds or an HTTP date) as seconds from ``now`` (epoch;
    the current time by default); None when absent or unreadable. Never negative."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class DomainLimits:
    """Slots and spacing on one Redis; ``lease`` is how long a slot lives without a renewal."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, lease: float, backoff: BackoffRule = BackoffRule()) -> None:
        self.redis = redis
        self.keys = keys
        self.lease = lease
        self.backoff = backoff
        self.freed = SlotsFreed()
        self._hit = redis.register_script(source("politeness_backoff"))
        self._take = redis.register_script(source("politeness_slot_take"))
        self._renew = redis.register_script(source("politeness_slot_renew"))
        self._reserve = redis.register_script(source("politeness_navigation_reserve"))

    async def try_slot(self, domain: str, job_id: str, limit: int) -> bool:
        """Take (or renew) the job's slot if the domain has one free; 0 means no limit."""
        return bool(await self._take(keys=[self.keys.domain_slots(domain)], args=[job_id, limit, self.lease]))

    async def wait_slot(self, domain: str, job_id: str, limit: int, patience: float,
                        cancelled: Callable[[], bool] = lambda: False) -> HeldSlot:
        """Take a slot, asking again every ``SLOT_POLL_SECONDS`` (at once when a job of this process
        releases one); ``SlotWaitExpired`` after ``patience``,
        ``SlotWaitCancelled`` as soon as ``cancelled()`` says so."""
        return await poll_slot(lambda: self.try_slot(domain, job_id, limit), HeldSlot(domain, job_id), limit,
                               patience, cancelled, self.freed)

    async def renew(self, slots: Iterable[HeldSlot]) -> None:
        """Extend every slot still held, in one round trip (the worker's heartbeat)."""
        held = list(slots)
        if held:
            await self._renew(keys=[self.keys.domain_slots(s.domain) for s in held],
                              args=[self.lease, *(s.job_id for s in held)])

    async def release(self, slot: HeldSlot) -> None:
        await self.redis.zrem(self.keys.domain_slots(slot.domain), slot.job_id)
        self.freed.notify()

    async def holders(self, domain: str) -> list[str]:
        """Job ids holding a live slot on ``domain`` (for inspection and tests)."""
        seconds, micros = await self.redis.time()
        return list(await self.redis.zrangebyscore(self.keys.domain_slots(domain), seconds + micros / 1e6, "+inf"))

    async def reserve_navigation(self, domain: str, min_delay: float) -> float:
        """Reserve the next navigation to ``domain`` (spaced by ``min_delay`` or the domain's back-off,
        whichever is longer, and not before its Retry-After); seconds to wait before making it."""
        return (await self.reserve(domain, min_delay)).wait

    async def reserve(self, domain: str, min_delay: float) -> Reservation:
        """``reserve_navigation``, with the domain's back-off level."""
        rule = self.backoff
        wait, level = await self._reserve(keys=[self.keys.domain_last_navigation(domain), self.keys.domain_backoff(domain)],
                                          args=[min_delay, rule.base, rule.cap, rule.recovery])
        return Reservation(float(wait), int(level))

    async def back_off(self, domain: str, retry_after: float | None = None) -> BackedOff:
        """The site answered 429/503 (``retry_after``: its Retry-After in seconds) or blocked a job:
        slow ``domain`` down one level more for every worker."""
        rule = self.backoff
        level, seconds = await self._hit(keys=[self.keys.domain_backoff(domain)],
                                         args=[-1 if retry_after is None else max(0.0, retry_after), rule.base,
                                               rule.cap, rule.recovery])
        return BackedOff(domain, int(level), float(seconds))
