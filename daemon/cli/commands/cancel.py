"""``browserd cancel ID``: a queued job never starts; a running one stops before its next action; a
finished job's kept session is closed."""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client, summary
from workers.jobs.model.status import FINAL_STATES, JobStatus


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cancel", help="cancel a queued or running job")
    p.add_argument("job_id")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    job = client().cancel(args.job_id).model_dump(mode="json")
    if job["state"] == JobStatus.cancelled:
        note = ""
    elif job["state"] in FINAL_STATES:
        note = "  (it had finished; its kept session is closed)"
    else:
        note = "  (cancel requested; it stops before its next action)"
    print(summary(job) + note)
    return 0
