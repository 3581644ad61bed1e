"""``browserd jobs``: list jobs, newest first, by state and label."""

from __future__ import annotations

import argparse

from daemon.cliutil import api_command, client, print_json, summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="list jobs, newest first")
    p.add_argument("--state", choices=["queued", "running", "succeeded", "failed", "cancelled"])
    p.add_argument("--label", action="append", default=[], metavar="K=V", help="only jobs with this label")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor", type=int, help="continue from a previous page's cursor")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    page = client().jobs(state=args.state, label=args.label or None, limit=args.limit, cursor=args.cursor)
    if args.json:
        print_json(page)
        return 0
    for job in page["jobs"]:
        print(summary(job))
    if page.get("next_cursor") is not None:
        print(f"more: browserd jobs --cursor {page['next_cursor']}")
    return 0
