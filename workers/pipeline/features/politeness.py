"""Politeness: a job's slot on its site before it gets a browser, and the gate its navigations ask.

A job takes its registrable domain's slot (``max_concurrent``) **before** it leases a browser
context (``hold``), so a job waiting for a busy site holds no browser, no page and no memory to
speak of; the wait counts against the job's time budget, and the slot is released when the
session closes, however it ends. While a job holds a slot, the worker's heartbeat renews it
(``beat``), so a worker that dies leaves only a lease that lapses.

Each navigation the agent makes asks the job's gate (``JobGate``): robots.txt first (if the job
respects it), then the domain's delay (``min_delay``). Each wait shows in the job's event stream as
a ``politeness`` event and in ``browserd_politeness_wait_seconds`` / ``_waiting_jobs``.

robots.txt is fetched through the job's own egress gate (its side door): the fetch is judged by
the very rule the job's browser is, so politeness can never reach an address the job could not.

The gate also hears each main-frame document's answer: a 429 or 503 (with its ``Retry-After``)
slows the site down for every worker (``DomainLimits.back_off``), as does a job that ends
``blocked_by_site`` (``settle``). Each hit shows as a ``politeness`` event of kind ``backoff``.

Slots, spacing, back-off and the robots.txt cache live in the shared Redis, across every worker. A run with
no shared store (``browserd run`` without ``BROWSERD_REDIS_URL``) keeps them in this process, with
the same rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

import cdp
from workers.agent import URLBlocked
import workers.jobs.metrics as metrics
from workers.jobs.metrics import politeness_waiting
from workers.jobs.model.record import EventType
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import FailureCategory
from workers.jobs.model.spec import JobSpec
from workers.jobs.politeness.domains import job_domain, url_domain
from workers.jobs.politeness.options import PolitenessLimits, limits_for, robots_remedy
from workers.jobs.politeness.robots import RobotsCache, RobotsFile
from workers.jobs.politeness.slots import (
    BackedOff,
    BackoffRule,
    DomainLimits,
    HeldSlot,
    Reservation,
    SiteAnswer,
    SlotsFreed,
    poll_slot,
    retry_after_seconds,
)
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun
from workers.pipeline.robots_lookup import Robots, robots_file
from workers.pipeline.side_fetch import SideDoorRefused

log = logging.getLogger("browserd.politeness")

QUIET_SECONDS = 1.0  # a domain found with no back-off is taken to have none this long (per worker)
MAX_QUIET_DOMAINS = 10_000  # past this, expired entries are dropped



class Slots(Protocol):
    """Per-domain slots and navigation spacing (``DomainLimits`` in Redis, ``LocalLimits`` here)."""

    async def try_slot(self, domain: str, job_id: str, limit: int) -> bool: ...

    async def wait_slot(self, domain: str, job_id: str, limit: int, patience: float,
                        cancelled: Callable[[], bool] = ...) -> HeldSlot: ...

    async def renew(self, slots: Iterable[HeldSlot]) -> None: ...

    async def release(self, slot: HeldSlot) -> None: ...

    async def reserve_navigation(self, domain: str, min_delay: float) -> float: ...

    async def reserve(self, domain: str, min_delay: float) -> Reservation: ...

    async def back_off(self, domain: str, retry_after: float | None = None) -> BackedOff: ...


class LocalLimits:
    """Slots, spacing and back-off in this process, for a run with no shared store (one process: no leases)."""

    def __init__(self, backoff: BackoffRule = BackoffRule()) -> None:
        self.holders: dict[str, set[str]] = {}
        self.last: dict[str, float] = {}
        self.backoff = backoff
        self.hits: dict[str, tuple[int, float, float]] = {}  # domain -> (level, at, until), monotonic times
        self.freed = SlotsFreed()

    def _level(self, domain: str, now: float) -> tuple[int, float]:
        level, at, until = self.hits.get(domain, (0, now, 0.0))
        return max(0, level - int((now - at) // self.backoff.recovery)), until

    async def try_slot(self, domain: str, job_id: str, limit: int) -> bool:
        held = self.holders.setdefault(domain, set())
        if job_id in held or not limit or len(held) < limit:
            held.add(job_id)
            return True
        return False

    async def wait_slot(self, domain: str, job_id: str, limit: int, patience: float,
                        cancelled: Callable[[], bool] = lambda: False) -> HeldSlot:
        return await poll_slot(lambda: self.try_slot(domain, job_id, limit), HeldSlot(domain, job_id), limit,
                               patience, cancelled, self.freed)

    async def renew(self, slots: Iterable[HeldSlot]) -> None:
        return None

    async def release(self, slot: HeldSlot) -> None:
        self.holders.get(slot.domain, set()).discard(slot.job_id)
        self.freed.notify()

    async def reserve_navigation(self, domain: str, min_delay: float) -> float:
        return (await self.reserve(domain, min_delay)).wait

    async def reserve(self, domain: str, min_delay: float) -> Reservation:
        now = time.monotonic()
        level, until = self._level(domain, now)
        delay = max(min_delay, self.backoff.spacing(level))
        at = max(now, self.last.get(domain, now - delay) + delay, until)
        self.last[domain] = at
        return Reservation(at - now, level)

    async def back_off(self, domain: str, retry_after: float | None = None) -> BackedOff:
        now = time.monotonic()
        level, until = self._level(domain, now)
        level = min(level + 1, 30)
        pause = self.backoff.spacing(level)
        if retry_after is not None:
            pause = max(pause, min(retry_after, self.backoff.cap))
        until = max(until, now + pause)
        self.hits[domain] = (level, now, until)
        return BackedOff(domain, level, until - now)


class LocalRobots:
    """robots.txt files fetched by this process, for a run with no shared store."""

    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        self.files: dict[str, tuple[float, RobotsFile]] = {}

    async def get(self, origin: str) -> RobotsFile | None:
        kept = self.files.get(origin)
        return kept[1] if kept is not None and kept[0] > time.monotonic() else None

    async def put(self, origin: str, found: RobotsFile) -> None:
        self.files[origin] = (time.monotonic() + self.ttl, found)


class Politeness(Feature):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        redis = services.redis
        rule = BackoffRule(cap=self.settings.politeness_backoff_max, recovery=self.settings.politeness_backoff_recovery)
        self.domains: Slots = (LocalLimits(rule) if redis is None
                               else DomainLimits(redis, services.keys, services.stale_after, rule))
        self.robots: Robots = (LocalRobots(self.settings.robots_ttl) if redis is None
                               else RobotsCache(redis, services.keys, self.settings.robots_ttl))
        self.held: dict[str, HeldSlot] = {}  # job id -> its slot
        self.quiet: dict[str, float] = {}  # domain -> until when (monotonic) it is taken to have no back-off

    async def event(self, run: JobRun, **data: Any) -> None:
        await self.services.records.event(run.job_id, run.attempt, EventType.politeness, json.dumps(data))

    def hold(self, run: JobRun) -> contextlib.AbstractAsyncContextManager[object] | None:
        limits = limits_for(run.spec.politeness, self.settings, refuse=False)
        run.put(limits)
        domain = job_site(run.spec, run.inputs.spec)
        if domain is None or not limits.max_concurrent:  # no limit: no slot to take, renew or release
            return None
        return self._slot(run, domain, limits.max_concurrent)

    @contextlib.asynccontextmanager
    async def _slot(self, run: JobRun, domain: str, limit: int) -> AsyncIterator[None]:
        """Hold the job's slot on ``domain``; ``SlotWaitExpired`` when none came free within
        ``BROWSERD_POLITENESS_MAX_WAIT`` (or the job's budget), ``SlotWaitCancelled`` on a cancel."""
        if not await self.domains.try_slot(domain, run.job_id, limit):
            await self._wait(run, domain, limit)
        self.held[run.job_id] = HeldSlot(domain, run.job_id)
        try:
            yield
        finally:
            slot = self.held.pop(run.job_id)
            with contextlib.suppress(Exception):  # a slot that cannot be released lapses by itself
                await self.domains.release(slot)

    async def _wait(self, run: JobRun, domain: str, limit: int) -> None:
        await self.event(run, kind="slot", state="waiting", domain=domain, limit=limit)
        log.info("job %s waits for one of the %d slots on %s", run.job_id, limit, domain)
        started = time.monotonic()
        patience = min(self.settings.politeness_max_wait, run.budget.remaining())
        with politeness_waiting("slot"):
            await self.domains.wait_slot(domain, run.job_id, limit, patience, run.is_cancelled)
        await self.event(run, kind="slot", state="acquired", domain=domain, limit=limit,
                         waited=round(time.monotonic() - started, 3))

    async def attach(self, run: JobRun) -> None:
        limits = run.get(PolitenessLimits)
        assert run.lease is not None and limits is not None
        run.inputs.navigation_gate = JobGate(self, run, limits, run.lease.egress)

    async def beat(self) -> None:
        """Extend every slot this process's jobs hold."""
        await self.domains.renew(self.held.values())

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        """A job the site blocked (a captcha, a bot wall) slows its site down for every worker."""
        if result.category is FailureCategory.blocked_by_site:
            domain = job_site(run.spec, run.inputs.spec)
            if domain is not None:
                await self.back_off(run, domain, None, reason="blocked_by_site")
        return result

    async def back_off(self, run: JobRun, domain: str, retry_after: float | None, reason: str) -> None:
        """Slow ``domain`` down one level (``retry_after``: the site's own wait, capped), and say so."""
        self.quiet.pop(domain, None)  # this worker's own navigations see its back-off at once
        try:
            hit = await self.domains.back_off(domain, retry_after)
        except Exception as exc:  # politeness that cannot be recorded must not fail the job
            log.warning("job %s: the back-off on %s was not recorded: %s", run.job_id, domain, exc)
            return
        metrics.observe_backoff(reason.lower().replace(" ", "_"))
        log.info("job %s: %s slows %s down: level %d, no navigation for %.1fs", run.job_id, reason, domain,
                 hit.level, hit.seconds)
        await self.event(run, kind="backoff", domain=domain, reason=reason, level=hit.level,
                         seconds=round(hit.seconds, 3), retry_after=retry_after)


def job_site(job: JobSpec, running: JobSpec) -> str | None:
    """The registrable domain a job's slot is taken on: its own start URL's, else the one it runs
    with (a recipe job names none of its own: the recipe's), else the first page its script opens."""
    url = job.start_url or running.start_url
    return job_domain(str(url) if url else None, running.script)


class JobGate:
    """One job's ``NavigationGate``: robots.txt first (if asked for), then the domain's delay."""

    def __init__(self, politeness: Politeness, run: JobRun, limits: PolitenessLimits,
                 egress: cdp.Gate | None) -> None:
        self.politeness = politeness
        self.run = run
        self.limits = limits
        self.egress = egress

    @property
    def intercepts(self) -> bool:
        return self.limits.paces or self.limits.respect_robots_txt

    async def before_navigation(self, url: str) -> None:
        domain = url_domain(url)
        if domain is None:
            return
        delay = self.limits.min_delay
        if self.limits.respect_robots_txt:
            found = await self._check_robots(url)
            delay = max(delay, found.crawl_delay(self.politeness.settings.robots_user_agent))
        await self._space(domain, delay)  # also when 0: the domain may be backed off

    async def after_response(self, url: str, status: int, retry_after: str | None) -> None:
        """A 429 or 503 to one of the job's pages slows its site down (Retry-After honoured, capped)."""
        answer = SiteAnswer(url, status, retry_after_seconds(retry_after))
        self.run.put(answer)  # what the page's document was answered (a crawl's page reads it)
        domain = url_domain(url)
        if domain is not None and answer.slows:
            await self.politeness.back_off(self.run, domain, answer.retry_after, reason=f"HTTP {status}")

    async def _space(self, domain: str, delay: float) -> None:
        """Wait for this navigation's turn on ``domain``: ``delay`` is the job's ``min_delay`` or the
        site's ``Crawl-delay``, whichever is longer (or the domain's back-off, the Redis script decides).

        With no delay of its own, a navigation needs a turn only while its domain is backed off: a
        domain found quiet (no back-off, no wait) is taken to stay so for ``QUIET_SECONDS`` in this
        worker, and navigations to it meanwhile make no reservation (no Redis round trip on every
        page of a batch that asks for no politeness). A back-off recorded by this worker ends that at
        once; one recorded by another worker reaches this one's navigations within ``QUIET_SECONDS``."""
        quiet = self.politeness.quiet
        if delay <= 0 and quiet.get(domain, 0.0) > time.monotonic():
            return
        reserved = await self.politeness.domains.reserve(domain, delay)
        if delay <= 0 and reserved.quiet:
            quiet[domain] = time.monotonic() + QUIET_SECONDS
            if len(quiet) > MAX_QUIET_DOMAINS:
                now = time.monotonic()
                self.politeness.quiet = {d: t for d, t in quiet.items() if t > now}
        wait = reserved.wait
        if wait <= 0:
            return
        await self.politeness.event(self.run, kind="navigation", state="waiting", domain=domain,
                                    seconds=round(wait, 3), min_delay=delay)
        with politeness_waiting("navigation"):
            await asyncio.sleep(wait)

    async def _check_robots(self, url: str) -> RobotsFile:
        """The site's robots.txt (cached, else fetched through the job's egress gate); ``URLBlocked``
        when it disallows ``url``, or when the job's egress policy refuses its fetch."""
        agent = self.politeness.settings.robots_user_agent
        try:
            found = await robots_file(self.politeness.robots, self.egress, url, agent)
        except SideDoorRefused as exc:
            raise URLBlocked(url, f"its robots.txt ({exc.address}) could not be fetched: the job's egress policy "
                             f"refused {exc.host}:{exc.port} ({exc.refusal})") from None
        reason = found.refusal(url, agent)
        if reason is not None:
            await self.politeness.event(self.run, kind="robots", state="refused", url=url, reason=reason)
            raise URLBlocked(url, reason + robots_remedy(self.run.spec.politeness, self.politeness.settings))
        return found
