"""Celery's view of a job, kept true to the job store: the task state Flower, ``celery result`` and
``AsyncResult`` show (issue 25, item 6).

A job is one Celery task whose id is the job id (``names.task_id_of``): its submit, its batch's
message and every re-send by the reconciler carry it, a re-send as a retry of that task
(``retries`` = attempts already made). The job store stays the truth; Celery's result backend (this
Redis: ``celery-task-meta-<task id>``, kept ``BROWSERD_RESULT_TTL``) holds the state of its end:

======================  ==========================================
the job                 Celery's state
======================  ==========================================
running                 STARTED
succeeded               SUCCESS
failed                  FAILURE (``JobFailed``)
cancelled               REVOKED (also when cancelled while queued)
sent again (reconciler) RETRY, until a worker takes it
======================  ==========================================

The worker's task writes the states of what it runs (``workers.tasks``); what ends or re-sends a
job outside a task (a queued job cancelled by ``browserd cancel``, ``browserd queue purge`` or a
batch cancel; the reconciler's re-send) writes them here, and announces the same as a task event,
because Flower reads events, not the backend. Both are best effort: the job's own record is written
first and never waits on them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery.backends.redis import RedisBackend, SentinelBackend

from workers.jobs.queue.app import app
from workers.jobs.queue.names import task_id_of

log = logging.getLogger("browserd.queue")


class StatesBackend(RedisBackend):
    """Celery's Redis result backend, written and read by Celery's tools only: nothing in browserd
    waits on a task's result, so sending a task subscribes to nothing (Celery's own Redis backend
    subscribes to the result of every task a process sends, for a ``get`` that never comes)."""

    def on_task_call(self, producer: Any, task_id: str) -> None:
        return None


class SentinelStatesBackend(SentinelBackend):
    """The same, on a Redis behind Sentinel (``BROWSERD_REDIS_URL=sentinel://...``): Celery's Sentinel
    backend follows the master through a fail-over; ``master_name`` comes in its transport options."""

    def on_task_call(self, producer: Any, task_id: str) -> None:
        return None


def mark_revoked(job_ids: Iterable[str], reason: str) -> None:
    """Queued jobs the store cancelled outright: REVOKED in the backend and a ``task-revoked`` event
    (blocking I/O: call it off the event loop). Never raises: the jobs are cancelled whatever Celery says."""
    ids = [task_id_of(job_id) for job_id in job_ids]
    if not ids or not app.conf.result_backend:
        return
    try:
        with app.events.default_dispatcher() as dispatcher:
            for task_id in ids:
                app.backend.mark_as_revoked(task_id, reason)
                dispatcher.send("task-revoked", uuid=task_id, terminated=False, signum=None, expired=False)
    except Exception as exc:
        log.warning("Celery's view of %d cancelled jobs not updated: %s: %s", len(ids), type(exc).__name__, exc)


def mark_retried(job_id: str, retries: int, reason: str) -> None:
    """A job sent again by the reconciler: RETRY in the backend and a ``task-retried`` event for its
    task (blocking I/O). Never raises."""
    task_id = task_id_of(job_id)
    if not app.conf.result_backend:
        return
    try:
        app.backend.mark_as_retry(task_id, RuntimeError(reason))
        with app.events.default_dispatcher() as dispatcher:
            dispatcher.send("task-retried", uuid=task_id, exception=reason, traceback=None, retries=retries)
    except Exception as exc:
        log.warning("Celery's view of job %s not updated: %s: %s", job_id, type(exc).__name__, exc)
