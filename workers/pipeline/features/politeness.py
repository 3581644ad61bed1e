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

Slots, spacing and the robots.txt cache live in the shared Redis, across every worker. A run with
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

import httpx

import cdp
from workers.agent import URLBlocked
from workers.jobs.metrics import politeness_waiting
from workers.jobs.model.record import EventType
from workers.jobs.model.spec import JobSpec
from workers.jobs.politeness.domains import job_domain, url_domain
from workers.jobs.politeness.options import PolitenessLimits, limits_for, robots_remedy
from workers.jobs.politeness.robots import MAX_BODY, RobotsCache, RobotsFile, robots_url
from workers.jobs.politeness.slots import DomainLimits, HeldSlot, poll_slot
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.politeness")

ROBOTS_TIMEOUT = 10.0  # seconds one robots.txt fetch may take
ROBOTS_REDIRECTS = 5  # RFC 9309 asks crawlers to follow at least five


class Slots(Protocol):
    """Per-domain slots and navigation spacing (``DomainLimits`` in Redis, ``LocalLimits`` here)."""

    async def try_slot(self, domain: str, job_id: str, limit: int) -> bool: ...

    async def wait_slot(self, domain: str, job_id: str, limit: int, patience: float,
                        cancelled: Callable[[], bool] = ...) -> HeldSlot: ...

    async def renew(self, slots: Iterable[HeldSlot]) -> None: ...

    async def release(self, slot: HeldSlot) -> None: ...

    async def reserve_navigation(self, domain: str, min_delay: float) -> float: ...


class Robots(Protocol):
    async def get(self, origin: str) -> RobotsFile | None: ...

    async def put(self, origin: str, found: RobotsFile) -> None: ...


class LocalLimits:
    """Slots and spacing in this process, for a run with no shared store (one process: no leases)."""

    def __init__(self) -> None:
        self.holders: dict[str, set[str]] = {}
        self.last: dict[str, float] = {}

    async def try_slot(self, domain: str, job_id: str, limit: int) -> bool:
        held = self.holders.setdefault(domain, set())
        if job_id in held or not limit or len(held) < limit:
            held.add(job_id)
            return True
        return False

    async def wait_slot(self, domain: str, job_id: str, limit: int, patience: float,
                        cancelled: Callable[[], bool] = lambda: False) -> HeldSlot:
        return await poll_slot(lambda: self.try_slot(domain, job_id, limit), HeldSlot(domain, job_id), limit,
                               patience, cancelled)

    async def renew(self, slots: Iterable[HeldSlot]) -> None:
        return None

    async def release(self, slot: HeldSlot) -> None:
        self.holders.get(slot.domain, set()).discard(slot.job_id)

    async def reserve_navigation(self, domain: str, min_delay: float) -> float:
        now = time.monotonic()
        at = max(now, self.last.get(domain, now - min_delay) + min_delay)
        self.last[domain] = at
        return at - now


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
        self.domains: Slots = LocalLimits() if redis is None else DomainLimits(redis, services.keys,
                                                                               services.stale_after)
        self.robots: Robots = (LocalRobots(self.settings.robots_ttl) if redis is None
                               else RobotsCache(redis, services.keys, self.settings.robots_ttl))
        self.held: dict[str, HeldSlot] = {}  # job id -> its slot

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
        if self.limits.respect_robots_txt:
            await self._check_robots(url)
        if self.limits.paces:
            await self._space(domain)

    async def _space(self, domain: str) -> None:
        wait = await self.politeness.domains.reserve_navigation(domain, self.limits.min_delay)
        if wait <= 0:
            return
        await self.politeness.event(self.run, kind="navigation", state="waiting", domain=domain,
                                    seconds=round(wait, 3), min_delay=self.limits.min_delay)
        with politeness_waiting("navigation"):
            await asyncio.sleep(wait)

    async def _check_robots(self, url: str) -> None:
        robots = robots_url(url)
        found = await self.politeness.robots.get(robots.origin)
        if found is None:
            found = await self._fetch(url, robots.url)
            await self.politeness.robots.put(robots.origin, found)
        reason = found.refusal(url, self.politeness.settings.robots_user_agent)
        if reason is not None:
            await self.politeness.event(self.run, kind="robots", state="refused", url=url, reason=reason)
            raise URLBlocked(url, reason + robots_remedy(self.run.spec.politeness, self.politeness.settings))

    async def _fetch(self, url: str, address: str) -> RobotsFile:
        """GET robots.txt through the job's egress gate; a refusal there (of the first request or of
        a redirect) is the job's refusal, reported as such for ``url``."""
        if self.egress is None:
            return RobotsFile(0, error="the job has no egress gate")
        headers = {"User-Agent": f"{self.politeness.settings.robots_user_agent} (robots.txt)"}
        refused_before = self.egress.refused
        try:
            async with self.egress.side_door() as door:
                async with httpx.AsyncClient(proxy=door, trust_env=False, timeout=ROBOTS_TIMEOUT,
                                             follow_redirects=True, max_redirects=ROBOTS_REDIRECTS,
                                             headers=headers) as client:
                    async with client.stream("GET", address) as response:
                        body = await _read_capped(response)
                        return RobotsFile(response.status_code, body.decode("utf-8", errors="replace"))
        except httpx.HTTPError as exc:
            if self.egress.refused > refused_before:
                decision = self.egress.unreported()[-1]
                raise URLBlocked(url, f"its robots.txt ({address}) could not be fetched: the job's egress policy "
                                 f"refused {decision.host}:{decision.port} ({decision.refusal})") from None
            return RobotsFile(0, error=f"{type(exc).__name__}: {exc}"[:300])


async def _read_capped(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= MAX_BODY:
            break
    return bytes(body[:MAX_BODY])
