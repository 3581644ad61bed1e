"""``browserd submit "TASK" --start-url URL [--wait]``: queue a job through the API."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from daemon.cliutil import api_command, client, exit_code, follow, print_job, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="queue a job (an agent task, or a script of actions with --script)")
    p.add_argument("task", nargs="?", help="what the agent should do (omit with --script)")
    p.add_argument("--start-url", help="page opened before the first step")
    p.add_argument("--script", type=Path, help="JSON file holding a list of actions, run with no LLM")
    p.add_argument("--max-steps", type=int, help="step budget of the agent")
    p.add_argument("--timeout", type=float, help="wall-clock limit in seconds")
    p.add_argument("--priority", choices=["high", "normal", "low"], default="normal")
    p.add_argument("--label", action="append", default=[], metavar="K=V", help="tag the job (repeatable)")
    p.add_argument("--idempotency-key", help="submitting the same key again returns the same job")
    p.add_argument("--wait", action="store_true", help="follow the job's events until it finishes")
    p.add_argument("--json", action="store_true", help="print the job as JSON")
    p.set_defaults(handler=run)


def build_spec(args: argparse.Namespace) -> dict[str, Any]:
    if (args.task is None) == (args.script is None):
        raise SystemExit("browserd submit: give a TASK or --script FILE (exactly one)")
    spec: dict[str, Any] = {"priority": args.priority}
    if args.script is not None:
        try:
            spec["script"] = json.loads(args.script.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"browserd submit: cannot read the script {args.script}: {exc}") from None
    else:
        spec["task"] = args.task
    if args.start_url:
        spec["start_url"] = args.start_url
    if args.max_steps:
        spec["options"] = {"max_steps": args.max_steps}
    if args.timeout:
        spec["timeout"] = args.timeout
    if args.idempotency_key:
        spec["idempotency_key"] = args.idempotency_key
    labels = {}
    for item in args.label:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"browserd submit: --label {item!r} is not K=V")
        labels[key] = value
    if labels:
        spec["labels"] = labels
    return spec


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    job = api.submit(build_spec(args))
    if not job.get("created", True):
        print(f"an existing job has this idempotency key: {job['id']}", file=sys.stderr)
    if args.wait:
        print(f"job {job['id']} queued; following it", file=sys.stderr)
        job = follow(api, job["id"], out=sys.stderr)
    if args.json:
        print_json(job)
    elif args.wait:
        print_job(job)
    else:
        print(job["id"])
    return exit_code(job) if args.wait else 0
