"""A worker's side of politeness: the slots its jobs hold, and each job's navigation gate.

A job takes its domain's slot **before** it leases a browser context (``Deliveries``), so a job
waiting for a busy site holds a Celery thread of its worker but no browser, no page and no
memory to speak of; the slot is released when the delivery ends, however it ends, and a worker
that dies leaves only a lease that lapses (``DomainLimits``). While a job holds a slot, this
process's heartbeat renews it (``renew``).

Each wait shows in the job's event stream as a ``politeness`` event (SSE ``event: politeness``)
and in ``browserd_politeness_wait_seconds`` / ``browserd_politeness_waiting_jobs``.

robots.txt is fetched through the job's own egress gate (its proxy port): the fetch is judged by
the very rule the job's browser is, domain lists and networks alike, so politeness can never
reach an address the job could not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

import cdp
from config import Settings
from workers.agent import URLBlocked
from workers.jobs.metrics import politeness_waiting
from workers.jobs.model.record import POLITENESS_EVENT
from workers.jobs.politeness.domains import url_domain
from workers.jobs.politeness.options import PolitenessLimits
from workers.jobs.politeness.robots import MAX_BODY, RobotsCache, RobotsFile, robots_url
from workers.jobs.politeness.slots import DomainLimits, HeldSlot
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.politeness")

ROBOTS_TIMEOUT = 10.0  # seconds one robots.txt fetch may take
ROBOTS_REDIRECTS = 5  # RFC 9309 asks crawlers to follow at least five


class Politeness:
    """One per worker process: slots its jobs hold, on the store's Redis."""

    def __init__(self, store: JobStore, settings: Settings, lease: float) -> None:
        self.store = store
        self.settings = settings
        self.domains = DomainLimits(store.redis, store.keys, lease)
        self.robots = RobotsCache(store.redis, store.keys, settings.robots_ttl)
        self.held: dict[str, HeldSlot] = {}  # job id -> its slot

    async def event(self, job_id: str, attempt: int, **data: Any) -> None:
        await self.store.event(job_id, attempt, POLITENESS_EVENT, json.dumps(data))

    @contextlib.asynccontextmanager
    async def slot(self, job_id: str, attempt: int, domain: str | None, limits: PolitenessLimits,
                   patience: float, cancelled: Callable[[], bool]) -> AsyncIterator[float]:
        """Hold the job's slot on ``domain`` (none without a domain); yields the seconds waited.
        Raises ``SlotWaitExpired`` when none came free within ``patience`` seconds,
        ``SlotWaitCancelled`` when the job is cancelled meanwhile."""
        if domain is None or not limits.max_concurrent:  # no limit: no slot to take, renew or release
            yield 0.0
            return
        waited = await self._take(job_id, attempt, domain, limits.max_concurrent, patience, cancelled)
        self.held[job_id] = HeldSlot(domain, job_id)
        try:
            yield waited
        finally:
            slot = self.held.pop(job_id)
            with contextlib.suppress(Exception):  # a slot that cannot be released lapses by itself
                await self.domains.release(slot)

    async def _take(self, job_id: str, attempt: int, domain: str, limit: int, patience: float,
                    cancelled: Callable[[], bool]) -> float:
        if await self.domains.try_slot(domain, job_id, limit):
            return 0.0
        await self.event(job_id, attempt, kind="slot", state="waiting", domain=domain, limit=limit)
        log.info("job %s waits for one of the %d slots on %s", job_id, limit, domain)
        started = time.monotonic()
        with politeness_waiting("slot"):
            await self.domains.wait_slot(domain, job_id, limit, patience, cancelled)
        waited = time.monotonic() - started
        await self.event(job_id, attempt, kind="slot", state="acquired", domain=domain, limit=limit,
                         waited=round(waited, 3))
        return waited

    async def renew(self) -> None:
        """The heartbeat: extend every slot this process's jobs hold."""
        await self.domains.renew(self.held.values())

    def gate(self, job_id: str, attempt: int, limits: PolitenessLimits, egress: cdp.Gate | None) -> JobGate:
        return JobGate(self, job_id, attempt, limits, egress)


class JobGate:
    """One job's ``NavigationGate``: robots.txt first (if asked for), then the domain's delay."""

    def __init__(self, politeness: Politeness, job_id: str, attempt: int, limits: PolitenessLimits,
                 egress: cdp.Gate | None) -> None:
        self.politeness = politeness
        self.job_id, self.attempt = job_id, attempt
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
        await self.politeness.event(self.job_id, self.attempt, kind="navigation", state="waiting", domain=domain,
                                    seconds=round(wait, 3), min_delay=self.limits.min_delay)
        with politeness_waiting("navigation"):
            await asyncio.sleep(wait)

    async def _check_robots(self, url: str) -> None:
        origin, address = robots_url(url)
        found = await self.politeness.robots.get(origin)
        if found is None:
            found = await self._fetch(url, address)
            await self.politeness.robots.put(origin, found)
        reason = found.refusal(url, self.politeness.settings.robots_user_agent)
        if reason is not None:
            await self.politeness.event(self.job_id, self.attempt, kind="robots", state="refused", url=url,
                                        reason=reason)
            raise URLBlocked(url, reason)

    async def _fetch(self, url: str, address: str) -> RobotsFile:
        """GET robots.txt through the job's egress gate; a refusal there (of the first request or of
        a redirect) is the job's refusal, reported as such for ``url``."""
        if self.egress is None:
            return RobotsFile(0, error="the job has no egress gate")
        headers = {"User-Agent": f"{self.politeness.settings.robots_user_agent} (robots.txt)"}
        refused_before = self.egress.refused
        try:
            async with httpx.AsyncClient(proxy=self.egress.proxy_server, trust_env=False, timeout=ROBOTS_TIMEOUT,
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
