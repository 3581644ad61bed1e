"""A pool of browsers serving isolated-context leases.

Each browser keeps a few contexts with a blank page ready, so a lease costs a queue pop, not a
renderer start. Browsers are recycled gracefully after ``max_leases`` or when their process tree
grows past ``max_memory_mb``: they stop taking leases, a replacement takes over, and they are
closed when their last lease ends. The recycle at ``max_leases`` is foreseen: the replacement is
started a tenth of the leases early and waits, warm, as a standby taking no lease, so the handover
costs no cold start (the leases in flight stay on the old browser until they end, as in any drain). A browser that dies is noticed by its connection's close
callback (not by polling), removed and replaced; its leases fail with ``BrowserGone``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from cdp.browser import Browser
from cdp.confinement import ChromeUser, Confinement
from cdp.egress import EgressProxy, Gate, NetworkPolicy, Resolver
from cdp.errors import BrowserGone, CDPException, NetworkServiceRestarted, PoolClosed, ResourceLimitExceeded
from cdp.isolation import IsolationReport, attached_report
from cdp.launcher import process_cpu_seconds, process_tree, sweep_stale_profiles
from cdp.lease import Lease
from cdp.netns import BrowserNetwork, NamespaceUnavailable
from cdp.netwatch import NetworkServiceWatch
from cdp.page import Page
from config.isolation import CHROME_USER, IsolationLayer
from config.tasks import cancel_and_wait

log = logging.getLogger("browserd.pool")

SlotState = Literal["starting", "standby", "ready", "draining"]
STANDBY_SHARE = 0.1  # the share of max_leases left when a browser's successor is started as a standby
BUSY_SHARE = 0.5  # a renderer that used at least this share of a CPU between two looks is running script
GROWING = 4 * 1024 * 1024  # ... or whose resident size grew by this much


class PoolEventKind(StrEnum):
    """What a pool tells its listeners (``BrowserPool.add_listener``)."""

    lease = "lease"  # a lease was handed out, after ``wait_seconds``
    crash = "crash"  # a browser died unexpectedly
    recycle = "recycle"  # a browser was retired on purpose, for ``reason``


class RecycleReason(StrEnum):
    """Why a browser was retired: it served ``max_leases``, its process tree outgrew
    ``max_memory_mb``, or its network service died (``cdp.netwatch``)."""

    max_leases = "max_leases"
    memory = "memory"
    network_service = "network_service"


@dataclass(frozen=True)
class PoolEvent:
    kind: PoolEventKind
    wait_seconds: float = 0.0  # lease: how long it waited for a context
    reason: RecycleReason | None = None  # recycle: why


Listener = Callable[[PoolEvent], None]


@dataclass
class PoolConfig:
    """What a pool needs from ``config.Settings`` (kept separate so cdp does not import config)."""

    browsers: int = 1
    warm: int = 2
    max_leases: int = 200
    max_memory_mb: int = 4096
    health_interval: float = 5.0
    chrome_path: str | None = None
    chrome_args: list[str] = field(default_factory=list)
    cdp_urls: list[str] = field(default_factory=list)
    launch_timeout: float = 20.0
    cdp_timeout: float = 30.0
    context_memory_limit_mb: int = 1024  # 0: no per-context limit
    context_check_interval: float = 1.0
    # Set: every context goes through the egress proxy, under this rule until a job admits its own
    # (see cdp.egress). None: contexts reach the network directly (a bare pool for library use).
    egress: NetworkPolicy | None = None
    resolver: Resolver | None = None  # how the proxy resolves names; default: the system's
    # With egress: launched browsers live in their own loopback-only network namespace where the host
    # allows one (cdp.netns); False keeps them in the worker's (the fallback, on purpose).
    network_namespace: bool = True
    chrome_user: str = CHROME_USER  # the user a root worker runs Chrome as ("": none, Chrome unsandboxed)

    @classmethod
    def from_settings(cls, settings: Any) -> PoolConfig:
        browsers = settings.pool_browser_count()
        return cls(
            browsers=browsers,
            warm=math.ceil(settings.pool_warm / browsers),  # the setting is per process, this per browser
            max_leases=settings.pool_max_leases,
            max_memory_mb=settings.pool_max_memory_mb,
            health_interval=settings.pool_health_interval,
            chrome_path=settings.chrome_path,
            chrome_args=list(settings.chrome_args),
            cdp_urls=list(settings.cdp_urls),
            launch_timeout=settings.launch_timeout,
            cdp_timeout=settings.cdp_timeout,
            context_memory_limit_mb=settings.context_memory_limit_mb,
            egress=NetworkPolicy.build(settings.allow_private_networks, settings.allowed_networks),
            network_namespace=settings.browser_network_namespace,
            chrome_user=settings.chrome_user,
        )


@dataclass
class PoolStats:
    """Health numbers, read by the metrics exporter at scrape time."""

    browsers: dict[str, int]
    leases_in_use: int
    leases_served: int
    crashes: int
    recycles: dict[str, int]
    lease_wait_seconds_total: float
    warm_contexts: int
    isolation: IsolationReport | None = None


class _Slot:
    """One browser's place in the pool."""

    def __init__(self, index: int, endpoint: str | None) -> None:
        self.index = index
        self.endpoint = endpoint  # set when attaching to a running browser
        self.browser: Browser | None = None
        self.state: SlotState = "starting"
        self.served = 0
        self.active: set[Lease] = set()
        self.warm: deque[tuple[str, Page]] = deque()
        self.reserved = 0  # acquirers between choosing this slot and holding their lease
        self.retiring = False
        self.wake = asyncio.Event()
        self.refill_task: asyncio.Task[None] | None = None
        self.renderers: _RendererSample | None = None  # last look at the renderer processes
        self.network_watch: NetworkServiceWatch | None = None
        self.network_lost = False  # its network service died (cdp.netwatch)
        self.standby = False  # started ahead as a browser's successor: takes no lease until promoted
        self.promoted = False  # its predecessor drained: ready as soon as it is booted
        self.successor: _Slot | None = None  # the standby started to replace this one at max_leases


