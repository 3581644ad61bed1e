"""``browserd batches``: recent batches, newest first, with their progress."""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client, print_json
from workers.jobs.batches.models import BatchRecord


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batches", help="list recent batches, newest first")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    batches = client().batches(limit=args.limit)
    if args.json:
        print_json([b.model_dump(mode="json") for b in batches])
        return 0
    for b in batches:
        print(line(b))
    return 0


def line(b: BatchRecord) -> str:
    """One batch as listings print it (``batches``, ``schedule runs``, ``schedule run``)."""
    schedule = f"  schedule={b.schedule_id}" if b.schedule_id else ""
    return (f"{b.id}  {b.state}  {b.done}/{b.total}  failed={b.counts.failed}  "
            f"created={b.created_at:%Y-%m-%d %H:%M:%S}{schedule}")
