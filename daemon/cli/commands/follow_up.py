"""``browserd follow-up ID "TASK"``: run another task in a finished job's kept session, and wait.

The job must have been submitted with ``options.keep_session``; the follow-up continues in the
same browser context with the same history. Like ``submit --wait``: the run's events as they
happen, then the job (whose result is now the follow-up's); exit 0 if it succeeded, 1 if not.
"""

from __future__ import annotations

import argparse
import sys

from daemon.cli.output import api_command, client, describe_event, exit_code, print_job, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("follow-up", help="run another task in a finished job's kept session and wait for it")
    p.add_argument("job_id")
    p.add_argument("task", help="the next task, in the same browser context with the same history")
    p.add_argument("--no-wait", action="store_true", help="print the run number and return at once")
    p.add_argument("--json", action="store_true", help="print the job as JSON")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    if not args.task.strip():
        print("browserd follow-up: TASK must not be empty", file=sys.stderr)
        return 2
    api = client()
    accepted = api.follow_up(args.job_id, args.task)
    if args.no_wait:
        print(f"{accepted.id} run {accepted.run}")
        return 0
    print(f"job {accepted.id}: follow-up run {accepted.run} started; following it", file=sys.stderr)
    for event in api.follow(accepted.id, after=accepted.last_event_id):
        line = describe_event(event.type, event.data)
        if line:
            print(line, file=sys.stderr, flush=True)
    job = api.get(accepted.id).model_dump(mode="json")
    if args.json:
        print_json(job)
    else:
        print_job(job)
    return exit_code(job)
