"""The one Celery task, ``browserd.run_job``, and the worker-process hooks that own the runtime.

A message carries only the job id: the spec, state and result live in the job store, so a
redelivered message always sees the job's current state.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from celery import Task
from celery.concurrency import get_implementation
from celery.concurrency.thread import TaskPool
from celery.exceptions import Ignore
from celery.signals import (
    setup_logging,
    task_revoked,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_shutdown,
)

from config import get_settings
from config import setup_logging as configure_logging
from workers.jobs.errors import JobsError
from workers.jobs.model.status import JobStatus, Priority
from workers.jobs.queue.app import app
from workers.jobs.queue.limits import hard_limit
from workers.jobs.queue.names import QUEUES, RUN_JOB, SESSIONS_QUEUE
from workers.jobs.store.outcomes import ClaimOutcome
from workers.runtime import cancel_revoked, get_runtime, name_node, stale_after, stop_runtime
from workers.threads_pool import ThreadsPool

log = logging.getLogger("browserd.worker")

RUNTIME_RETRY_SECONDS = 5.0


class JobFailed(JobsError):
    """The job ended failed (its state and result are already in the job store); a cancelled job's
    task ends REVOKED instead (``_revoked_as_cancelled``).

    Raised so Celery's own view (Flower, celery-exporter, ``task-failed`` events) agrees with the
    job store; listed in the task's ``throws``, so it is logged as expected, without a traceback
    (which needs it to survive pickling, as every ``JobsError`` does).
    The message is still acknowledged: with ``task_acks_late``, Celery acks a task that raised
    (``task_acks_on_failure_or_timeout`` stays True), so the job is not delivered again.
    """

    def __init__(self, job_id: str, status: JobStatus) -> None:
        super().__init__(f"job {job_id} ended {status.value}")
        self.job_id, self.status = job_id, status


@app.task(name=RUN_JOB, bind=True, ignore_result=False, track_started=True, acks_late=True, throws=(JobFailed,))
def run_job_task(self: Task, job_id: str) -> str:
    """Deliver one job; the task's end says how the job stands in the store (``queue.results``):
    SUCCESS, FAILURE (``JobFailed``) or REVOKED (cancelled), even for a delivery that met a job
    another delivery had finished; none while another worker still runs it."""
    settings = get_settings()
    hard = (self.request.timelimit or (None, None))[0] or hard_limit(settings.job_timeout)
    try:
        runtime = get_runtime(settings)
    except Exception as exc:  # no browser or no Redis in this process: keep the job, try again later
        log.error("worker runtime unavailable (%s); job %s goes back to the queue", exc, job_id)
        raise self.retry(countdown=RUNTIME_RETRY_SECONDS, max_retries=None) from exc
    delivered = runtime.run(job_id, hard, task_id=self.request.id)
    if delivered.outcome is ClaimOutcome.busy:
        # Delivered again while a live run still holds the job (its heartbeat is fresh): look
        # again once that heartbeat would have gone stale, in case its worker is in fact dying.
        # Same task id, so Celery's tools still show one task per job; this delivery states nothing.
        queue = (self.request.delivery_info or {}).get("routing_key") or Priority.normal.value
        self.apply_async((job_id,), task_id=self.request.id, retries=self.request.retries, queue=queue,
                         countdown=stale_after(settings), time_limit=hard)
        raise Ignore()
    status = delivered.status
    if status is None and delivered.outcome is ClaimOutcome.finished:
        status = runtime.standing(job_id)  # a redelivery of a finished job: say how it ended
    if status is JobStatus.cancelled:
        _revoked_as_cancelled(self)
    if status is JobStatus.failed:
        raise JobFailed(job_id, status)
    return delivered.outcome


def _revoked_as_cancelled(task: Task) -> NoReturn:
    """A cancelled job is Celery's REVOKED, as a revoked task is (not SUCCESS, not FAILURE): the
    state in the result backend and the ``task-revoked`` event Flower reads; then nothing else is
    stored for this delivery."""
    task.backend.mark_as_revoked(task.request.id, "cancelled", request=task.request)
    task.send_event("task-revoked", terminated=False, signum=None, expired=False)
    raise Ignore()


@task_revoked.connect
def _revoked(sender: Any = None, request: Any = None, expired: bool = False, **_: Any) -> None:
    """Celery's revoke means the job's cancel (issue 25): ``celery control revoke`` (terminate or not)
    and Flower's Revoke and Terminate. Celery announces a revoke here when it discards a revoked
    message at receipt (a queued job) and when it terminates a running task; a running task revoked
    without terminate is caught by the runtime's look at the revoked set (``WorkerRuntime``). An
    expired message is not a revoke: its job stays queued for the reconciler."""
    if request is None or expired or getattr(sender, "name", None) != RUN_JOB or not request.args:
        return
    cancel_revoked(str(request.args[0]), getattr(request, "id", None))


@setup_logging.connect
def _logging(**_: Any) -> None:
    """browserd's log format instead of Celery's: text, or JSON lines with BROWSERD_LOG_JSON; every
    line of a job carries its id, attempt, step and URL (``config.bind``)."""
    settings = get_settings()
    configure_logging(settings.log_level, json_lines=settings.log_json)


def _uses_prefork(sender: Any) -> bool:
    pool = getattr(sender, "pool_cls", "") or ""
    name = pool if isinstance(pool, str) else f"{pool.__module__}.{pool.__name__}"
    return "prefork" in name


def _runs_jobs(sender: Any) -> bool:
    """Whether this worker consumes a job or session queue (a side consumer of webhooks needs no browser)."""
    try:
        consumed = set(sender.app.amqp.queues.consume_from)
    except AttributeError:
        return True
    return not consumed or bool(consumed & {*QUEUES, SESSIONS_QUEUE})


@worker_init.connect
def _start_in_main_process(sender: Any = None, **_: Any) -> None:
    """threads/solo pools run tasks in this process: start browsers now, before the first job.
    Either way the runtime goes by this worker's Celery node name (prefork children inherit it)."""
    if getattr(sender, "hostname", None):
        name_node(sender.hostname)
    if getattr(sender, "pool_cls", None) and get_implementation(sender.pool_cls) is TaskPool:
        sender.pool_cls = ThreadsPool  # a terminate cancels the job instead of raising NotImplementedError
    if not _uses_prefork(sender) and _runs_jobs(sender):
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
