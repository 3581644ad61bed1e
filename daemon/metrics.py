"""browserd's Prometheus metrics: what the workers observe, and what the daemon reads from Redis.

Two kinds of numbers, exported by different processes so that no series is counted twice:

* Event metrics (counters and histograms: jobs finished, steps, LLM calls, leases, crashes) live
  in the process where the event happens, in prometheus-client's default registry. A worker
  serves them on ``BROWSERD_METRICS_PORT`` (``start_worker_metrics_server``); the daemon's
  ``/metrics`` includes its own (e.g. jobs cancelled while still queued). Dashboards ``sum()``
  them over instances.
* State gauges (jobs by state, queue depth, live workers) are read from Redis when Prometheus
  scrapes (``RedisCollector``), and only the daemon's ``/metrics`` (``MetricsApp``) serves them:
  every worker reporting the same queue depth would multiply it in every ``sum()``.

Labels are bounded: states and failure categories are enums, recycle reasons and LLM outcomes are
fixed lists, and model names (which a job may override) are capped at ``MODEL_LABELS_MAX``
distinct values, later ones reported as ``other``. No job id or URL is ever a label.

``browserd_jobs`` (gauge) and ``browserd_jobs_total`` (counter) are both required names; in the
OpenMetrics format they would be one family name twice, so ``MetricsApp`` always answers in the
Prometheus text format 0.0.4, which Prometheus accepts from any target.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import redis
from kombu.transport.redis import PRIORITY_STEPS, Channel
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cdp import BrowserPool, PoolStats
from daemon.keys import Keys
from workers.models import FailureCategory, JobStatus, Priority, StepRecord

log = logging.getLogger("browserd.metrics")

# ``*_created`` series would double every counter and histogram for no use on our dashboards
# (and ``browserd_jobs_created`` would read as a job count). Process-wide, on purpose.
disable_created_metrics()

QUEUES = tuple(p.value for p in Priority)  # one Celery queue per priority (workers.tasks.send_job)
POOL_STATES = ("starting", "ready", "draining")
RECYCLE_REASONS = ("max_leases", "memory")
LLM_OUTCOMES = ("ok", "error", "timeout", "rate_limited", "auth", "bad_request", "cancelled")
MODEL_LABELS_MAX = 20
WORKER_FRESH_SECONDS = 10.0  # a worker heartbeats every second; its record lives 10 s (workers.runtime)
NO_CATEGORY = "none"
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"  # what generate_latest writes

# --- buckets (seconds unless named otherwise) ---------------------------------------------

FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
LLM = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
JOB = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
WAIT = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
ELEMENTS = (0, 10, 25, 50, 100, 200, 400, 800, 1600, 3200)

# --- event metrics (default registry) ------------------------------------------------------

JOBS_TOTAL = Counter("browserd_jobs", "Jobs finished, by final state and failure category.", ["state", "category"])
JOB_DURATION = Histogram("browserd_job_duration_seconds", "Run time of a finished job's last attempt.", buckets=JOB)
QUEUE_WAIT = Histogram("browserd_job_queue_wait_seconds", "Time from enqueue to a worker starting the job.", buckets=WAIT)
STEPS = Counter("browserd_agent_steps", "Agent (or script) steps run.")
STEP_SECONDS = Histogram("browserd_step_duration_seconds", "Time spent in each phase of a step.", ["phase"], buckets=FAST)
LLM_REQUESTS = Counter("browserd_llm_requests", "LLM requests, by model and outcome.", ["model", "outcome"])
LLM_TOKENS = Counter("browserd_llm_tokens", "LLM tokens, by model and direction (input|output).", ["model", "direction"])
LLM_LATENCY = Histogram("browserd_llm_latency_seconds", "Latency of one LLM request.", ["model"], buckets=LLM)
LEASE_WAIT = Histogram("browserd_pool_lease_wait_seconds", "Time a job waited for a browser context.", buckets=FAST)
CRASHES = Counter("browserd_browser_crashes", "Browsers that died unexpectedly.")
RECYCLES = Counter("browserd_browser_recycles", "Browsers retired on purpose, by reason.", ["reason"])
DOM_CAPTURE = Histogram("browserd_dom_capture_seconds", "Time of one DOM capture (all frames).", buckets=FAST)
DOM_ELEMENTS = Histogram("browserd_dom_elements", "Interactive elements offered by one DOM capture.", buckets=ELEMENTS)
EVENT_METRICS = (JOBS_TOTAL, JOB_DURATION, QUEUE_WAIT, STEPS, STEP_SECONDS, LLM_REQUESTS, LLM_TOKENS, LLM_LATENCY,
                 LEASE_WAIT, CRASHES, RECYCLES, DOM_CAPTURE, DOM_ELEMENTS)


def _init_series() -> None:
    """Create every bounded series at zero, so ``rate()`` and ratios work from the first event."""
    for state, category in [(JobStatus.succeeded, None), (JobStatus.cancelled, None)] + [
        (JobStatus.failed, c) for c in FailureCategory
    ]:
        JOBS_TOTAL.labels(state.value, category.value if category else NO_CATEGORY)
    for phase in ("dom", "llm", "action"):
        STEP_SECONDS.labels(phase)
    for reason in RECYCLE_REASONS:
        RECYCLES.labels(reason)


_init_series()


class _BoundedLabel:
    """Passes the first ``limit`` distinct values of a label through; reports later ones as ``other``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, value: str) -> str:
        with self.lock:
            if value in self.seen or len(self.seen) < self.limit:
                self.seen.add(value)
                return value
        return "other"


