"""``browserd submit "TASK" --start-url URL [--wait]``: queue a job through the API."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from daemon.cli.access import access_fields, add_access_flags
from daemon.cli.job_inputs import add_input_flags, input_fields
from daemon.cli.output import (
    UsageError,
    api_command,
    client,
    exit_code,
    follow,
    json_argument,
    print_job,
    print_json,
)
from daemon.cli.progress import NO_WORKER, WorkerWatch
from workers.jobs.model.status import JobStatus


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="queue a job (an agent task, or a script of actions with --script)")
    p.add_argument("task", nargs="?", help="what the agent should do (omit with --script)")
    p.add_argument("--start-url", help="page opened before the first step")
    p.add_argument("--script", type=Path, help="JSON file holding a list of actions, run with no LLM")
    p.add_argument("--output-schema", metavar="FILE_OR_JSON",
                   help="JSON schema the job's data must satisfy: a file, or the JSON itself")
    p.add_argument("--max-steps", type=int, help="step budget of the agent")
    p.add_argument("--timeout", type=float, help="wall-clock limit in seconds")
    p.add_argument("--keep-session", type=float, metavar="SECONDS",
                   help="keep the browser this long after the job for follow-up tasks (browserd follow-up)")
    p.add_argument("--webhook", metavar="URL", help="POSTed the result when the job finishes (job field webhook_url)")
    p.add_argument("--priority", choices=["high", "normal", "low"], default="normal")
    p.add_argument("--label", action="append", default=[], metavar="K=V", help="tag the job (repeatable)")
    p.add_argument("--idempotency-key", help="submitting the same key again returns the same job")
    p.add_argument("--credentials", metavar="NAME",
                   help="a stored credential set (POST /v1/credentials) the job may type as <secret>name</secret>")
    p.add_argument("--max-concurrent", type=int, metavar="N",
                   help="politeness: jobs at most on this job's domain at once (no looser than the server's)")
    p.add_argument("--min-delay", type=float, metavar="SECONDS",
                   help="politeness: seconds at least between two navigations to one domain")
    p.add_argument("--respect-robots-txt", action="store_true", default=None,
                   help="politeness: refuse navigations the site's robots.txt disallows")
    p.add_argument("--profile", metavar="NAME", help="start from this auth profile (browserd profile import)")
    p.add_argument("--save-profile", metavar="NAME", help="save the job's cookies and localStorage here if it succeeds")
    p.add_argument("--recipe", metavar="NAME", help="replay a saved recipe instead of a TASK (browserd recipe save)")
    p.add_argument("--param", action="append", default=None, metavar="NAME=VALUE", help="a recipe parameter (repeat)")
    add_access_flags(p)
    add_input_flags(p)
    p.add_argument("--wait", action="store_true", help="follow the job's events until it finishes")
    p.add_argument("--json", action="store_true", help="print the job as JSON")
    p.set_defaults(handler=run)


def params_of(items: list[str] | None) -> dict[str, str] | None:
    """``--param NAME=VALUE`` flags as a dict (None when none were given)."""
    if items is None:
        return None
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param {item!r} is not NAME=VALUE")
        params[name] = value
    return params


def build_spec(args: argparse.Namespace) -> dict[str, Any]:
    if sum(x is not None for x in (args.task, args.script, args.recipe)) != 1:
        raise UsageError("submit: give a TASK, --script FILE or --recipe NAME (exactly one)")
    spec: dict[str, Any] = {"priority": args.priority}
    if args.recipe is not None:
        spec["recipe"] = args.recipe
        spec["params"] = params_of(args.param) or {}
    elif args.script is not None:
        try:
            spec["script"] = json.loads(args.script.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"submit: cannot read the script {args.script}: {exc}") from None
    else:
        spec["task"] = args.task
    if args.start_url:
        spec["start_url"] = args.start_url
    spec.update(access_fields(args))
    spec.update(input_fields(args, "submit"))
    if args.output_schema is not None:
        spec["output_schema"] = json_argument("--output-schema", args.output_schema)
    options = {name: value for name, value in (("max_steps", args.max_steps), ("keep_session", args.keep_session))
               if value is not None}  # 0 is sent too: the API says why it is refused
    if options:
        spec["options"] = options
    if args.timeout is not None:
        spec["timeout"] = args.timeout
    if args.webhook is not None:
        spec["webhook_url"] = args.webhook
    if args.idempotency_key:
        spec["idempotency_key"] = args.idempotency_key
    if args.credentials:
        spec["credentials"] = args.credentials
    politeness = {name: value for name, value in (("max_concurrent", args.max_concurrent),
                                                  ("min_delay", args.min_delay),
                                                  ("respect_robots_txt", args.respect_robots_txt)) if value is not None}
    if politeness:
        spec["politeness"] = politeness  # checked by the API (422 naming politeness.<field>)
    if args.profile:
        spec["profile"] = args.profile
    if args.save_profile:
        spec["save_profile"] = args.save_profile
    labels = {}
    for item in args.label:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"submit: --label {item!r} is not K=V")
        labels[key] = value
    if labels:
        spec["labels"] = labels
    return spec


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    job = api.submit(build_spec(args)).model_dump(mode="json")
    if not job.get("created", True):
        print(f"an existing job has this idempotency key: {job['id']}", file=sys.stderr)
    if args.wait:
        queued = job["state"] == JobStatus.queued
        alone = queued and not api.live_workers()  # it would sit there silently
        print(f"job {job['id']} queued; following it" + (f" ({NO_WORKER})" if alone else ""), file=sys.stderr)
        watch = WorkerWatch(client().live_workers, alive=not alone) if queued else None  # and while it waits
        try:
            job = follow(api, job["id"], out=sys.stderr, watch=watch)
        finally:
            if watch is not None:
                watch.close()
    if args.json:
        print_json(job)
    elif args.wait:
        print_job(job)
    else:
        print(job["id"])
    return exit_code(job) if args.wait else 0
