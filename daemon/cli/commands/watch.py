"""``browserd watch ID``: follow a job's steps and state changes live until it finishes."""

from __future__ import annotations

import argparse
import json

from daemon.cli.output import api_command, client, describe_event, exit_code, print_job, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="follow a job's events until it finishes (however long it is silent)")
    p.add_argument("job_id")
    p.add_argument("--json", action="store_true", help="one JSON object per event, then the final job")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    api.get(args.job_id)  # an unknown job (exit 1) or an API never reached (exit 3) is said at once
    for event in api.follow(args.job_id):
        if args.json:
            print(json.dumps({"id": event.id, "event": event.type, "data": event.data}), flush=True)
        elif (line := describe_event(event.type, event.data)) is not None:
            print(line, flush=True)
    job = api.get(args.job_id).model_dump(mode="json")
    print_json(job) if args.json else print_job(job)
    return exit_code(job)