_model_label = _BoundedLabel(MODEL_LABELS_MAX)


def _observe(histogram: Histogram, value: float | None) -> None:
    if value is not None and value >= 0:
        histogram.observe(value)


def _gauge(name: str, doc: str, label: str | None = None, values: dict[str, float] | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label] if label else None)
    for key, value in (values or {}).items():
        family.add_metric([key], value)
    return family


# --- what the other layers call ------------------------------------------------------------


def observe_job_finished(status: JobStatus | str, category: FailureCategory | str | None = None,
                         duration: float | None = None, queue_wait: float | None = None) -> None:
    """Once per job that reached a final state (call it only where the final transition won)."""
    state = JobStatus(status)
    if not state.finished:
        raise ValueError(f"{state.value!r} is not a final job state")
    JOBS_TOTAL.labels(state.value, FailureCategory(category).value if category else NO_CATEGORY).inc()
    _observe(JOB_DURATION, duration)
    _observe(QUEUE_WAIT, queue_wait)


def observe_step(step: StepRecord) -> None:
    """After each step; phases that took no time (a script step asks no LLM) are not observed."""
    STEPS.inc()
    for phase, seconds in (("dom", step.dom_seconds), ("llm", step.llm_seconds), ("action", step.action_seconds)):
        if seconds > 0:
            STEP_SECONDS.labels(phase).observe(seconds)


def observe_llm_call(model: str, outcome: str, seconds: float, tokens_in: int = 0, tokens_out: int = 0) -> None:
    """Once per LLM request (each retry is a request); ``outcome`` is one of ``LLM_OUTCOMES``."""
    model = _model_label(model or "unknown")
    LLM_REQUESTS.labels(model, outcome if outcome in LLM_OUTCOMES else "error").inc()
    _observe(LLM_LATENCY.labels(model), seconds)
    for direction, tokens in (("input", tokens_in), ("output", tokens_out)):
        if tokens > 0:
            LLM_TOKENS.labels(model, direction).inc(tokens)


def observe_dom_capture(seconds: float, elements: int) -> None:
    """Once per ``dom.capture``."""
    _observe(DOM_CAPTURE, seconds)
    _observe(DOM_ELEMENTS, elements)


