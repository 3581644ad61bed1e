"""The one Celery task, ``browserd.run_job``, and the worker-process hooks that own the runtime.

A message carries only the job id: the spec, state and result live in the job store, so a
redelivered message always sees the job's current state.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from celery.signals import worker_init, worker_process_init, worker_process_shutdown, worker_shutdown

from config import get_settings
from workers.celery_app import app, hard_limit
from workers.models import Priority
from workers.runtime import get_runtime, stale_after, stop_runtime

log = logging.getLogger("browserd.worker")

TASK_NAME = "browserd.run_job"
RUNTIME_RETRY_SECONDS = 5.0


@app.task(name=TASK_NAME, bind=True, ignore_result=True, acks_late=True)
def run_job_task(self: Task, job_id: str) -> str:
    settings = get_settings()
    hard = (self.request.timelimit or (None, None))[0] or hard_limit(settings.job_timeout)
    try:
        runtime = get_runtime(settings)
    except Exception as exc:  # no browser or no Redis in this process: keep the job, try again later
        log.error("worker runtime unavailable (%s); job %s goes back to the queue", exc, job_id)
        raise self.retry(countdown=RUNTIME_RETRY_SECONDS, max_retries=None) from exc
    outcome = runtime.run(job_id, hard)
    if outcome == "busy":
        # Delivered again while a live run still holds the job (its heartbeat is fresh): look
        # again once that heartbeat would have gone stale, in case its worker is in fact dying.
        queue = (self.request.delivery_info or {}).get("routing_key") or Priority.normal.value
        self.apply_async((job_id,), queue=queue, countdown=stale_after(settings), time_limit=hard)
    return outcome


def send_job(job_id: str, priority: Priority, soft_limit: float) -> None:
    """Publish a job to its priority's queue, with its soft and hard time limits."""
    run_job_task.apply_async(
        (job_id,), queue=priority.value, soft_time_limit=soft_limit, time_limit=hard_limit(soft_limit)
    )


def _uses_prefork(sender: Any) -> bool:
    pool = getattr(sender, "pool_cls", "") or ""
    name = pool if isinstance(pool, str) else f"{pool.__module__}.{pool.__name__}"
    return "prefork" in name


@worker_init.connect
def _start_in_main_process(sender: Any = None, **_: Any) -> None:
    """threads/solo pools run tasks in this process: start browsers now, before the first job."""
    if not _uses_prefork(sender):
        _start_or_exit()


@worker_process_init.connect
def _start_in_child(**_: Any) -> None:
    """prefork: each child process gets its own loop and pool (never inherited across fork)."""
    _start_or_exit()


def _start_or_exit() -> None:
    """A worker that cannot start its browsers or reach Redis must not take jobs: it exits."""
    try:
        get_runtime(get_settings())
    except Exception as exc:
        log.critical("browserd worker cannot start: %s: %s", type(exc).__name__, exc)
        raise SystemExit(f"browserd worker: cannot start: {exc}") from exc


@worker_shutdown.connect
@worker_process_shutdown.connect
def _stop(**_: Any) -> None:
    """Close the pool: every browser this process launched exits with it."""
    stop_runtime()
