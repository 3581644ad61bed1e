"""The worker process's metrics: its Prometheus endpoint (served once per process, never fatal), and
the agent's and the browser pool's measurements wired into it (the kernel's metrics module imports
neither the agent nor the pool: here their typed events become its series)."""

from __future__ import annotations

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

    A port already taken (two workers on one host with the same setting) costs the metrics of
    this worker, not the worker: it logs why and runs on. The bound port is in ``server.server_port``
    and in the worker's heartbeat record (``metrics_port``).
    """
    try:
        return start_worker_metrics_server(settings.metrics_port, settings.metrics_host, node=node)
    except OSError as exc:
        log.warning("worker metrics not served: %s port %s: %s (set BROWSERD_METRICS_PORT per worker, or 0)",
                    settings.metrics_host, settings.metrics_port, exc)
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