# --- the browser pool ----------------------------------------------------------------------


class PoolCollector(Collector):
    """Browsers by state and leases in use, read from ``pool.stats()`` of each attached pool.

    ``stats()`` runs in the scrape thread while the pool changes on its event loop; it only reads
    lengths and copies a small dict, and the rare "changed size during iteration" is retried.
    """

    def __init__(self) -> None:
        self.pools: list[BrowserPool] = []

    def attach(self, pool: BrowserPool) -> Callable[[], None]:
        """Export ``pool``'s gauges and count its events; returns the function that detaches it."""
        def listener(event: str, **data: Any) -> None:
            if pool in self.pools:
                _on_pool_event(event, **data)

        self.pools.append(pool)
        pool.add_listener(listener)
        return lambda: self.pools.remove(pool)

    def describe(self) -> Iterator[Metric]:
        yield from self._families([])

    def collect(self) -> Iterator[Metric]:
        if self.pools:
            yield from self._families([_stats(pool) for pool in list(self.pools)])

    @staticmethod
    def _families(stats: list[PoolStats]) -> Iterator[Metric]:
        by_state = {s: sum(st.browsers.get(s, 0) for st in stats) for s in POOL_STATES} if stats else {}
        yield _gauge("browserd_pool_browsers", "Browsers in the pool, by state.", "state", by_state)
        leases = GaugeMetricFamily("browserd_pool_leases_in_use", "Browser contexts leased to jobs now.")
        if stats:
            leases.add_metric([], sum(st.leases_in_use for st in stats))
        yield leases


def _stats(pool: BrowserPool) -> PoolStats:
    for _ in range(2):
        try:
            return pool.stats()
        except RuntimeError:  # a set or dict changed size under us; read again
            continue
    return pool.stats()


_POOL_EVENTS: dict[str, Callable[..., None]] = {
    "lease": lambda wait_seconds, **_: _observe(LEASE_WAIT, wait_seconds),
    "crash": lambda **_: CRASHES.inc(),
    "recycle": lambda reason, **_: RECYCLES.labels(reason if reason in RECYCLE_REASONS else "other").inc(),
}


def _on_pool_event(event: str, **data: Any) -> None:
    handler = _POOL_EVENTS.get(event)
    if handler is not None:
        handler(**data)


POOLS = PoolCollector()
REGISTRY.register(POOLS)


def instrument_pool(pool: BrowserPool) -> Callable[[], None]:
    """Call once after creating a ``cdp.BrowserPool``; call the returned function when closing it."""
    return POOLS.attach(pool)


# --- workers -------------------------------------------------------------------------------


def start_worker_metrics_server(port: int, addr: str = "0.0.0.0") -> Any:
    """Serve this worker's metrics over HTTP in a daemon thread; returns the server (``.shutdown()``).

    browserd's worker runs Celery's ``threads`` pool: every job of a worker runs in this one
    process (on one event loop), so the in-memory default registry sees every event and a plain
    HTTP server in the same process exports all of it.

    Under ``--pool prefork`` each child would count in its own memory and die with its numbers.
    For that, set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the worker starts
    (prometheus-client then keeps counters and histograms in per-process files there) and call
    this in the parent (Celery's ``worker_init``): it then serves the files merged across
    children, dead ones included. Scrape-time gauges (``browserd_pool_*``) live in the children's
    pools and are not exported in that mode.
    """
    registry: Any = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    server, _thread = start_http_server(port, addr, registry=registry)
    return server


# --- the daemon: state read from Redis at scrape time ---------------------------------------


def queue_keys(queue: str) -> list[str]:
    """The Redis lists holding one Celery queue: kombu keeps each priority step in its own list."""
    return [queue] + [f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS if step]


