"""The worker's Celery app: the job kernel's app (``workers.jobs.queue.app``) with browserd's tasks
registered, for ``celery -A workers.celery_app worker`` and ``browserd worker``."""

from workers import scheduled, session_tasks, tasks, webhooks
from workers.jobs.queue.app import app, broker_url
from workers.jobs.queue.limits import check_limits

__all__ = ["app", "broker_url", "check_limits", "scheduled", "session_tasks", "tasks", "webhooks"]
