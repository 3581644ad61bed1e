"""The worker process's metrics: its Prometheus endpoint (served once per process, never fatal), and
the agent's and the browser pool's measurements wired into it (the kernel's metrics module imports
neither the agent nor the pool: here their typed events become its series)."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from typing import Any

import cdp
import workers.jobs.metrics as metrics
from config import Settings
from workers.agent.telemetry import DomCapture, LlmCall, Telemetry
from workers.jobs.metrics import start_worker_metrics_server

log = logging.getLogger("browserd.worker")


def serve_metrics(settings: Settings, node: str) -> Any | None:
    """Serve this process's metrics on BROWSERD_METRICS_HOST:BROWSERD_METRICS_PORT (0: any free port), named by its Celery
    ``node`` (``browserd_worker_info{worker}``); None if it cannot bind.

    The port taken already (a second worker on one host with the same setting) moves this worker's
    metrics to a free port, logged, so "as many workers as you like" holds: the bound port is in
    ``server.server_port``, the worker's heartbeat record (``metrics_port``) and ``browserd doctor``.
    Any other failure costs the metrics of this worker, not the worker: it logs why and runs on.
    """
    port = settings.metrics_port
    try:
        try:
            return start_worker_metrics_server(port, settings.metrics_host, node=node)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port == 0:
                raise
        server = start_worker_metrics_server(0, settings.metrics_host, node=node)
        log.warning("worker metrics: port %s is taken (another worker on this host?); serving on %s:%s instead "
                    "(set BROWSERD_METRICS_PORT per worker to choose)", port, settings.metrics_host, server.server_port)
        return server
    except OSError as exc:
        log.warning("worker metrics not served: %s port %s: %s (set BROWSERD_METRICS_PORT per worker, or 0)",
                    settings.metrics_host, port, exc)
        return None


class PrometheusTelemetry(Telemetry):
    """The agent's measurements, into this process's Prometheus metrics."""

    def llm_call(self, call: LlmCall) -> None:
        metrics.observe_llm_call(call.model, call.outcome, call.seconds, call.input_tokens, call.output_tokens)

    def dom_capture(self, capture: DomCapture) -> None:
        metrics.observe_dom_capture(capture.seconds, capture.elements)


def instrument_pool(pool: cdp.BrowserPool) -> Callable[[], None]:
    """Export ``pool``'s gauges and count its events; call once after creating it, and the returned
    function when closing it (its later events are not counted)."""

    def listener(event: cdp.PoolEvent) -> None:
        if event.kind is cdp.PoolEventKind.lease:
            metrics.observe_lease_wait(event.wait_seconds)
        elif event.kind is cdp.PoolEventKind.crash:
            metrics.observe_browser_crash()
        elif event.kind is cdp.PoolEventKind.recycle and event.reason is not None:
            metrics.observe_recycle(event.reason.value)

    metrics.declare_recycle_reasons(reason.value for reason in cdp.RecycleReason)
    detach = metrics.POOLS.attach(pool)
    pool.add_listener(listener)

    def detached() -> None:
        pool.remove_listener(listener)
        detach()

    return detached
