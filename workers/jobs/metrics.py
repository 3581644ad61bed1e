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

Every family name is distinct in the OpenMetrics format too (where a counter's family drops its
``_total``: the jobs-by-state gauge is ``browserd_jobs_in_state``, not ``browserd_jobs``, which is
the finished-jobs counter's family), so ``MetricsApp`` answers in OpenMetrics when the scraper's
``Accept`` asks for it and in the Prometheus text format 0.0.4 otherwise, as prometheus-client's
own HTTP server (the workers') does.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import redis
from kombu.transport.redis import PRIORITY_STEPS, Channel
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from config.isolation import IsolationLayer
from config.redis_client import connect_sync
from workers.jobs.crawls.urls import SKIP
from workers.jobs.model.result import StepRecord
from workers.jobs.model.status import FailureCategory, JobStatus, LlmOutcome
from workers.jobs.queue.names import QUEUES, SESSIONS_QUEUE, WEBHOOK_QUEUE
from workers.jobs.recipes.models import ReplayOutcome
from workers.jobs.sessions.models import COMMANDS
from workers.jobs.store.jobs import WORKER_FRESH_SECONDS
from workers.jobs.store.keys import Keys
from workers.jobs.tenants.models import OPERATOR_TENANT

if TYPE_CHECKING:  # the kernel reads a pool's stats; it never imports the browser layer
    from cdp import BrowserPool, PoolStats

log = logging.getLogger("browserd.metrics")

# ``*_created`` series would double every counter and histogram for no use on our dashboards
# (and ``browserd_jobs_created`` would read as a job count). Process-wide, on purpose.
disable_created_metrics()

# What the queue depth counts: every job queue, and webhook deliveries' own queue.
DEPTH_QUEUES = (*QUEUES, WEBHOOK_QUEUE, SESSIONS_QUEUE)
POOL_STATES = ("starting", "standby", "ready", "draining")
LLM_OUTCOMES = tuple(o.value for o in LlmOutcome)
MODEL_LABELS_MAX = 20
TENANT_LABELS_MAX = 100  # tenants are the operator's to create; past this many, "other"
NO_CATEGORY = "none"
WEBHOOK_OUTCOMES = ("delivered", "refused", "retrying", "given_up")
SCHEDULE_OUTCOMES = ("run", "skipped")
SESSION_OUTCOMES = ("ok", "action_failed", "url_blocked", "start_failed", "invalid", "closed")
SESSION_END_REASONS = ("closed", "idle", "max_seconds", "dropped", "worker_stopping", "start_failed", "browser_failed",
                       "failed")
POLITENESS_WAITS = ("slot", "navigation")  # what a job waits for: a slot on its domain, or its next navigation
CHANGE_KINDS = ("added", "changed", "removed")  # what the change feed counts of items
BACKOFF_REASONS = ("http_429", "http_503", "blocked_by_site")  # what slowed a domain down
CRAWL_PAGE_OUTCOMES = ("queued", "succeeded", "failed")  # a crawl's page: queued for a visit, its visit's end
CRAWL_SKIPS = astuple(SKIP)  # why a found link was not queued
REPLAY_OUTCOMES = tuple(o.value for o in ReplayOutcome)
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
UNMATCHED_ROUTE = "unmatched"  # the route label of a request no route matched (a 404 for any path)



class Reconciled(StrEnum):
    """What the reconciler did to a job nobody ran (``browserd_reconciler_jobs_total{action}``)."""

    resent = "resent"  # running, its heartbeat stale: sent again as a retry of its task
    republished = "republished"  # queued, no message in the broker: published


# --- buckets (seconds unless named otherwise) ---------------------------------------------

FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
LLM = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
JOB = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
WAIT = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
ELEMENTS = (0, 10, 25, 50, 100, 200, 400, 800, 1600, 3200)

# --- event metrics (default registry) ------------------------------------------------------

BUILD_INFO = Info("browserd_build", "The browserd version this process runs.")
JOBS_TOTAL = Counter("browserd_jobs", "Jobs finished, by final state and failure category.", ["state", "category"])
TENANT_JOBS = Counter("browserd_tenant_jobs", "Jobs finished, by tenant (its name; 'operator' for the admin's "
                      "jobs; never a key) and final state.", ["tenant", "state"])
JOB_DURATION = Histogram("browserd_job_duration_seconds", "Run time of a finished job's last attempt.", buckets=JOB)
QUEUE_WAIT = Histogram("browserd_job_queue_wait_seconds", "Time from enqueue to a worker starting the job.", buckets=WAIT)
STEPS = Counter("browserd_agent_steps", "Agent (or script) steps run.")
STEP_SECONDS = Histogram("browserd_step_duration_seconds", "Time spent in each phase of a step.", ["phase"], buckets=FAST)
LLM_REQUESTS = Counter("browserd_llm_requests", "LLM requests, by model and outcome.", ["model", "outcome"])
LLM_TOKENS = Counter("browserd_llm_tokens", "LLM tokens, by model and direction (input|output).", ["model", "direction"])
LLM_LATENCY = Histogram("browserd_llm_latency_seconds", "Latency of one LLM request.", ["model"], buckets=LLM)
LLM_COST = Counter("browserd_llm_cost_usd", "What LLM requests cost in USD (the price table, BROWSERD_LLM_PRICES), by "
                   "tenant ('operator' for the admin's jobs; never a key) and model; unpriced models count nothing.",
                   ["tenant", "model"])
LEASE_WAIT = Histogram("browserd_pool_lease_wait_seconds", "Time a job waited for a browser context.", buckets=FAST)
CRASHES = Counter("browserd_browser_crashes", "Browsers that died unexpectedly.")
RECYCLES = Counter("browserd_browser_recycles", "Browsers retired on purpose, by reason.", ["reason"])
DOM_CAPTURE = Histogram("browserd_dom_capture_seconds", "Time of one DOM capture (all frames).", buckets=FAST)
DOM_ELEMENTS = Histogram("browserd_dom_elements", "Interactive elements offered by one DOM capture.", buckets=ELEMENTS)
WEBHOOKS = Counter("browserd_webhook_deliveries", "Webhook delivery attempts, by outcome (delivered, refused: a "
                   "final 4xx, retrying: failed and tried again, given_up: failed after the last retry).", ["outcome"])
WEBHOOK_SECONDS = Histogram("browserd_webhook_delivery_seconds", "Time of one webhook POST attempt.", buckets=FAST)
BATCHES_SUBMITTED = Counter("browserd_batches_submitted", "Batches queued (from the API or by a schedule's run).")
BATCHES_COMPLETED = Counter("browserd_batches_completed", "Batches whose every job reached a final state.")
SCHEDULE_RUNS = Counter("browserd_schedule_runs", "Schedule runs, by outcome (run: its batch was queued, when due "
                        "or on request; skipped: due while the previous run was unfinished).", ["outcome"])
API_REQUESTS = Counter("browserd_api_requests", "HTTP requests the API answered, by route template, method and "
                       "status class (2xx, 4xx, 5xx...).", ["route", "method", "status"])
API_LATENCY = Histogram("browserd_api_request_duration_seconds", "Time from a request's arrival to its response "
                        "headers (for event streams: to the stream's start).", ["route", "method"], buckets=FAST)
SESSION_COMMANDS = Counter("browserd_session_commands", "Commands interactive sessions ran, by command and outcome "
                           "(ok, action_failed, url_blocked, invalid, ...).", ["command", "outcome"])
SESSIONS_ENDED = Counter("browserd_sessions_ended", "Interactive sessions that ended on this worker, by reason "
                         "(closed, idle, max_seconds, dropped, worker_stopping, start_failed, browser_failed, "
                         "failed).", ["reason"])
POLITENESS_WAIT = Histogram("browserd_politeness_wait_seconds", "Time a job waited for politeness, by what it "
                            "waited for (slot: a concurrency slot on its domain; navigation: the domain's delay "
                            "between navigations).", ["kind"], buckets=WAIT)
POLITENESS_WAITING = Gauge("browserd_politeness_waiting_jobs", "Jobs of this process waiting for politeness now, "
                           "by what they wait for.", ["kind"])
REPLAY_STEPS = Counter("browserd_replay_steps", "Recipe steps, by outcome (replayed: run from the recipe with no "
                       "LLM; healed: run by the agent after a recipe step no longer matched; failed: a recipe "
                       "step that did not match the page).", ["outcome"])
TOKENS_SAVED = Counter("browserd_llm_tokens_saved", "LLM tokens recipe replays did not spend, estimated from the "
                       "recorded run (its tokens, minus what healing used).")
CRAWL_PAGES = Counter("browserd_crawl_pages", "Crawl pages, by outcome (queued: a page job created; succeeded, "
                      "failed: its visit ended).", ["outcome"])
PAGES_REUSED = Counter("browserd_pages_reused", "Pages of scheduled runs unchanged since the last run, whose "
                       "extraction was reused with no model call (incremental runs).")
CRAWL_SKIPPED = Counter("browserd_crawl_links_skipped", "Links crawls found and did not queue, by reason (scope, "
                        "depth, robots, dedup, budget, lastmod, quota, trap, follow); exactly what the crawls' records count.", ["reason"])
POLITENESS_BACKOFFS = Counter("browserd_politeness_backoffs", "Times a registrable domain was slowed down, by what "
                              "the site did (http_429, http_503: its answer to a page; blocked_by_site: a job's "
                              "verdict).", ["reason"])
SCHEDULE_CHANGES = Counter("browserd_schedule_changes", "Items the change feed found across schedule runs, by kind "
                           "(added, changed, removed).", ["kind"])
RECONCILED = Counter("browserd_reconciler_jobs", "Jobs the reconciler sent again, by action (resent: running with "
                     "a stale heartbeat, sent again as a retry; republished: queued with no message in the "
                     "broker).", ["action"])
ABANDONED = Counter("browserd_jobs_abandoned", "Jobs a worker abandoned at their hard time limit (their run ignored "
                    "its cancel); the reconciler settles them.")
PROXY_REASONS = ("http_403", "http_429", "blocked_by_site", "proxy_failed")  # why a job left a pool's proxy
PROXY_JOBS = Counter("browserd_proxy_jobs", "Times a job took a proxy of a pool (its first, or after a move), by "
                     "pool and proxy (its label: never its address or credentials).", ["pool", "proxy"])
PROXY_PAGES = Counter("browserd_proxy_pages", "Pages (main-frame documents) answered through a pool's proxy, by pool "
                      "and proxy: the block rate's denominator.", ["pool", "proxy"])
PROXY_BLOCKS = Counter("browserd_proxy_blocks", "Pages a site refused through a pool's proxy (http_403, http_429) and "
                       "jobs that reported blocked_by_site on it, by pool, proxy and reason.", ["pool", "proxy", "reason"])
PROXY_FAILURES = Counter("browserd_proxy_failures", "Times a pool's proxy itself failed (unreachable, credentials "
                         "refused, no proxy protocol); it is then cooled down.", ["pool", "proxy"])
PROXY_ROTATIONS = Counter("browserd_proxy_rotations", "Moves of a job to another proxy of its pool, by pool and reason "
                          "(http_403, http_429, blocked_by_site, proxy_failed).", ["pool", "reason"])
PROXY_COOLED = Gauge("browserd_proxy_cooled_down", "1 while a pool's proxy is left out after a failure (this "
                     "process's view), else 0.", ["pool", "proxy"])
WORKER_SLOTS = Gauge("browserd_worker_slots", "Jobs this worker can run at once (its concurrency).")
WORKER_RUNNING = Gauge("browserd_worker_jobs_running", "Jobs this worker runs now (over browserd_worker_slots: "
                       "its saturation).")
EVENT_METRICS = (BUILD_INFO, JOBS_TOTAL, TENANT_JOBS, JOB_DURATION, QUEUE_WAIT, STEPS, STEP_SECONDS, LLM_REQUESTS, LLM_TOKENS,
                 LLM_LATENCY, LLM_COST, LEASE_WAIT, CRASHES, RECYCLES, DOM_CAPTURE, DOM_ELEMENTS, WEBHOOKS, WEBHOOK_SECONDS,
                 BATCHES_SUBMITTED, BATCHES_COMPLETED, SCHEDULE_RUNS, API_REQUESTS, API_LATENCY, SESSION_COMMANDS,
                 SESSIONS_ENDED, POLITENESS_WAIT, POLITENESS_WAITING, REPLAY_STEPS, TOKENS_SAVED, CRAWL_PAGES,
                 PAGES_REUSED, CRAWL_SKIPPED, POLITENESS_BACKOFFS, SCHEDULE_CHANGES, RECONCILED, ABANDONED, WORKER_SLOTS,
                 WORKER_RUNNING, PROXY_JOBS, PROXY_PAGES, PROXY_BLOCKS, PROXY_FAILURES, PROXY_ROTATIONS, PROXY_COOLED)


def _version() -> str:
    try:
        return importlib.metadata.version("browserd")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def seed(metric: Counter | Gauge | Histogram, label_sets: Iterable[str | tuple[str, ...]]) -> None:
    """Create each of ``metric``'s label sets at zero (a string: a one-label set), so ``rate()``
    and ratios work from the first event. The one place any module pre-seeds a labelled series."""
    for labels in label_sets:
        metric.labels(*((labels,) if isinstance(labels, str) else labels))


def _init_series() -> None:
    """Create every bounded series at zero: one row per labelled family whose values are known here."""
    finished = [(JobStatus.succeeded.value, NO_CATEGORY), (JobStatus.cancelled.value, NO_CATEGORY)]
    seeds: list[tuple[Any, Iterable[str | tuple[str, ...]]]] = [
        (JOBS_TOTAL, finished + [(JobStatus.failed.value, c.value) for c in FailureCategory]),
        (STEP_SECONDS, ("dom", "llm", "action")),
        (WEBHOOKS, WEBHOOK_OUTCOMES),
        (SCHEDULE_RUNS, SCHEDULE_OUTCOMES),
        (SESSIONS_ENDED, SESSION_END_REASONS),
        # the dashboard's session panel has a series before the first session
        (SESSION_COMMANDS, [(command, "ok") for command in COMMANDS]),
        (POLITENESS_WAIT, POLITENESS_WAITS),
        (POLITENESS_WAITING, POLITENESS_WAITS),
        (REPLAY_STEPS, REPLAY_OUTCOMES),
        (CRAWL_PAGES, CRAWL_PAGE_OUTCOMES),
        (CRAWL_SKIPPED, CRAWL_SKIPS),
        (POLITENESS_BACKOFFS, BACKOFF_REASONS),
        (SCHEDULE_CHANGES, CHANGE_KINDS),
        (RECONCILED, [action.value for action in Reconciled]),
    ]
    for metric, label_sets in seeds:
        seed(metric, label_sets)
    BUILD_INFO.info({"version": _version()})


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
_tenant_label = _BoundedLabel(TENANT_LABELS_MAX)


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
                         duration: float | None = None, queue_wait: float | None = None,
                         tenant: str | None = None) -> None:
    """Once per job that reached a final state (call it only where the final transition won);
    ``tenant`` None: the operator's job."""
    state = JobStatus(status)
    if not state.finished:
        raise ValueError(f"{state.value!r} is not a final job state")
    JOBS_TOTAL.labels(state.value, FailureCategory(category).value if category else NO_CATEGORY).inc()
    TENANT_JOBS.labels(_tenant_label(tenant or OPERATOR_TENANT), state.value).inc()
    _observe(JOB_DURATION, duration)
    _observe(QUEUE_WAIT, queue_wait)


def observe_step(step: StepRecord) -> None:
    """After each step; phases that took no time (a script step asks no LLM) are not observed."""
    STEPS.inc()
    for phase, seconds in (("dom", step.dom_seconds), ("llm", step.llm_seconds), ("action", step.action_seconds)):
        if seconds > 0:
            STEP_SECONDS.labels(phase).observe(seconds)


def observe_replay(steps: dict[str, int], tokens_saved: int) -> None:
    """After a recipe job: its steps by outcome (``REPLAY_OUTCOMES``) and the tokens it did not spend."""
    for outcome, count in steps.items():
        if count:
            REPLAY_STEPS.labels(outcome).inc(count)
    if tokens_saved > 0:
        TOKENS_SAVED.inc(tokens_saved)


def observe_llm_call(model: str, outcome: LlmOutcome | str, seconds: float, tokens_in: int = 0,
                     tokens_out: int = 0) -> None:
    """Once per LLM request (each retry is a request); an ``outcome`` that is no ``LlmOutcome`` counts as
    ``error``, so the label stays bounded."""
    model = _model_label(model or "unknown")
    LLM_REQUESTS.labels(model, outcome if outcome in LLM_OUTCOMES else LlmOutcome.error.value).inc()
    _observe(LLM_LATENCY.labels(model), seconds)
    for direction, tokens in (("input", tokens_in), ("output", tokens_out)):
        if tokens > 0:
            LLM_TOKENS.labels(model, direction).inc(tokens)


def observe_llm_cost(tenant: str | None, model: str, usd: float) -> None:
    """What one priced LLM request cost; ``tenant`` None: the operator's job."""
    if usd > 0:
        LLM_COST.labels(_tenant_label(tenant or OPERATOR_TENANT), _model_label(model or "unknown")).inc(usd)


def observe_dom_capture(seconds: float, elements: int) -> None:
    """Once per ``dom.capture``."""
    _observe(DOM_CAPTURE, seconds)
    _observe(DOM_ELEMENTS, elements)


def observe_webhook(outcome: str, seconds: float | None) -> None:
    """Once per delivery attempt; ``outcome`` is one of ``WEBHOOK_OUTCOMES``."""
    if outcome not in WEBHOOK_OUTCOMES:
        raise ValueError(f"{outcome!r} is not one of {WEBHOOK_OUTCOMES}")
    WEBHOOKS.labels(outcome).inc()
    _observe(WEBHOOK_SECONDS, seconds)


@contextmanager
def politeness_waiting(kind: str) -> Iterator[None]:
    """Around one politeness wait: counts the job as waiting meanwhile, then observes how long it
    took; ``kind`` is one of ``POLITENESS_WAITS``."""
    if kind not in POLITENESS_WAITS:
        raise ValueError(f"{kind!r} is not one of {POLITENESS_WAITS}")
    started = time.monotonic()
    POLITENESS_WAITING.labels(kind).inc()
    try:
        yield
    finally:
        POLITENESS_WAITING.labels(kind).dec()
        POLITENESS_WAIT.labels(kind).observe(time.monotonic() - started)


def observe_crawl_pages(outcome: str, n: int = 1) -> None:
    """``n`` pages of crawls queued, or one page's visit ended; ``outcome`` is one of ``CRAWL_PAGE_OUTCOMES``."""
    if outcome not in CRAWL_PAGE_OUTCOMES:
        raise ValueError(f"{outcome!r} is not one of {CRAWL_PAGE_OUTCOMES}")
    if n:
        CRAWL_PAGES.labels(outcome).inc(n)


def observe_reused_page() -> None:
    """A scheduled run's page was unchanged: the last run's extraction was reused (no model call)."""
    PAGES_REUSED.inc()


def observe_crawl_skips(skips: dict[str, int]) -> None:
    """Links a crawl's page found and did not queue, by reason (one of ``CRAWL_SKIPS``)."""
    for reason, n in skips.items():
        if n and reason in CRAWL_SKIPS:
            CRAWL_SKIPPED.labels(reason).inc(n)


def observe_backoff(reason: str) -> None:
    """A domain slowed down; ``reason`` is one of ``BACKOFF_REASONS``."""
    if reason not in BACKOFF_REASONS:
        raise ValueError(f"{reason!r} is not one of {BACKOFF_REASONS}")
    POLITENESS_BACKOFFS.labels(reason).inc()


def init_proxy_series(pools: dict[str, list[str]]) -> None:
    """Every pool's proxies (by label) at zero, so block rates and the dashboard have series from the start."""
    for pool, labels in pools.items():
        for reason in PROXY_REASONS:
            PROXY_ROTATIONS.labels(pool, reason)
        for proxy in labels:
            PROXY_JOBS.labels(pool, proxy)
            PROXY_PAGES.labels(pool, proxy)
            PROXY_FAILURES.labels(pool, proxy)
            PROXY_COOLED.labels(pool, proxy).set(0)
            for reason in PROXY_REASONS[:3]:
                PROXY_BLOCKS.labels(pool, proxy, reason)


def observe_proxy_taken(pool: str, proxy: str) -> None:
    PROXY_JOBS.labels(pool, proxy).inc()


def observe_proxy_page(pool: str, proxy: str, blocked: str | None) -> None:
    """A page answered through a pool's proxy; ``blocked``: its reason when the site refused it."""
    PROXY_PAGES.labels(pool, proxy).inc()
    if blocked is not None:
        observe_proxy_block(pool, proxy, blocked)


def observe_proxy_block(pool: str, proxy: str, reason: str) -> None:
    if reason not in PROXY_REASONS[:3]:
        raise ValueError(f"{reason!r} is not one of {PROXY_REASONS[:3]}")
    PROXY_BLOCKS.labels(pool, proxy, reason).inc()


def observe_proxy_failure(pool: str, proxy: str) -> None:
    PROXY_FAILURES.labels(pool, proxy).inc()


def observe_proxy_rotation(pool: str, reason: str) -> None:
    if reason not in PROXY_REASONS:
        raise ValueError(f"{reason!r} is not one of {PROXY_REASONS}")
    PROXY_ROTATIONS.labels(pool, reason).inc()


def observe_proxy_cooled(pool: str, proxy: str, cooled: bool) -> None:
    PROXY_COOLED.labels(pool, proxy).set(1 if cooled else 0)


def observe_changes(added: int, changed: int, removed: int) -> None:
    """One schedule run compared with the one before."""
    for kind, n in zip(CHANGE_KINDS, (added, changed, removed)):
        if n:
            SCHEDULE_CHANGES.labels(kind).inc(n)


def observe_batch_submitted() -> None:
    """Once per batch whose jobs were queued."""
    BATCHES_SUBMITTED.inc()


def observe_batch_completed() -> None:
    """Once per batch, by the one caller whose ``complete_if_done`` finished it."""
    BATCHES_COMPLETED.inc()


def observe_schedule_run(outcome: str) -> None:
    """Once per run queued and per due run skipped; ``outcome`` is one of ``SCHEDULE_OUTCOMES``."""
    if outcome not in SCHEDULE_OUTCOMES:
        raise ValueError(f"{outcome!r} is not one of {SCHEDULE_OUTCOMES}")
    SCHEDULE_RUNS.labels(outcome).inc()


def observe_session_command(command: str, outcome: str) -> None:
    SESSION_COMMANDS.labels(command if command in COMMANDS else "other",
                            outcome if outcome in SESSION_OUTCOMES else "other").inc()


def observe_session_ended(reason: str) -> None:
    if reason in SESSION_END_REASONS:  # "gone": a session dropped before this worker opened it
        SESSIONS_ENDED.labels(reason).inc()


def observe_reconciled(action: Reconciled) -> None:
    RECONCILED.labels(action.value).inc()


def observe_abandoned() -> None:
    ABANDONED.inc()


def observe_worker_slots(slots: int, running: int) -> None:
    """This worker's capacity and what it runs now (set at every heartbeat)."""
    WORKER_SLOTS.set(slots)
    WORKER_RUNNING.set(running)


def observe_api_request(route: str | None, method: str, status: int, seconds: float) -> None:
    """Once per answered request: ``route`` is the matched route's template (None: no route matched)."""
    route = route or UNMATCHED_ROUTE
    method = method if method in HTTP_METHODS else "other"
    API_REQUESTS.labels(route, method, f"{status // 100}xx").inc()
    _observe(API_LATENCY.labels(route, method), seconds)


# --- the browser pool ----------------------------------------------------------------------


class PoolCollector(Collector):
    """Browsers by state and leases in use, read from ``pool.stats()`` of each attached pool.

    ``stats()`` runs in the scrape thread while the pool changes on its event loop; it only reads
    lengths and copies a small dict, and the rare "changed size during iteration" is retried.
    """

    def __init__(self) -> None:
        self.pools: list[BrowserPool] = []

    def attach(self, pool: BrowserPool) -> Callable[[], None]:
        """Export ``pool``'s gauges; returns the function that detaches it. Its events (leases,
        crashes, recycles) are counted by whoever listens to them (``workers.instrument``)."""
        self.pools.append(pool)
        return lambda: self.pools.remove(pool)

    def describe(self) -> Iterator[Metric]:
        yield from self._families([])

    def collect(self) -> Iterator[Metric]:
        if self.pools:
            yield from self._families([_PoolReading.of(pool) for pool in list(self.pools)])

    @staticmethod
    def _families(stats: list[_PoolReading]) -> Iterator[Metric]:
        by_state = {s: sum(st.browsers.get(s, 0) for st in stats) for s in POOL_STATES} if stats else {}
        yield _gauge("browserd_pool_browsers", "Browsers in the pool, by state.", "state", by_state)
        leases = GaugeMetricFamily("browserd_pool_leases_in_use", "Browser contexts leased to jobs now.")
        if stats:
            leases.add_metric([], sum(st.leases_in_use for st in stats))
        yield leases
        memory = GaugeMetricFamily("browserd_pool_memory_bytes", "Memory (PSS) of this process's browsers and "
                                   "their renderers, as the pool's memory limit measures it.")
        if stats:
            memory.add_metric([], sum(st.memory_bytes for st in stats))
        yield memory
        layers = ({layer.value: float(all(st.isolation.get(layer, False) for st in stats)) for layer in IsolationLayer}
                  if stats else None)
        yield _gauge("browserd_isolation_layer", "1 when every browser of this worker has the isolation layer "
                     "(docs/security.md), 0 when it is off here; the worker's log and `browserd doctor` say why.",
                     "layer", layers)


@dataclass(frozen=True)
class _PoolReading:
    """One pool's gauges at scrape time: its ``stats()`` and its browsers' memory."""

    browsers: dict[str, int]
    leases_in_use: int
    memory_bytes: int
    isolation: dict[IsolationLayer, bool]

    @classmethod
    def of(cls, pool: BrowserPool) -> _PoolReading:
        stats = _stats(pool)
        memory = pool.memory_bytes()  # /proc reads in the pool's browser layer; a dead browser counts 0
        return cls(stats.browsers, stats.leases_in_use, memory, stats.isolation.active if stats.isolation else {})


def _stats(pool: BrowserPool) -> PoolStats:
    for _ in range(2):
        try:
            return pool.stats()
        except RuntimeError:  # a set or dict changed size under us; read again
            continue
    return pool.stats()


def observe_lease_wait(seconds: float) -> None:
    """Once per lease a pool hands out: how long it waited for a context."""
    LEASE_WAIT.observe(seconds)


def observe_browser_crash() -> None:
    CRASHES.inc()


def declare_recycle_reasons(reasons: Iterable[str]) -> None:
    """Create each recycle reason's series at zero (the pool names its reasons; the kernel does not
    import the pool), so ``rate()`` works before the first recycle of its kind."""
    seed(RECYCLES, reasons)


def observe_recycle(reason: str) -> None:
    """A browser retired on purpose, for ``reason``."""
    RECYCLES.labels(reason).inc()


POOLS = PoolCollector()
REGISTRY.register(POOLS)


# --- workers -------------------------------------------------------------------------------


class WorkerInfo(Collector):
    """``browserd_worker_info{worker="<Celery node name>"} 1`` on a worker's own ``/metrics``.

    A worker's series carry only its scrape address (``instance``), while ``browserd_worker_up``,
    Flower and celery-exporter name workers by Celery node: joining on this series
    (``* on (job, instance) group_left (worker) browserd_worker_info``) names a worker's series by
    node. Nothing is exported until the worker's metrics server is started with its node name, so
    the API, which serves the same default registry, never claims to be a worker.
    """

    FAMILY = ("browserd_worker", "The Celery node name of the worker serving these metrics.")

    def __init__(self) -> None:
        self.node: str | None = None

    def describe(self) -> Iterator[Metric]:
        yield InfoMetricFamily(*self.FAMILY)

    def collect(self) -> Iterator[Metric]:
        if self.node is not None:
            yield InfoMetricFamily(*self.FAMILY, value={"worker": self.node})


WORKER_INFO = WorkerInfo()
REGISTRY.register(WORKER_INFO)


class WithSideProcess(Collector):
    """This process's metrics with those a side process counted into ``PROMETHEUS_MULTIPROC_DIR``
    files at ``path``, samples of one name and labels summed (counters and histograms add up).

    ``browserd worker``'s side consumer delivers the webhooks (and runs schedules) in a process of
    its own that serves no ``/metrics``: its ``browserd_webhook_deliveries_total`` stayed 0 where
    Prometheus scrapes (issue 25). It counts into files in a directory of the worker's, which the
    worker's own endpoint adds in here (``merge_side_metrics``)."""

    def __init__(self, path: str) -> None:
        from prometheus_client import multiprocess  # reads the files; loaded only by a worker with a side process

        self.side = CollectorRegistry()
        multiprocess.MultiProcessCollector(self.side, path=path)

    def collect(self) -> Iterator[Metric]:
        side = {family.name: family for family in self.side.collect()}
        for family in REGISTRY.collect():
            extra = side.pop(family.name, None)
            if extra is not None and family.type in ("counter", "histogram", "summary"):
                family = _summed(family, extra)
            yield family
        yield from (family for family in side.values() if family.type != "gauge")


def _summed(mine: Metric, theirs: Metric) -> Metric:
    totals: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for sample in (*mine.samples, *theirs.samples):
        if sample.name.endswith("_created"):
            continue
        key = (sample.name, tuple(sorted(sample.labels.items())))
        totals[key] = totals.get(key, 0.0) + sample.value
    merged = Metric(mine.name, mine.documentation, mine.type, mine.unit)
    for (name, labels), value in totals.items():
        merged.add_sample(name, dict(labels), value)
    return merged


_side_metrics: str | None = None


def merge_side_metrics(path: str) -> None:
    """The worker's side process counts into ``path`` (its ``PROMETHEUS_MULTIPROC_DIR``); this
    process's endpoint, started after this call, adds those counts to its own."""
    global _side_metrics
    _side_metrics = path


def start_worker_metrics_server(port: int, addr: str, *, node: str | None = None) -> Any:
    """Serve this worker's metrics over HTTP on ``addr``:``port`` (BROWSERD_METRICS_HOST, loopback unless
    the deployment opens it) in a daemon thread; returns the server (``.shutdown()``).
    ``node`` (the worker's Celery node name) labels ``browserd_worker_info``.

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
    if node is not None:
        WORKER_INFO.node = node
    registry: Any = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(WORKER_INFO)
    elif _side_metrics is not None:
        registry = CollectorRegistry()
        registry.register(WithSideProcess(_side_metrics))
    server, _thread = start_http_server(port, addr, registry=registry)
    return server


# --- the daemon: state read from Redis at scrape time ---------------------------------------


def queue_keys(queue: str) -> list[str]:
    """The Redis lists holding one Celery queue: kombu keeps each priority step in its own list."""
    return [queue] + [f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS if step]


@dataclass(frozen=True)
class _RedisReading:
    jobs: dict[str, float]  # state -> jobs in it
    depths: dict[str, float]  # queue -> messages waiting
    workers: list[str]  # Celery node names of the workers whose heartbeat is fresh
    sessions: int  # interactive sessions whose record is live


class RedisCollector(Collector):
    """Jobs by state, queue depth and live workers, read in one Redis round trip per scrape (two with
    live workers: their records name their Celery nodes).

    ``client`` is a synchronous ``redis.Redis`` with ``decode_responses=True`` (scrapes run in a
    thread). If Redis does not answer, only ``browserd_redis_up 0`` is exported.

    ``browserd_worker_up{worker}`` has one series per live worker only, labelled with its Celery
    node name (the ``hostname`` of celery-exporter and Flower; a runtime's record without one, from
    an older version, by its runtime id); a worker that stops heartbeating drops out, so the label
    set stays as small as the fleet. ``browserd_workers_up`` counts those nodes, and reads 0 (not
    absent) when none is alive.
    """

    def __init__(self, client: redis.Redis, keys: Keys | None = None, queues: Iterable[str] = DEPTH_QUEUES,
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

    def _read(self) -> _RedisReading:
        states = [s.value for s in JobStatus]
        with self.client.pipeline(transaction=False) as pipe:
            for state in states:
                pipe.zcard(self.keys.state_index(state))
            for queue in self.queues:
                for key in queue_keys(queue):
                    pipe.llen(key)
            pipe.zrangebyscore(self.keys.workers, time.time() - self.fresh, "+inf")
            pipe.zcount(self.keys.sessions, time.time(), "+inf")
            replies = iter(pipe.execute())
        jobs = {state: next(replies) for state in states}
        depths = {queue: sum(next(replies) for _ in queue_keys(queue)) for queue in self.queues}
        live, sessions = next(replies), next(replies)
        return _RedisReading(jobs, depths, self._nodes(live), sessions)

    def _nodes(self, worker_ids: list[str]) -> list[str]:
        """The Celery node names of these runtimes (a prefork node's children share one)."""
        if not worker_ids:
            return []
        with self.client.pipeline(transaction=False) as pipe:
            for worker_id in worker_ids:
                pipe.hget(self.keys.worker(worker_id), "node")
            nodes = pipe.execute()
        return sorted({node or worker_id for worker_id, node in zip(worker_ids, nodes)})

    @staticmethod
    def _families(reading: _RedisReading | None) -> Iterator[Metric]:
        yield GaugeMetricFamily("browserd_redis_up", "1 if Redis answered this scrape.", value=float(reading is not None))
        yield _gauge("browserd_jobs_in_state", "Jobs known to the store, by state (finished ones until their "
                     "record expires and a listing prunes the index).", "state", reading.jobs if reading else None)
        yield _gauge("browserd_queue_depth", "Messages waiting in each Celery queue (all priority steps; "
                     "webhooks: deliveries waiting).", "queue", reading.depths if reading else None)
        up = GaugeMetricFamily("browserd_workers_up", "Workers (Celery nodes) whose heartbeat is fresh.")
        if reading is not None:
            up.add_metric([], len(reading.workers))
        yield up
        yield _gauge("browserd_worker_up", "1 for each worker whose heartbeat is fresh, by Celery node name "
                     "(live workers only).",
                     "worker", dict.fromkeys(reading.workers, 1.0) if reading else None)
        sessions = GaugeMetricFamily("browserd_sessions_open", "Interactive sessions open (or opening) across all "
                                     "workers; BROWSERD_SESSION_MAX_OPEN caps them.")
        if reading is not None:
            sessions.add_metric([], reading.sessions)
        yield sessions


class _Chain:
    """Several collectors exposed as one (``generate_latest`` only needs ``collect()``)."""

    def __init__(self, *sources: Any) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source.collect()


@dataclass(frozen=True)
class Exposition:
    """The metrics in one format, and the content type that names it."""

    body: bytes
    content_type: str


class MetricsApp:
    """The daemon's ``/metrics`` as an ASGI app: this process's registry plus ``RedisCollector``.

    ``app.add_route("/metrics", MetricsApp.from_url(url), include_in_schema=False)`` on FastAPI
    (or ``app.mount``). The exposition is built in a thread, so Redis round trips never block the
    API's event loop.
    """

    def __init__(self, client: redis.Redis, keys: Keys | None = None, *, queues: Iterable[str] = DEPTH_QUEUES,
                 registry: CollectorRegistry = REGISTRY) -> None:
        self.client = client
        self.source = _Chain(registry, RedisCollector(client, keys, queues))

    @classmethod
    def from_url(cls, url: str, keys: Keys | None = None, **kwargs: Any) -> MetricsApp:
        client = connect_sync(url, socket_timeout=5, retries=0)
        return cls(client, keys, **kwargs)

    def render(self, accept: str | None = None) -> Exposition:
        """The exposition in the format ``accept`` asks for (OpenMetrics or text 0.0.4)."""
        encoder, content_type = choose_encoder(accept or "")
        return Exposition(encoder(self.source), content_type)  # type: ignore[arg-type]  (it only calls collect())

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", "text/plain; charset=utf-8")
            return
        accept = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"accept"), None)
        shown = await asyncio.to_thread(self.render, accept)
        await _respond(send, 200, shown.body, shown.content_type)

    def close(self) -> None:
        self.client.close()


async def _respond(send: Callable[..., Any], status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def metric_names() -> set[str]:
    """Every sample name browserd exports (``_total``, ``_bucket``, ``_sum``, ``_count`` included)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "info": ("_info",)}
    families = [f for m in EVENT_METRICS for f in m.describe()]
    families += [*POOLS.describe(), *WORKER_INFO.describe(), *RedisCollector._families(None)]
    return {f.name + s for f in families for s in suffixes.get(f.type, ("",))}