class BrowserPool:
    """``async with BrowserPool(cfg) as pool: async with pool.lease() as lease: ...``"""

    def __init__(self, config: PoolConfig | None = None) -> None:
        self.config = config or PoolConfig()
        self._slots: list[_Slot] = []
        self._next_index = 0
        self._changed = asyncio.Condition()
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._listeners: list[Listener] = []
        self._served = 0
        self._crashes = 0
        self._recycles: dict[RecycleReason, int] = {}
        self._wait_total = 0.0
        self._health: asyncio.Task[None] | None = None
        self._contexts_watch: asyncio.Task[None] | None = None
        self.egress: EgressProxy | None = None
        if self.config.egress is not None:
            self.egress = EgressProxy(default_rule=self.config.egress, resolver=self.config.resolver)
        self._gates: dict[str, Gate] = {}
        self.network: BrowserNetwork | None = None
        self.confinement: Confinement | None = None
        self._namespace_off = ""  # why the browsers share the worker's network namespace
        self._watched_boots = 0  # browsers launched whose network service is watched (cdp.netwatch)
        self._unwatched_boots = 0  # ... and those whose network service was not found

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def add_listener(self, listener: Listener) -> None:
        """``listener(event)`` for each lease, crash and recycle (``PoolEvent``)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _emit(self, event: PoolEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("pool listener failed")

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start (or attach to) every browser; raises if none can be started."""
        if not self.config.cdp_urls:
            swept = await asyncio.to_thread(sweep_stale_profiles)
            if swept:
                log.info("removed %s profile(s) left by browsers that died with their process", swept)
            await self._confine()
        endpoints: list[str | None] = list(self.config.cdp_urls) or [None] * self.config.browsers
        slots = [self._new_slot(ep) for ep in endpoints]
        results = await asyncio.gather(*(self._boot(s) for s in slots), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if len(errors) == len(slots):
            await self.close()
            raise errors[0]
        report = self.isolation()
        (log.warning if report.missing else log.info)("browser pool: %s", report.describe())
        self._health = asyncio.get_running_loop().create_task(self._health_loop(), name="pool-health")
        if self.config.context_memory_limit_mb:
            self._contexts_watch = asyncio.get_running_loop().create_task(self._context_memory_loop(),
                                                                          name="pool-context-memory")

    async def close(self) -> None:
        """Stop every browser we launched; pending acquirers get ``PoolClosed``."""
        self._closed = True
        async with self._changed:
            self._changed.notify_all()
        await cancel_and_wait([*self._tasks, self._health, self._contexts_watch], "browser pool task")
        await asyncio.gather(*(self._retire(s) for s in list(self._slots)), return_exceptions=True)
        if self.egress is not None:
            await self.egress.close()
        if self.network is not None:
            self.network.close()

    async def _confine(self) -> None:
        """Where this host allows it, a network namespace for the browsers and their gates' sockets in
        it; then the confinement every launch uses. Says at start what is missing and why."""
        cfg = self.config
        if self.egress is None:
            self._namespace_off = "the pool has no egress gate (a bare pool, browsing directly)"
        elif not cfg.network_namespace:
            self._namespace_off = "BROWSERD_BROWSER_NETWORK_NAMESPACE is off"
        else:
            user = ChromeUser.lookup(cfg.chrome_user) if cfg.chrome_user and os.geteuid() == 0 else None
            try:
                self.network = await asyncio.to_thread(BrowserNetwork.create, user)
                self.egress.listen = self.network.listen
            except NamespaceUnavailable as exc:
                self._namespace_off = exc.reason
        self.confinement = await asyncio.to_thread(Confinement.for_host, cfg.chrome_user,
                                                   chrome_args=tuple(cfg.chrome_args), network=self.network)

    def isolation(self) -> IsolationReport:
        """The layers this pool's browsers have (``cdp.isolation``)."""
        if self.config.cdp_urls:
            return attached_report()
        confinement = self.confinement or Confinement(sandbox=False, off={IsolationLayer.sandbox: "not started"})
        watched = self._watched_boots > 0 and self._unwatched_boots == 0
        active = {
            IsolationLayer.namespace: self.network is not None,
            IsolationLayer.sandbox: confinement.sandbox,
            IsolationLayer.separate_user: confinement.user is not None,
            IsolationLayer.webrtc_policy: True,
            IsolationLayer.network_service_watch: watched,
            IsolationLayer.minimal_environment: True,
        }
        off = dict(confinement.off)
        if self.network is None:
            off[IsolationLayer.namespace] = self._namespace_off
        if not watched:
            off[IsolationLayer.network_service_watch] = (
                f"{self._unwatched_boots} browser(s) ran without their network service found to watch"
                if self._unwatched_boots else "no browser has started yet")
        return IsolationReport(active, off)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _new_slot(self, endpoint: str | None) -> _Slot:
        slot = _Slot(self._next_index, endpoint)
        self._next_index += 1
        self._slots.append(slot)
        return slot

    async def _boot(self, slot: _Slot) -> None:
        cfg = self.config
        try:
            if slot.endpoint:
                browser = await Browser.connect(slot.endpoint, cdp_timeout=cfg.cdp_timeout)
            else:
                browser = await Browser.launch(
                    cfg.chrome_path, extra_args=cfg.chrome_args, timeout=cfg.launch_timeout, cdp_timeout=cfg.cdp_timeout,
                    confinement=self.confinement,
                )
        except BaseException:
            self._slots.remove(slot)
            raise
        if self._closed:
            await browser.close()
            return
        if browser.pid is not None:
            slot.network_watch = await NetworkServiceWatch.start(browser.pid, lambda s=slot: self._network_lost(s))
            if slot.network_watch is not None:
                self._watched_boots += 1
            elif browser.alive and not slot.network_lost:
                self._unwatched_boots += 1
                log.warning("browser %s: its network service was not found; a restart of it would go unnoticed",
                            slot.index)
        if self._closed or not browser.alive or slot.network_lost:
            await browser.close()
            if slot.network_lost and not self._closed:  # lost before its first lease: start another
                self._slots.remove(slot)
                if slot.standby and not slot.promoted:  # its predecessor starts one when it drains
                    self._drop_standby(slot)
                else:
                    self._replace(slot)
            return
        slot.browser = browser
        slot.state = "standby" if slot.standby and not slot.promoted else "ready"
        browser.on_gone(lambda err, s=slot: self._on_gone(s, err))
        slot.refill_task = asyncio.get_running_loop().create_task(self._refill(slot), name=f"pool-refill-{slot.index}")
        await self._notify()
        log.info("browser %s %s (pid=%s)", slot.index, slot.state, browser.pid)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # --- leasing ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lease(self, timeout: float = 60.0) -> AsyncIterator[Lease]:
        lease = await self.acquire(timeout)
        try:
            yield lease
        finally:
            await self.release(lease)

    async def acquire(self, timeout: float = 60.0) -> Lease:
        """A fresh isolated context with one blank page; waits while no browser is ready."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            slot = await self._ready_slot(deadline)
            try:
                lease = await self._take(slot)
                break
            except CDPException:
                if not (slot.browser and slot.browser.alive) or slot.state != "ready":
                    continue  # the browser died (or lost its network service) under us; the next ready one will do
                raise
            finally:
                slot.reserved -= 1
        lease.wait_seconds = time.monotonic() - started
        self._wait_total += lease.wait_seconds
        self._emit(PoolEvent(PoolEventKind.lease, wait_seconds=lease.wait_seconds))
        return lease

    async def _ready_slot(self, deadline: float) -> _Slot:
        async with self._changed:
            while True:
                if self._closed:
                    raise PoolClosed("the browser pool is closed")
                ready = [s for s in self._slots if s.state == "ready" and s.browser and s.browser.alive]
                if ready:
                    slot = min(ready, key=lambda s: (len(s.active) + s.reserved - len(s.warm), s.index))
                    slot.reserved += 1  # count us now, so concurrent acquirers spread out
                    return slot
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no browser became ready in time for a lease")
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await self._changed.wait()

    async def _take(self, slot: _Slot) -> Lease:
        browser = slot.browser
        assert browser is not None
        context_id, page = None, None
        if slot.state != "ready":
            raise BrowserGone(f"browser {slot.index} is draining")
        while slot.warm:
            context_id, page = slot.warm.popleft()
            if page.session.failure is None:
                break
            self._spawn(self._dispose(browser, context_id), "pool-dispose")
            context_id, page = None, None
        if page is None:
            context_id, page = await self._open_context(browser)
        assert context_id is not None
        lease = Lease(browser, context_id, page, browser_index=slot.index, egress=self._gates.get(context_id))
        slot.active.add(lease)
        slot.served += 1
        self._served += 1
        slot.wake.set()
        if slot.served >= self.config.max_leases and slot.state == "ready":
            self._drain(slot, RecycleReason.max_leases)
        elif slot.served >= self._standby_at() and slot.successor is None and not slot.endpoint and not self._closed:
            slot.successor = self._new_slot(None)
            slot.successor.standby = True
            self._spawn(self._boot_with_retry(slot.successor), "pool-boot-standby")
        return lease

    def _standby_at(self) -> int:
        """Leases served after which a browser's successor starts (a browser we launched, not attached)."""
        leases = self.config.max_leases
        return leases - max(1, int(leases * STANDBY_SHARE))

    async def _open_context(self, browser: Browser) -> tuple[str, Page]:
        gate = await self.egress.open_gate() if self.egress is not None else None
        try:
            context_id = await browser.new_context(gate.proxy_server if gate else None)
        except BaseException:
            if gate is not None:
                await gate.close()
            raise
        if gate is not None:
            self._gates[context_id] = gate
        try:
            return context_id, await browser.new_page(context_id)
        except BaseException:
            await self._dispose(browser, context_id)
            raise

    async def _dispose(self, browser: Browser, context_id: str) -> None:
        """Dispose a context, then close its gate (cutting whatever it still had open)."""
        try:
            await browser.dispose_context(context_id)
        finally:
            gate = self._gates.pop(context_id, None)
            if gate is not None:
                await gate.close()

    async def release(self, lease: Lease) -> None:
        """End a lease: its context (cookies, storage, cache, tabs) is disposed."""
        if lease.released:
            return
        lease.released = True
        slot = next((s for s in self._slots if lease in s.active), None)
        if slot is not None:
            slot.active.discard(lease)
            if slot.state == "draining" and not slot.active:
                self._spawn(self._retire(slot), "pool-retire")
        self._spawn(self._end(lease), "pool-dispose")

    async def _end(self, lease: Lease) -> None:
        try:
            await lease._dispose()
        finally:
            gate = self._gates.pop(lease.context_id, None)
            if gate is not None:
                await gate.close()

    async def _refill(self, slot: _Slot) -> None:
        """Keep ``warm`` ready contexts in this browser, opened concurrently; woken after every lease."""
        browser = slot.browser
        assert browser is not None
        while slot.state in ("ready", "standby") and not self._closed:
            missing = self.config.warm - len(slot.warm)
            if missing <= 0:
                slot.wake.clear()
                await slot.wake.wait()
                continue
            opened = await asyncio.gather(*(self._open_context(browser) for _ in range(missing)), return_exceptions=True)
            for result in opened:
                if isinstance(result, BaseException):
                    if not isinstance(result, CDPException):
                        raise result
                    if browser.alive:
                        log.warning("warm context failed on browser %s: %s", slot.index, result)
                elif slot.state in ("ready", "standby"):
                    slot.warm.append(result)
                else:
                    self._spawn(self._dispose(browser, result[0]), "pool-dispose")
            if not browser.alive:
                return
            if any(isinstance(r, BaseException) for r in opened):
                await asyncio.sleep(0.5)
            await self._notify()

    # --- recycling and faults --------------------------------------------------------------

    def _drain(self, slot: _Slot, reason: RecycleReason) -> None:
        """Stop giving this browser leases; replace it now and close it when its leases end."""
        if slot.state != "ready":
            return
        slot.state = "draining"
        self._recycles[reason] = self._recycles.get(reason, 0) + 1
        self._emit(PoolEvent(PoolEventKind.recycle, reason=reason))
        log.info("recycling browser %s (%s)", slot.index, reason)
        slot.wake.set()
        self._replace(slot)
        if not slot.active:
            self._spawn(self._retire(slot), "pool-retire")

    def _replace(self, old: _Slot) -> None:
        """Its standby takes over (at once if booted, else as soon as it is), or a new browser starts."""
        if self._closed:
            return
        successor, old.successor = old.successor, None
        if successor is not None and not successor.retiring:
            successor.promoted = True
            if successor.state == "standby":
                successor.state = "ready"
                successor.wake.set()
                self._spawn(self._notify(), "pool-notify")
                log.info("browser %s takes over from browser %s", successor.index, old.index)
            return
        self._spawn(self._boot_with_retry(self._new_slot(old.endpoint)), "pool-boot")

    def _drop_standby(self, slot: _Slot) -> None:
        """A standby that died or lost its network: its predecessor starts another when it drains."""
        for other in self._slots:
            if other.successor is slot:
                other.successor = None
        slot.retiring = True
        if slot in self._slots:
            self._slots.remove(slot)
        self._spawn(self._close_browser(slot), "pool-close-standby")

    async def _boot_with_retry(self, slot: _Slot) -> None:
        for attempt in range(1, 1_000_000):
            try:
                await self._boot(slot)
                return
            except CDPException as exc:
                log.error("browser start failed (attempt %s): %s", attempt, exc)
                if self._closed:
                    return
                await asyncio.sleep(min(30.0, 0.5 * 2**attempt))
                self._slots.append(slot)

    def _network_lost(self, slot: _Slot) -> None:
        """The browser's network service died (``cdp.netwatch``): no lease may go on in it, warm or running."""
        watch = slot.network_watch
        pid = watch.pid if watch else 0
        slot.network_lost = True
        if (slot.retiring or self._closed or slot.browser is None or not slot.browser.alive
                or slot.browser.process_exited):
            # A browser that died whole is the crash path's (``_on_gone``), which its pipe's end brings:
            # when Chrome is killed its network service exits too, often before that pipe is read.
            return
        if slot.state == "standby":
            log.warning("standby browser %s: its network service (pid %s) died; dropped", slot.index, pid)
            self._drop_standby(slot)
            return
        log.warning("browser %s: its network service (pid %s) died; recycling the browser", slot.index, pid)
        self._drain(slot, RecycleReason.network_service)
        browser = slot.browser
        for context_id, _ in list(slot.warm):
            if browser is not None:
                self._spawn(self._dispose(browser, context_id), "pool-dispose")
        slot.warm.clear()
        for lease in list(slot.active):
            self._spawn(lease.stop(NetworkServiceRestarted(pid)), "pool-stop-lease")

    def _on_gone(self, slot: _Slot, error: BrowserGone) -> None:
        if slot.retiring or self._closed:
            return
        if slot.state == "standby":
            log.warning("standby browser %s gone: %s", slot.index, error.reason)
            self._drop_standby(slot)
            return
        self._crashes += 1
        self._emit(PoolEvent(PoolEventKind.crash))
        log.warning("browser %s gone: %s", slot.index, error.reason)
        was_draining = slot.state == "draining"
        slot.state = "draining"
        slot.retiring = True
        if slot in self._slots:
            self._slots.remove(slot)
        slot.wake.set()
        if not was_draining:
            self._replace(slot)
        self._spawn(self._close_browser(slot), "pool-close-dead")

    async def _retire(self, slot: _Slot) -> None:
        slot.retiring = True
        if slot in self._slots:
            self._slots.remove(slot)
        await self._close_browser(slot)

    async def _close_browser(self, slot: _Slot) -> None:
        slot.state = "draining"
        slot.wake.set()
        if slot.network_watch is not None:
            slot.network_watch.close()
        if slot.refill_task:
            await cancel_and_wait(slot.refill_task, "browser refill")
        warm = [context_id for context_id, _ in slot.warm]
        slot.warm.clear()
        if slot.browser is not None:
            await slot.browser.close()
        for context_id in warm:
            gate = self._gates.pop(context_id, None)
            if gate is not None:
                await gate.close()

    async def _health_loop(self) -> None:
        limit = self.config.max_memory_mb * 1024 * 1024
        while not self._closed:
            await asyncio.sleep(self.config.health_interval)
            for slot in [s for s in self._slots if s.state == "ready" and s.browser]:
                used = await asyncio.to_thread(slot.browser.memory_bytes, limit)  # type: ignore[union-attr]
                if used is not None and used > limit:
                    self._drain(slot, RecycleReason.memory)

    # --- per-context memory ----------------------------------------------------------------

    async def _context_memory_loop(self) -> None:
        """Stop a lease whose pages pass ``context_memory_limit_mb``, leaving the browser and its other leases be.

        Two measures: the pages' own heap (V8 + DOM + array buffers, ``Runtime.getHeapUsage``),
        cheap and exact per lease; and, for a page too busy allocating to answer, the resident
        size of the browser's renderer processes (one per context): a renderer over the limit
        and growing or busy between two looks is charged to the one lease that did not answer, if
        exactly one did not (CDP names no renderer's pid, so this is how it is found).
        """
        limit = self.config.context_memory_limit_mb * 1024 * 1024
        while not self._closed:
            await asyncio.sleep(self.config.context_check_interval)
            for slot in [s for s in list(self._slots) if s.browser and s.browser.alive and s.active]:
                try:
                    await self._check_contexts(slot, limit)
                except CDPException as exc:
                    log.debug("context memory check of browser %s failed: %s", slot.index, exc)

    async def _check_contexts(self, slot: _Slot, limit: int) -> None:
        assert slot.browser is not None
        leases = [lease for lease in slot.active if lease.stopped is None and not lease.released]
        timeout = max(0.5, self.config.context_check_interval)
        used = await asyncio.gather(*(lease.heap_bytes(timeout) for lease in leases))
        silent = []
        for lease, heap in zip(leases, used, strict=True):
            if heap is None:
                silent.append(lease)
            elif heap > limit:
                await self._stop(lease, ResourceLimitExceeded(lease.context_id, heap, limit, measure="page heap"))
        if slot.browser.pid is None or len(silent) != 1:
            slot.renderers = None
            return
        # Charged to the silent lease: a renderer over the limit that was also active since the last
        # look (growing, or running script: a page that does not answer is), so an idle big
        # renderer of a lease that answered is never taken for it.
        earlier, slot.renderers = slot.renderers, await asyncio.to_thread(_renderer_usage, slot.browser.pid)
        if earlier is None:
            return
        elapsed = slot.renderers.at - earlier.at
        busy = {}
        for pid, (rss, cpu) in slot.renderers.usage.items():
            if rss > limit and pid in earlier.usage:
                was_rss, was_cpu = earlier.usage[pid]
                if rss - was_rss >= GROWING or cpu - was_cpu >= BUSY_SHARE * elapsed:
                    busy[pid] = rss
        if busy:
            pid, rss = max(busy.items(), key=lambda item: item[1])
            lease = silent[0]
            await self._stop(lease, ResourceLimitExceeded(lease.context_id, rss, limit, measure="renderer resident size"),
                             renderer_pid=pid)

    async def _stop(self, lease: Lease, error: ResourceLimitExceeded, renderer_pid: int | None = None) -> None:
        if renderer_pid is not None:
            # A renderer busy allocating may not even close its tabs in time; it serves this context only.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(renderer_pid, signal.SIGKILL)
        await lease.stop(error)

    # --- numbers ---------------------------------------------------------------------------

    def stats(self) -> PoolStats:
        states = {"starting": 0, "standby": 0, "ready": 0, "draining": 0}
        for slot in self._slots:
            states[slot.state] += 1
        return PoolStats(
            browsers=states,
            leases_in_use=sum(len(s.active) for s in self._slots),
            leases_served=self._served,
            crashes=self._crashes,
            recycles=dict(self._recycles),
            lease_wait_seconds_total=self._wait_total,
            warm_contexts=sum(len(s.warm) for s in self._slots),
            isolation=self.isolation(),
        )

    def browser_pids(self) -> list[int]:
        return [s.browser.pid for s in self._slots if s.browser and s.browser.pid]

    def memory_bytes(self) -> int:
        """Memory (PSS) of this pool's browsers and their renderers (browsers it attached to count 0)."""
        return sum(s.browser.memory_bytes() or 0 for s in self._slots if s.browser)


@dataclass
class _RendererSample:
    """Resident bytes and CPU seconds of each renderer of a browser, at one moment."""

    at: float
    usage: dict[int, tuple[int, float]]


def _renderer_usage(root_pid: int) -> _RendererSample:
    """RSS from ``statm`` (cheap, unlike PSS: it also counts the ~100 MiB of code a renderer shares
    with its siblings, small beside a per-context limit) and user+system CPU from ``stat``."""
    page = os.sysconf("SC_PAGE_SIZE")
    usage = {}
    for pid in process_tree(root_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"--type=renderer" not in fh.read():
                    continue
            with open(f"/proc/{pid}/statm", "rb") as fh:
                rss = int(fh.read().split()[1]) * page
            usage[pid] = (rss, process_cpu_seconds(pid))
        except (OSError, IndexError, ValueError):
            continue
    return _RendererSample(time.monotonic(), usage)
