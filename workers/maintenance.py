"""``browserd.reconcile``: what beat sends every ``BROWSERD_RECONCILE_INTERVAL`` seconds.

The pass itself is the job kernel's (``workers.jobs.reconcile``); this task gives it a short-lived
loop and Redis connection on a worker thread. It runs on the ``maintenance`` queue, which
``browserd worker``'s side consumer takes, so a backlog of jobs never delays it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from config import get_settings
from workers.jobs.queue.app import app
from workers.jobs.queue.names import RECONCILE
from workers.jobs.reconcile import Reconciler
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.reconcile")


@app.task(name=RECONCILE, ignore_result=True)
def reconcile() -> dict[str, Any] | None:
    return asyncio.run(reconcile_once())


async def reconcile_once() -> dict[str, Any] | None:
    settings = get_settings()
    store = JobStore(connect(settings.redis_url or ""), result_ttl=settings.result_ttl)
    try:
        report = await Reconciler(store, settings).run_once()
    finally:
        await store.redis.aclose()
    return vars(report) if report else None
