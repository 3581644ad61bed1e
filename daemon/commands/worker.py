"""``browserd worker``: a Celery worker running jobs concurrently on pooled Chromium."""

from __future__ import annotations

import argparse
import os
import socket

from config import get_settings, load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="run a worker: jobs from the queue on pooled headless Chromium")
    p.add_argument("--concurrency", type=int, help="jobs run at once (default: BROWSERD_WORKER_CONCURRENCY)")
    p.add_argument("--queues", default="high,normal,low,webhooks",
                   help="queues to consume, in priority order (webhooks: deliveries of job and batch webhooks)")
    p.add_argument("--name", help="Celery node name (default: browserd-<pid>@<host>)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.concurrency is not None:
        os.environ["BROWSERD_WORKER_CONCURRENCY"] = str(args.concurrency)
        get_settings.cache_clear()
    settings = load_settings()  # a bad variable fails here, with its name
    from workers.celery_app import app, broker_url, check_limits

    broker_url(settings)
    check_limits(settings)
    argv = [
        "worker",
        "--pool=threads",  # one shared event loop per process; see workers/runtime.py
        f"--concurrency={settings.worker_concurrency}",
        f"--queues={args.queues}",
        f"--hostname={args.name or f'browserd-{os.getpid()}@{socket.gethostname()}'}",
        f"--loglevel={settings.log_level}",
        "--without-mingle",  # browserd does not use revokes; skip the start-up sync
        "--without-gossip",  # workers need not track each other; the job store does the bookkeeping
    ]
    app.worker_main(argv)
    return 0
