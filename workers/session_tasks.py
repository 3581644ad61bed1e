"""``browserd.run_session``: one interactive session served by this worker (``session_host``).

The message carries only the session id; the record in Redis says what to open. It is
acknowledged on receipt (``acks_late=False``): a session lives in one browser context and cannot
move, so a worker that dies takes its sessions with it (their records expire, their callers get
404) instead of a redelivery opening a blank one under the same id.
"""

from __future__ import annotations

import logging

from typing import Any

from celery import Task
from celery.signals import worker_shutting_down

from config import get_settings
from workers.jobs.queue.app import app
from workers.jobs.queue.limits import hard_limit
from workers.jobs.queue.names import RUN_SESSION
from workers.runtime import end_sessions, get_runtime

log = logging.getLogger("browserd.worker")


@app.task(name=RUN_SESSION, bind=True, ignore_result=True, acks_late=False)
def run_session_task(self: Task, session_id: str) -> str:
    settings = get_settings()
    try:
        runtime = get_runtime(settings)
    except Exception as exc:  # the opener times out and says no worker took the session
        log.error("worker runtime unavailable (%s); session %s not opened", exc, session_id)
        return "unavailable"
    return runtime.serve_session(session_id, hard_limit(settings.session_max_seconds))


@worker_shutting_down.connect
def _end_sessions(**_: Any) -> None:
    """A warm shutdown waits for running tasks: a session's would last until its idle timeout."""
    end_sessions()