class RedisCollector(Collector):
    """Jobs by state, queue depth and live workers, read in one Redis round trip per scrape.

    ``client`` is a synchronous ``redis.Redis`` with ``decode_responses=True`` (scrapes run in a
    thread). If Redis does not answer, only ``browserd_redis_up 0`` is exported.
    """

    def __init__(self, client: redis.Redis, keys: Keys | None = None, queues: Iterable[str] = QUEUES,
                 worker_fresh_seconds: float = WORKER_FRESH_SECONDS) -> None:
        self.client = client
        self.keys = keys or Keys()
        self.queues = list(queues)
        self.fresh = worker_fresh_seconds

    def describe(self) -> Iterator[Metric]:
        yield from self._families(None)

    def collect(self) -> Iterator[Metric]:
        try:
            reading = self._read()
        except redis.RedisError as exc:
            log.warning("metrics: Redis did not answer: %s", exc)
            reading = None
        yield from self._families(reading)

    def _read(self) -> tuple[dict[str, float], dict[str, float], float]:
        states = [s.value for s in JobStatus]
        with self.client.pipeline(transaction=False) as pipe:
            for state in states:
                pipe.zcard(self.keys.state_index(state))
            for queue in self.queues:
                for key in queue_keys(queue):
                    pipe.llen(key)
            pipe.zcount(self.keys.workers, time.time() - self.fresh, "+inf")
            replies = iter(pipe.execute())
        jobs = {state: next(replies) for state in states}
        depths = {queue: sum(next(replies) for _ in queue_keys(queue)) for queue in self.queues}
        return jobs, depths, next(replies)

    @staticmethod
    def _families(reading: tuple[dict[str, float], dict[str, float], float] | None) -> Iterator[Metric]:
        yield GaugeMetricFamily("browserd_redis_up", "1 if Redis answered this scrape.", value=float(reading is not None))
        jobs, depths, workers = reading or ({}, {}, None)
        yield _gauge("browserd_jobs", "Jobs known to the store, by state (finished ones until their record "
                     "expires and a listing prunes the index).", "state", jobs)
        yield _gauge("browserd_queue_depth", "Messages waiting in each Celery queue (all priority steps).",
                     "queue", depths)
        up = GaugeMetricFamily("browserd_workers_up", "Workers whose heartbeat is fresh.")
        if workers is not None:
            up.add_metric([], workers)
        yield up


class _Chain:
    """Several collectors exposed as one (``generate_latest`` only needs ``collect()``)."""

    def __init__(self, *sources: Any) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source.collect()


class MetricsApp:
    """The daemon's ``/metrics`` as an ASGI app: this process's registry plus ``RedisCollector``.

    ``app.add_route("/metrics", MetricsApp.from_url(url), include_in_schema=False)`` on FastAPI
    (or ``app.mount``). The exposition is built in a thread, so Redis round trips never block the
    API's event loop.
    """

    def __init__(self, client: redis.Redis, keys: Keys | None = None, *, queues: Iterable[str] = QUEUES,
                 registry: CollectorRegistry = REGISTRY) -> None:
        self.client = client
        self.source = _Chain(registry, RedisCollector(client, keys, queues))

    @classmethod
    def from_url(cls, url: str, keys: Keys | None = None, **kwargs: Any) -> MetricsApp:
        client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5, socket_connect_timeout=5)
        return cls(client, keys, **kwargs)

    def render(self) -> bytes:
        return generate_latest(self.source)  # type: ignore[arg-type]

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", "text/plain; charset=utf-8")
            return
        await _respond(send, 200, await asyncio.to_thread(self.render), TEXT_FORMAT)

    def close(self) -> None:
        self.client.close()


async def _respond(send: Callable[..., Any], status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def metric_names() -> set[str]:
    """Every sample name browserd exports (``_total``, ``_bucket``, ``_sum``, ``_count`` included)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    families = [f for m in EVENT_METRICS for f in m.describe()]
    families += [*POOLS.describe(), *RedisCollector._families(None)]
    return {f.name + s for f in families for s in suffixes.get(f.type, ("",))}
