"""Proxy pools: a job that names one of the operator's pools (``proxy_pool``) gets one of its
proxies, keeps it, and moves to another when a site blocks it or the proxy fails.

- **Sticky.** The proxy is chosen from the job's id (``sticky_index``: the same on every worker and
  on a retry of the job), skipping proxies cooled down; the job keeps it for its whole life.
- **Rotation.** A main-frame page answered 403 or 429 (``ROTATE_STATUSES``), or the agent ending
  ``blocked_by_site``, moves the job to the next usable proxy of the pool, at most the pool's
  ``max_rotations`` times; the agent is told it may try again (the gate's notice), and a
  ``blocked_by_site`` claim with a move left does not end the job. Without a move left the job
  ends as it would without a pool.
- **Health.** A proxy that fails as a proxy (unreachable, credentials refused) is cooled down for
  the pool's ``cooldown``, and the gate goes on through the next one (each proxy tried once per
  job); with none left, the job fails ``proxy_error``. Where there is a shared Redis the cooldown is
  written there too (``Keys.proxy_cooled``, expiring with it) and read by every worker before it
  chooses a job's proxy; the gate's own fallback, which cannot wait for Redis, uses this process's view.

Every destination is still judged by the job's egress gate first, whichever proxy carries it
(``cdp.egress``). The proxies' credentials come from the operator's settings and go to the gate
only: the job's record holds the pool's name, logs and metrics a proxy's label
(``browserd_proxy_*``: pages, blocks, failures, rotations, cooled down).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time

import redis.asyncio as aioredis

import cdp
import workers.jobs.metrics as metrics
from config.proxy_pools import ROTATE_STATUSES, ProxyPool
from workers.agent import BlockReason, NavigationGate, OpenGate, ProxyFailed
from workers.jobs.store.keys import Keys
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.proxy_pools")
PROXY_FAILED = "proxy_failed"  # the metrics' reason of a move away from a proxy that failed


def sticky_index(job_id: str, size: int) -> int:
    """Where in a pool of ``size`` a job starts: stable across processes (not Python's ``hash``)."""
    return int.from_bytes(hashlib.sha256(job_id.encode()).digest()[:8], "big") % size


class PoolHealth:
    """This process's view of the pools' proxies: which are cooled down after a failure, and until
    when; shared with the other workers through ``redis`` when there is one."""

    def __init__(self, pools: dict[str, ProxyPool], redis: aioredis.Redis | None = None, keys: Keys = Keys()) -> None:
        self.pools = pools
        self.redis, self.keys = redis, keys
        self.cooled: dict[tuple[str, int], float] = {}  # (pool, index) -> monotonic time it is usable again
        self._writes: set[asyncio.Task[None]] = set()
        metrics.init_proxy_series({name: [p.label(i) for i in range(len(p.proxies))] for name, p in pools.items()})

    async def refresh(self, pool: str) -> None:
        """Take in the cooldowns other workers wrote for ``pool`` (before a job chooses its proxy)."""
        if self.redis is None:
            return
        size = len(self.pools[pool].proxies)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for i in range(size):
                    pipe.pttl(self.keys.proxy_cooled(pool, self.pools[pool].label(i)))
                left = await pipe.execute()
        except Exception as exc:  # health that cannot be read must not fail the job: this process's view stands
            log.warning("proxy pool %s: the shared cooldowns were not read: %s", pool, exc)
            return
        now = time.monotonic()
        for i, ms in enumerate(left):
            if isinstance(ms, int) and ms > 0 and self.cooled.get((pool, i), 0.0) < now + ms / 1000:
                self.cooled[(pool, i)] = now + ms / 1000
                metrics.observe_proxy_cooled(pool, self.pools[pool].label(i), True)

    def usable(self, pool: str, index: int) -> bool:
        until = self.cooled.get((pool, index))
        if until is None:
            return True
        if until > time.monotonic():
            return False
        del self.cooled[(pool, index)]
        metrics.observe_proxy_cooled(pool, self.pools[pool].label(index), False)
        return True

    def cool(self, pool: str, index: int) -> None:
        self.cooled[(pool, index)] = time.monotonic() + self.pools[pool].cooldown
        label = self.pools[pool].label(index)
        metrics.observe_proxy_failure(pool, label)
        metrics.observe_proxy_cooled(pool, label, True)
        seconds = self.pools[pool].cooldown
        if self.redis is not None and seconds > 0:  # for the other workers; the gate's fallback cannot wait for it
            task = asyncio.get_running_loop().create_task(self._share(self.keys.proxy_cooled(pool, label), seconds))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    async def _share(self, key: str, seconds: float) -> None:
        try:
            await self.redis.set(key, "1", px=max(1, int(seconds * 1000)))  # type: ignore[union-attr]
        except Exception as exc:
            log.warning("proxy pool: a cooldown was not shared: %s", exc)

    async def flush(self) -> None:
        """Wait for the cooldowns being written (tests; the pipeline's stop)."""
        if self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    def pick(self, pool: str, job_id: str) -> int:
        """The job's proxy: its sticky place, or the next usable one after it; if every proxy is cooled
        down, the one usable soonest (a pool never refuses a job for its health alone)."""
        size = len(self.pools[pool].proxies)
        start = sticky_index(job_id, size)
        found = self.after(pool, start - 1, set())
        if found is not None:
            return found
        return min(range(size), key=lambda i: self.cooled.get((pool, i), 0.0))

    def after(self, pool: str, index: int, tried: set[int]) -> int | None:
        """The next usable proxy after ``index`` (in the pool's order, wrapping) not in ``tried``."""
        size = len(self.pools[pool].proxies)
        for step in range(1, size + 1):
            candidate = (index + step) % size
            if candidate not in tried and self.usable(pool, candidate):
                return candidate
        return None


class JobProxies:
    """One job's place in its pool (``workers.agent.ProxyRotation``)."""

    def __init__(self, name: str, pool: ProxyPool, health: PoolHealth, job_id: str) -> None:
        self.name, self.pool, self.health = name, pool, health
        self.index = health.pick(name, job_id)
        self.tried = {self.index}
        self.moves = 0
        self.gate: cdp.Gate | None = None  # the lease's egress gate, once the job holds one

    @property
    def label(self) -> str:
        return self.pool.label(self.index)

    def upstream(self) -> cdp.UpstreamProxy:
        proxy = self.pool.proxies[self.index]
        password = proxy.password.get_secret_value() if proxy.password is not None else None
        return cdp.UpstreamProxy(proxy.scheme, proxy.host, proxy.port, proxy.username, password,
                                 label=f"proxy {self.label} of pool {self.name!r}")

    def first(self) -> cdp.UpstreamProxy:
        metrics.observe_proxy_taken(self.name, self.label)
        log.info("proxy pool %s: the job goes through proxy %s", self.name, self.label)
        return self.upstream()

    def replace(self, failed: cdp.UpstreamProxy, reason: str) -> cdp.UpstreamProxy | None:
        self.health.cool(self.name, self.index)
        log.warning("proxy pool %s: proxy %s failed (%s); cooled down for %gs", self.name, self.label, reason,
                    self.pool.cooldown)
        return self.upstream() if self._move(PROXY_FAILED) else None

    def answered(self, status: int) -> bool:
        """A page answered ``status`` through the job's proxy: counted, and a block moves the job on."""
        reason = BlockReason(f"http_{status}") if status in ROTATE_STATUSES else None
        metrics.observe_proxy_page(self.name, self.label, reason.value if reason is not None else None)
        return reason is not None and self._switch(reason)

    def blocked(self, reason: BlockReason) -> bool:
        if reason is BlockReason.blocked_by_site:
            metrics.observe_proxy_block(self.name, self.label, reason.value)
        return self._switch(reason)

    def _switch(self, reason: BlockReason) -> bool:
        if self.gate is None or not self._move(reason.value):
            return False
        why = "the site answered HTTP " + reason.value[5:] if reason.value.startswith("http_") else "the site blocked it"
        self.gate.switch_upstream(self.upstream(), f"{why}: browserd moved this job to another proxy of its pool "
                                  f"(move {self.moves} of {self.pool.max_rotations}); opening the page again may work now")
        return True

    def _move(self, reason: str) -> bool:
        """Move to the next usable proxy not yet tried; a block counts against ``max_rotations``, a
        failed proxy does not (each proxy is tried once)."""
        bounded = reason != PROXY_FAILED
        if bounded and self.moves >= self.pool.max_rotations:
            log.info("proxy pool %s: %s on proxy %s, and no move left (%d)", self.name, reason, self.label, self.moves)
            return False
        nxt = self.health.after(self.name, self.index, self.tried)
        if nxt is None:
            log.info("proxy pool %s: %s on proxy %s, and no other proxy left", self.name, reason, self.label)
            return False
        previous = self.label
        self.index = nxt
        self.tried.add(nxt)
        self.moves += bounded
        metrics.observe_proxy_rotation(self.name, reason)
        metrics.observe_proxy_taken(self.name, self.label)
        log.info("proxy pool %s: %s on proxy %s; the job moves to proxy %s", self.name, reason, previous, self.label)
        return True


class PoolGate:
    """The job's navigation gate with the pool listening: each main-frame answer is counted on the
    proxy that carried it, and a 403/429 moves the job on. The politeness gate inside goes on as
    before; where it would not have paused navigations pages start by themselves (no ``min_delay``,
    no robots.txt), it is now asked about them too, since the firewall pauses every main-frame
    document for the pool, and only the domain's back-off can then make them wait."""

    intercepts = True  # the pool needs every main-frame answer

    def __init__(self, inner: NavigationGate, proxies: JobProxies) -> None:
        self.inner, self.proxies = inner, proxies

    async def before_navigation(self, url: str) -> None:
        await self.inner.before_navigation(url)

    async def after_response(self, url: str, status: int, retry_after: str | None) -> None:
        if self.inner.intercepts:
            await self.inner.after_response(url, status, retry_after)
        self.proxies.answered(status)


class ProxyPools(Feature):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.health = PoolHealth(self.settings.proxy_pools, services.redis, services.keys)

    async def prepare(self, run: JobRun) -> None:
        name = run.spec.proxy_pool
        if name is None:
            return
        pool = self.settings.proxy_pools.get(name)
        if pool is None:  # the API knew it; this worker's settings do not
            raise ProxyFailed(f"the proxy pool {name!r} is not configured here (BROWSERD_PROXY_POOLS)")
        await self.health.refresh(name)
        run.inputs.proxies = JobProxies(name, pool, self.health, run.job_id)

    async def attach(self, run: JobRun) -> None:
        proxies = run.inputs.proxies
        if not isinstance(proxies, JobProxies) or run.lease is None:
            return
        proxies.gate = run.lease.egress
        run.inputs.navigation_gate = PoolGate(run.inputs.navigation_gate or OpenGate(), proxies)

    async def stop(self) -> None:
        await self.health.flush()
