"""``browserd jobs``: list jobs, newest first, by state, label and schedule."""

from __future__ import annotations

import argparse
import shlex

from daemon.cli.output import UsageError, api_command, client, print_json, summary
from workers.jobs.ids import is_id
from workers.jobs.model.status import JobStatus


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="list jobs, newest first")
    p.add_argument("--state", choices=[s.value for s in JobStatus])
    p.add_argument("--label", action="append", default=[], metavar="K=V", help="only jobs with this label")
    p.add_argument("--schedule", metavar="ID", help="only jobs created by this schedule's runs")
    p.add_argument("--tenant", metavar="NAME", help="only this tenant's jobs (the admin's filter)")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor", type=int, help="continue from a previous page's cursor")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    bad = [item for item in args.label if "=" not in item.strip("=")]
    if bad:
        raise UsageError(f"jobs: --label {bad[0]!r} is not K=V")
    if args.schedule is not None and not is_id(args.schedule):
        raise UsageError(f"jobs: --schedule {args.schedule!r} is not a schedule id (32 lowercase hex "
                         "digits, as `browserd schedule list` shows)")
    labels = dict(item.partition("=")[::2] for item in args.label)
    page = client().jobs(state=args.state, labels=labels or None, schedule=args.schedule, limit=args.limit,
                         cursor=args.cursor, tenant=args.tenant)
    if args.json:
        print_json(page.model_dump(mode="json"))
        return 0
    for job in page.jobs:
        print(summary(job.model_dump(mode="json")))
    if not page.jobs:
        filtered = args.state or args.label or args.schedule or args.cursor is not None
        print("no jobs" + (" match these filters" if filtered else " yet: submit one with 'browserd submit'"))
    if page.next_cursor is not None:
        print(f"more: {next_page_command(args, page.next_cursor)}")
    return 0


def next_page_command(args: argparse.Namespace, cursor: int) -> str:
    """The same listing, one page further (every filter kept)."""
    words = ["browserd", "jobs"]
    if args.state:
        words += ["--state", args.state]
    for label in args.label:
        words += ["--label", label]
    if args.schedule:
        words += ["--schedule", args.schedule]
    words += ["--limit", str(args.limit), "--cursor", str(cursor)]
    return shlex.join(words)
