"""``browserd worker``: a Celery worker running jobs concurrently on pooled Chromium.

Beside it, a small second Celery worker (a child process, which dies with this one) consumes the
``webhooks`` and ``maintenance`` queues: a job's webhook and the reconciler never wait behind the
job queues, however long they are, and never take a job slot. It serves no ``/metrics`` of its
own: it counts into prometheus-client's multiprocess files in a directory of this worker's, and
this worker's endpoint adds them to its own (``workers.jobs.metrics.merge_side_metrics``), so
webhook deliveries are counted where Prometheus scrapes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from cdp.launcher import die_with_parent
from config import get_settings, load_settings
from workers.jobs.model.status import Priority
from workers.jobs.queue.app import default_node_name
from workers.jobs.queue.names import SESSIONS_QUEUE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="run a worker: jobs from the queue on pooled headless Chromium")
    p.add_argument("--concurrency", type=int, help="jobs run at once (default: BROWSERD_WORKER_CONCURRENCY)")
    p.add_argument("--queues", default=",".join([SESSIONS_QUEUE, *(level.value for level in Priority)]),
                   help="job queues to consume, in priority order (interactive sessions first: someone waits)")
    p.add_argument("--side-concurrency", type=int, default=4,
                   help="threads of the side consumer of the webhooks and maintenance queues (webhook deliveries, "
                   "the reconciler), a child process; 0: none (then run one elsewhere)")
    p.add_argument("--name", help="Celery node name (default: browserd-<pid>@<host>)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.concurrency is not None:
        os.environ["BROWSERD_WORKER_CONCURRENCY"] = str(args.concurrency)
        get_settings.cache_clear()
    settings = load_settings()  # a bad variable fails here, with its name
    from workers.celery_app import app, broker_url, check_limits  # the app reads settings: after the check above
    from workers.jobs.metrics import merge_side_metrics
    from workers.jobs.queue.names import SIDE_QUEUES
    from workers.runtime import check_artifacts

    broker_url(settings)
    check_limits(settings)
    check_artifacts(settings)  # before anything starts: a store this user cannot write fails here, named
    name = args.name or default_node_name()
    common = [f"--loglevel={settings.log_level}",
              "--without-mingle",  # no start-up sync of revoked sets: a revoke a worker meets becomes the job's cancel
              "--without-gossip"]  # workers need not track each other; the job store does the bookkeeping
    side_metrics = tempfile.mkdtemp(prefix="browserd-side-metrics-")
    side = None
    if args.side_concurrency > 0:
        side = _start_side_consumer(name, SIDE_QUEUES, args.side_concurrency, common, side_metrics)
        merge_side_metrics(side_metrics)
    try:
        app.worker_main([
            "worker",
            "--pool=threads",  # one shared event loop per process; see workers/runtime.py
            f"--concurrency={settings.worker_concurrency}",
            f"--queues={args.queues}",
            f"--hostname={name}",
            *common,
        ])
    finally:
        if side is not None:
            side.terminate()
            try:
                side.wait(15)
            except subprocess.TimeoutExpired:
                side.kill()
                side.wait()
        shutil.rmtree(side_metrics, ignore_errors=True)
    return 0


def _start_side_consumer(name: str, queues: tuple[str, ...], concurrency: int, common: list[str],
                         metrics_dir: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "--pool=threads",
            f"--concurrency={concurrency}", f"--queues={','.join(queues)}", f"--hostname=side-{name}", *common]
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}  # its counts, for this worker's endpoint
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env,  # noqa: PLW1509
                            preexec_fn=die_with_parent())
