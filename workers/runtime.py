"""A worker process's shared machinery: one event loop in a background thread, one browser pool.

Celery runs each task in one of its ``threads`` pool's threads; the task hands its job to this
loop (``asyncio.run_coroutine_threadsafe``) and waits. So a process with concurrency 16 runs 16
jobs concurrently on one loop, each in its own lease of the same pool, and browsers start once
per process instead of once per job.

Chrome is launched from the loop thread with PDEATHSIG (see ``cdp.launcher``), so even a worker
killed with SIGKILL takes its browsers with it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import socket
import threading
import uuid
from typing import Any

from celery.worker import state as celery_state

import cdp
from config import ConfigError, Settings, bind, get_settings
from config.isolation import HEARTBEAT_FIELD
from workers.agent import LLMProviderError, provider_class
from workers.instrument import PrometheusTelemetry, instrument_pool, serve_metrics
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.metrics import observe_abandoned, observe_worker_slots
from workers.jobs.lifecycle.cancelling import cancel_job
from workers.jobs.model.status import JobStatus
from workers.jobs.queue.app import default_node_name
from workers.jobs.reconcile import Reconciler
from workers.jobs.tenants.dispatch import Dispatcher
from workers.jobs.sessions.store import SessionStore
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.pipeline import (
    FEATURES,
    Abandoned,
    Delivered,
    Pipeline,
    Services,
    StoreRecords,
)
from workers.session_host import SessionHost

log = logging.getLogger("browserd.worker")

TICK_SECONDS = 0.25  # cancel flags are read this often
HEARTBEAT_SECONDS = 1.0  # job and worker heartbeats are written this often
START_TIMEOUT = 120.0
LOOP_LAG_WARNING = 1.0  # seconds a tick may come late before the worker says its loop is starved


def stale_after(settings: Settings) -> float:
    """A running job without a heartbeat for this long is presumed abandoned by a dead worker."""
    return max(3 * HEARTBEAT_SECONDS, min(10.0, settings.visibility_timeout / 3))


def check_provider(settings: Settings) -> None:
    """Fail at start, naming the setting, when BROWSERD_LLM_PROVIDER does not load (not at the first job)."""
    try:
        provider_class(settings.llm_provider)
    except LLMProviderError as exc:
        raise ConfigError(str(exc)) from exc


def check_artifacts(settings: Settings) -> None:
    """Fail at start, naming BROWSERD_ARTIFACTS_URL, when the artifact store cannot be written: a worker
    that went on would lose every job's screenshots, pages and downloads, saying so only in its log."""
    ArtifactStore.from_settings(settings).check_writable(settings.artifacts_url)


