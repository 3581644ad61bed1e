"""Celery's ``threads`` pool, whose Terminate cancels the job instead of failing.

A thread cannot be killed, so Celery's own pool answers a terminate (Flower's Terminate,
``celery control revoke --terminate``) with ``NotImplementedError ... does not implement kill_job``
and the job ran on (issue 25). Here a terminate returns quietly; Celery then announces the
revoke (its ``task_revoked`` signal), and ``workers.tasks`` records the cancel the way
``browserd cancel`` does: the job stops before its next action. ``browserd worker`` runs this pool
wherever Celery would have run its plain ``threads`` pool (``workers.tasks``, at ``worker_init``).
"""

from __future__ import annotations

import logging

from celery.concurrency.thread import TaskPool

log = logging.getLogger("browserd.worker")


class ThreadsPool(TaskPool):
    def terminate_job(self, pid: int, signal: int | None = None) -> None:
        log.info("terminate asked (signal %s): the job is cancelled instead (a thread cannot be killed)", signal)
