"""Publishing tasks by name: a job, a webhook delivery, an interactive session (blocking I/O: call
these off the event loop)."""

from __future__ import annotations

from typing import Any

from workers.jobs.model.status import Priority
from workers.jobs.queue.app import app
from workers.jobs.queue.limits import hard_limit
from workers.jobs.queue.names import (
    DELIVER_WEBHOOK,
    RUN_JOB,
    RUN_SESSION,
    SESSIONS_QUEUE,
    WEBHOOK_QUEUE,
    task_id_of,
)


def send_job(job_id: str, priority: Priority, soft_limit: float, retries: int = 0) -> None:
    """Publish a job to its priority's queue, with its soft and hard time limits (blocking I/O).

    Its task id is the job id (``task_id_of``) on every message of the job; ``retries`` says how many
    attempts it had before this message (the reconciler's re-send), so Celery's tools show one task
    and its retries, as the job's attempts."""
    app.send_task(RUN_JOB, (job_id,), task_id=task_id_of(job_id), retries=retries, queue=priority.value,
                  soft_time_limit=soft_limit, time_limit=hard_limit(soft_limit))


def send_webhook(url: str, event: str, payload: dict[str, Any], delivery_id: str | None = None) -> None:
    """Queue one webhook delivery on its own queue (blocking I/O: call it off the event loop).

    ``delivery_id`` names the notification (``webhooks.outbox``): however often it is queued, the
    receiver gets it once.
    """
    app.send_task(DELIVER_WEBHOOK, (url, event, payload), {"delivery_id": delivery_id}, queue=WEBHOOK_QUEUE)


def send_session(session_id: str, max_seconds: float) -> None:
    """Hand an interactive session to a worker (blocking I/O). The message is acknowledged when a
    worker takes it: a session is not resumable, so one whose worker dies is gone, never redelivered."""
    app.send_task(RUN_SESSION, (session_id,), queue=SESSIONS_QUEUE, time_limit=hard_limit(max_seconds))
