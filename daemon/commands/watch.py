"""``browserd watch ID``: follow a job's steps and state changes live until it finishes."""

from __future__ import annotations

import argparse

from daemon.cliutil import api_command, client, exit_code, follow, print_job


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="follow a job's events until it finishes")
    p.add_argument("job_id")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    job = follow(client(), args.job_id)
    print_job(job)
    return exit_code(job)
