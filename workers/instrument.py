"""The worker process's Prometheus endpoint: served once per process, never fatal."""

from __future__ import annotations

import logging
from typing import Any

from config import Settings
from daemon.metrics import start_worker_metrics_server

log = logging.getLogger("browserd.worker")


def serve_metrics(settings: Settings) -> Any | None:
    """Serve this process's metrics on BROWSERD_METRICS_PORT (0: any free port); None if it cannot bind.

    A port already taken (two workers on one host with the same setting) costs the metrics of
    this worker, not the worker: it logs why and runs on. The bound port is in ``server.server_port``
    and in the worker's heartbeat record (``metrics_port``).
    """
    try:
        return start_worker_metrics_server(settings.metrics_port)
    except OSError as exc:
        log.warning("worker metrics not served: port %s: %s (set BROWSERD_METRICS_PORT per worker, or 0)",
                    settings.metrics_port, exc)
        return None
