"""The Celery queues and task names browserd uses: the API publishes by these names without
importing the code that runs the tasks (``publish``); the worker modules register them. Pure."""

from __future__ import annotations

import uuid

from workers.jobs.model.status import Priority

QUEUES = tuple(p.value for p in Priority)  # one queue per priority, consumed high first
WEBHOOK_QUEUE = "webhooks"  # deliveries only, so retries never wait behind jobs
MAINTENANCE_QUEUE = "maintenance"  # the reconciler: consumed, like webhooks, beside the job slots
SESSIONS_QUEUE = "sessions"  # interactive sessions: consumed by job workers, each session holding a job slot
SIDE_QUEUES = (WEBHOOK_QUEUE, MAINTENANCE_QUEUE)  # what `browserd worker`'s side consumer takes
RUN_JOB = "browserd.run_job"
RECONCILE = "browserd.reconcile"
DELIVER_WEBHOOK = "browserd.deliver_webhook"
RUN_SCHEDULE = "browserd.run_schedule"
RUN_SESSION = "browserd.run_session"
TASK_MODULES = ["workers.tasks", "workers.webhooks", "workers.scheduled", "workers.maintenance",
                "workers.session_tasks"]  # loaded by a worker at start


def task_id_of(job_id: str) -> str:
    """A job's Celery task id: its job id (uuid4 hex) in uuid form, for every message of the job (the
    submit, a batch's, the reconciler's re-sends), so Flower and ``celery inspect`` show one task per job."""
    try:
        return str(uuid.UUID(job_id))
    except ValueError:
        return job_id
