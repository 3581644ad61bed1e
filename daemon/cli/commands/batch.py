"""``browserd batch jobs.jsonl [--wait]``: submit many jobs at once, optionally following them.

``browserd batch --cancel ID`` cancels a batch's unfinished jobs; ``browserd batch --attach ID``
follows a batch submitted earlier (from another shell, a schedule, the API).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from daemon.cli.output import EXIT_FAILED, EXIT_USAGE, api_command, client, print_json
from daemon.cli.progress import follow_batch


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="submit a batch of jobs (JSONL or a JSON array; '-' reads stdin)")
    p.add_argument("file", nargs="?", help="job specs: JSONL (one per line) or a JSON array/object; '-' for stdin")
    p.add_argument("--defaults", help="JSON object merged under every spec (e.g. '{\"timeout\": 60}')")
    p.add_argument("--webhook", help="URL POSTed once the whole batch finished")
    p.add_argument("--wait", action="store_true", help="show progress until every job finished")
    p.add_argument("--cancel", metavar="BATCH_ID", help="cancel that batch's unfinished jobs instead")
    p.add_argument("--attach", metavar="BATCH_ID", help="follow an existing batch's progress (implies --wait)")
    p.add_argument("--json", action="store_true", help="print the batch record as JSON")
    p.set_defaults(handler=run)


def body_of(args: argparse.Namespace) -> bytes:
    raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    if not (args.defaults or args.webhook):
        return raw
    header = {"defaults": json.loads(args.defaults) if args.defaults else {}}
    if args.webhook:
        header["webhook_url"] = args.webhook
    text = raw.decode().strip()
    if text.startswith("["):  # a JSON array: wrap it, keeping its items
        return json.dumps({"jobs": json.loads(text), **header}).encode()
    return (json.dumps(header) + "\n" + text + "\n").encode()


@api_command
def run(args: argparse.Namespace) -> int:
    given = [name for name in ("file", "cancel", "attach") if getattr(args, name)]
    if len(given) != 1:
        print("browserd batch: give a FILE to submit, or --cancel ID, or --attach ID (exactly one)", file=sys.stderr)
        return EXIT_USAGE
    api = client()
    if args.cancel:
        batch = api.cancel_batch(args.cancel)
    elif args.attach:
        batch = api.batch(args.attach)
    else:
        try:
            body = body_of(args)
        except (OSError, ValueError) as exc:
            print(f"browserd batch: cannot read {args.file}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        batch = api.submit_batch(body)
        print(f"batch {batch.id}: {batch.total} jobs queued", file=sys.stderr)
    wait = args.wait or bool(args.attach)
    if wait:
        batch = follow_batch(lambda: api.batch(batch.id), workers=api.live_workers)
        counts = batch.counts
        print(f"done: {counts.succeeded} succeeded, {counts.failed} failed, {counts.cancelled} cancelled; "
              f"results: browserd results {batch.id}", file=sys.stderr)
    if args.json:
        print_json(batch.model_dump(mode="json"))
    else:
        print(batch.id)
    return EXIT_FAILED if wait and (batch.counts.failed or batch.counts.cancelled) else 0
