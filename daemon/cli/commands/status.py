"""``browserd status ID``: a job's state, progress and result."""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client, exit_code, print_job, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show a job's state, progress and result")
    p.add_argument("job_id")
    p.add_argument("--json", action="store_true", help="print the whole record as JSON")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    job = client().get(args.job_id).model_dump(mode="json")
    print_json(job) if args.json else print_job(job)
    return exit_code(job)
