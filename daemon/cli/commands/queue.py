"""``browserd queue purge``: cancel every queued job, as ``browserd cancel`` does for each.

``celery purge`` drops the broker's messages but not browserd's records, so the jobs stay
``queued`` and the reconciler publishes them again (docs/operations.md, "Operating with Celery's
tools"). This cancels them in the job store instead: each ends ``cancelled``, its batch counts it
and its webhook says so, and the messages left in the broker are skipped when a worker takes them.
"""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client
from workers.jobs.model.status import JobStatus

PAGE = 100


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="act on the job queue (purge: cancel every queued job)")
    actions = p.add_subparsers(dest="action", required=True)
    actions.add_parser("purge", help="cancel every queued job (unlike `celery purge`, which the reconciler undoes)")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    seen: set[str] = set()
    cancelled = 0
    while True:  # cancelled jobs leave the queued list, so the first page is always the next one
        fresh = [job for job in api.jobs(state=JobStatus.queued.value, limit=PAGE).jobs if job.id not in seen]
        if not fresh:
            break
        for job in fresh:
            seen.add(job.id)
            if api.cancel(job.id).state == JobStatus.cancelled:
                cancelled += 1
    started = len(seen) - cancelled
    print(f"cancelled {cancelled} queued jobs" + (f"; {started} started meanwhile (a running one stops before "
                                                  "its next action)" if started else ""))
    return 0