class WorkerRuntime:
    """``start()`` once per worker process, ``run(job_id)`` from any task thread, ``stop()`` at exit.

    One name for a worker (issue 25, item 7): ``node``, the Celery node name it serves
    (``browserd worker --name``, ``w1@host``), is what Flower, ``celery inspect``, celery-exporter and
    Prometheus (``browserd_worker_up{worker}``, ``browserd_worker_info{worker}``) show, so it is also
    what a job's record, its events, sessions, the console and the logs say (``worker``). Celery's
    name wins because operators meet it first, in every Celery tool, and because it is the one they
    choose (``--name``). ``worker_id`` is only the key of this runtime's heartbeat in Redis, unique
    per process (each child of a prefork node has its own), so two processes never overwrite
    each other's heartbeat; it is never shown.
    """

    def __init__(self, settings: Settings, node: str | None = None) -> None:
        self.settings = settings
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.node = node or default_node_name()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="browserd-loop", daemon=True)
        self.store: JobStore | None = None
        self.pool: cdp.BrowserPool | None = None
        self.pipeline: Pipeline | None = None
        self.sessions: SessionStore | None = None
        self.stopping = False  # a warm shutdown began: open sessions end now instead of when idle
        self._ticker: asyncio.Task[None] | None = None
        self._reconcile: asyncio.Task[None] | None = None
        self._metrics: Any = None
        self._unmeter: Any = None
        self.task_ids: dict[str, str] = {}  # job id -> the Celery task id delivering it here, until revoked

    # --- lifecycle (called from Celery's threads) ------------------------------------------

    def start(self) -> None:
        check_provider(self.settings)
        check_artifacts(self.settings)
        self._metrics = serve_metrics(self.settings, self.node)
        self._thread.start()
        try:
            self._call(self._astart(), START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        log.info("worker %s ready: concurrency %s", self.node, self.settings.worker_concurrency)

    def stop(self) -> None:
        if self._thread.is_alive():
            try:
                self._call(self._astop(), 30.0)
            except Exception:
                log.exception("worker shutdown failed")
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if self._metrics is not None:  # last, so the final numbers can still be scraped during shutdown
            self._metrics.shutdown()
            self._metrics.server_close()
            self._metrics = None

    def run(self, job_id: str, hard: float, task_id: str | None = None) -> Delivered:
        """Run one delivery to its end or its hard limit (seconds); ``task_id`` is the Celery task
        delivering it, watched for a revoke."""
        assert self.pipeline is not None, "WorkerRuntime.start() was not called"
        if task_id:
            self.task_ids[job_id] = task_id
        future = asyncio.run_coroutine_threadsafe(self.pipeline.deliver(job_id), self.loop)
        try:
            return future.result(timeout=hard)
        except concurrent.futures.TimeoutError:
            future.cancel()
            with bind(job_id=job_id):
                log.error("job %s passed its hard time limit (%gs); abandoned", job_id, hard)
            observe_abandoned()
            self._call(self.pipeline.abandon(job_id, hard), 10.0)
            return Delivered(Abandoned.hard_limit, JobStatus.failed)
        finally:
            self.task_ids.pop(job_id, None)
            self._release_parked()

    def _release_parked(self) -> None:
        """A slot frees: the tenants' parked jobs whose turn came go to the broker (fair dispatch)."""
        try:
            self._call(self._release(), 10.0)
        except Exception as exc:  # the heartbeat tick and the reconciler release them later
            log.warning("fair dispatch after a delivery failed: %s: %s", type(exc).__name__, exc)

    async def _release(self) -> None:
        assert self.store is not None
        await Dispatcher(self.store, self.settings).release()

    def standing(self, job_id: str) -> JobStatus | None:
        """The job's state in the store now (None: its record is gone)."""
        assert self.store is not None, "WorkerRuntime.start() was not called"
        (job,) = self._call(self.store.liveness([job_id]), 10.0)
        return job.state if job is not None else None

    def cancel(self, job_id: str, task_id: str | None) -> None:
        """Cancel ``job_id`` as ``browserd cancel`` does, because Celery revoked its task."""
        self.task_ids.pop(job_id, None)
        self._call(self._cancel_revoked(job_id, task_id), 10.0)

    def serve_session(self, session_id: str, hard: float) -> str:
        """Serve one interactive session to its end (or ``hard`` seconds); returns why it ended."""
        assert self.sessions is not None and self.pool is not None and self.pipeline is not None, \
            "WorkerRuntime.start() was not called"
        host = SessionHost(self.sessions, self.pool, self.settings, self.pipeline.services.agent, self.node,
                           session_id, stopping=lambda: self.stopping)
        future = asyncio.run_coroutine_threadsafe(host.serve(), self.loop)
        try:
            return future.result(timeout=hard)
        except concurrent.futures.TimeoutError:
            future.cancel()  # the host's own cleanup releases the lease and drops the record
            log.error("session %s passed its hard time limit (%gs); stopped", session_id, hard)
            return "hard_limit"

    def _call(self, coro: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    # --- on the loop -----------------------------------------------------------------------

    async def _astart(self) -> None:
        url = self.settings.redis_url
        assert url, "BROWSERD_REDIS_URL is required"
        self.store = JobStore(connect(url), result_ttl=self.settings.result_ttl)
        self.pool = cdp.BrowserPool(cdp.PoolConfig.from_settings(self.settings))
        await self.pool.start()
        self._unmeter = instrument_pool(self.pool)
        records = StoreRecords(self.store)
        services = Services(settings=self.settings, records=records, redis=self.store.redis, store=self.store,
                            keys=self.store.keys, telemetry=PrometheusTelemetry(), worker_id=self.node,
                            stale_after=stale_after(self.settings))
        self.pipeline = Pipeline(records, self.pool, services, FEATURES)
        self.sessions = SessionStore(self.store.redis, self.store.keys)
        await self._beat()
        loop = asyncio.get_running_loop()
        self._ticker = loop.create_task(self._tick_forever(), name="worker-ticker")
        self._reconcile = loop.create_task(self._reconcile_forever(), name="worker-reconcile")

    async def _reconcile_forever(self) -> None:
        """The reconciler, from every worker: a pass at start (a worker starting is often one
        restarting after a crash: look for what it left), then the fleet's one pass per interval,
        taken by whichever worker looks first (``Reconciler.run_if_due``). So a job abandoned at
        its hard limit, or left by a dead worker, is recovered without ``browserd beat``."""
        assert self.store is not None
        reconciler = Reconciler(self.store, self.settings)
        look = reconciler.run_once
        while True:
            try:
                await look()
            except Exception as exc:  # Redis away: the next look tries again
                log.warning("reconciler pass failed: %s: %s", type(exc).__name__, exc)
            look = reconciler.run_if_due
            await asyncio.sleep(self.settings.reconcile_interval / 2)

    async def _astop(self) -> None:
        for task in (self._ticker, self._reconcile):
            if task:
                task.cancel()
        if self._unmeter:
            self._unmeter()
        if self.pipeline:
            await self.pipeline.stop()
        if self.pool:
            await self.pool.close()
        if self.store:
            await self.store.worker_gone(self.worker_id)
            await self.store.redis.aclose()

    async def _tick_forever(self) -> None:
        ticks_per_beat = max(1, round(HEARTBEAT_SECONDS / TICK_SECONDS))
        count = 0
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(TICK_SECONDS)
            late = loop.time() - before - TICK_SECONDS
            if late > LOOP_LAG_WARNING:
                log.warning("event loop was blocked for %.2fs: CPU-bound work is delaying this worker's %d jobs",
                            late, len(self.pipeline.runs) if self.pipeline else 0)
            count += 1
            try:
                await self._revoked_while_running()
                await self.pipeline.check_flags()  # type: ignore[union-attr]
                if count % ticks_per_beat == 0:
                    await self._beat()
                    await self._release()
            except Exception as exc:  # Redis hiccups must not stop the heartbeat for good
                log.warning("worker heartbeat failed: %s", exc)

    async def _revoked_while_running(self) -> None:
        """A revoke without terminate only adds the task id to this worker's revoked set (Celery
        never stops a running task for it): look there for the running jobs' tasks."""
        for job_id, task_id in list(self.task_ids.items()):
            if task_id in celery_state.revoked:
                self.task_ids.pop(job_id, None)
                await self._cancel_revoked(job_id, task_id)

    async def _cancel_revoked(self, job_id: str, task_id: str | None) -> None:
        assert self.store is not None
        await cancel_as_revoked(self.store, job_id, task_id)

    async def _beat(self) -> None:
        assert self.store is not None and self.pipeline is not None
        await self.pipeline.heartbeat()
        observe_worker_slots(self.settings.worker_concurrency, len(self.pipeline.runs))
        info: dict[str, object] = {
            "node": self.node,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "concurrency": self.settings.worker_concurrency,
            "running": len(self.pipeline.runs),
            "metrics_port": self._metrics.server_port if self._metrics else "",
            HEARTBEAT_FIELD: self.pool.isolation().encode() if self.pool else "",
        }
        for feature in self.pipeline.features:
            info.update(feature.report())
        await self.store.worker_heartbeat(self.worker_id, info, ttl=HEARTBEAT_SECONDS * 10)


_runtime: WorkerRuntime | None = None
_node: str | None = None
_lock = threading.Lock()


def name_node(node: str) -> None:
    """The Celery node this process serves, told by Celery's ``worker_init`` before the runtime starts
    (and before a prefork pool forks: its children inherit the name)."""
    global _node
    _node = node


def get_runtime(settings: Settings) -> WorkerRuntime:
    """This process's runtime, started on first use."""
    global _runtime
    with _lock:
        if _runtime is None:
            runtime = WorkerRuntime(settings, _node)
            runtime.start()
            _runtime = runtime
        return _runtime


def end_sessions() -> None:
    """A warm shutdown began: this process's sessions close at their next look (within a second),
    so the shutdown does not wait out their idle timeouts."""
    if _runtime is not None:
        _runtime.stopping = True


def stop_runtime() -> None:
    global _runtime
    with _lock:
        runtime, _runtime = _runtime, None
    if runtime is not None:
        runtime.stop()




async def cancel_as_revoked(store: JobStore, job_id: str, task_id: str | None) -> None:
    """The job's cancel, as ``browserd cancel`` records it, for a revoke of its Celery task."""
    done = await cancel_job(store, job_id)
    log.info("job %s: its Celery task %s was revoked: cancel %s", job_id, task_id, done.outcome)


def cancel_revoked(job_id: str, task_id: str | None) -> None:
    """Celery revoked the task of ``job_id``: cancel the job, on this process's runtime when it has
    one, else (the prefork pool's parent process) over a connection of its own."""
    if _runtime is not None:
        _runtime.cancel(job_id, task_id)
        return
    settings = get_settings()

    async def cancel_here() -> None:
        store = JobStore(connect(settings.redis_url or ""), result_ttl=settings.result_ttl)
        try:
            await cancel_as_revoked(store, job_id, task_id)
        finally:
            await store.redis.aclose()

    asyncio.run(cancel_here())
