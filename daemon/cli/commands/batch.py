"""``browserd batch jobs.jsonl [--wait]``: submit many jobs at once, optionally following them.

``browserd batch --cancel ID`` cancels a batch's unfinished jobs; ``browserd batch --attach ID``
follows a batch submitted earlier (from another shell, a schedule, the API).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from daemon.cli.access import access_fields, add_access_flags
from daemon.cli.output import EXIT_FAILED, EXIT_USAGE, api_command, client, print_json
from daemon.cli.progress import follow_batch
from workers.jobs.errors import SpecError
from workers.jobs.specs.batch_body import merged, parse_body


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="submit a batch of jobs (JSONL or a JSON array; '-' reads stdin)")
    p.add_argument("file", nargs="?", help="job specs: JSONL (one per line) or a JSON array/object; '-' for stdin")
    p.add_argument("--defaults", help="JSON object merged under every spec (e.g. '{\"timeout\": 60}')")
    p.add_argument("--webhook", help="URL POSTed once the whole batch finished")
    p.add_argument("--wait", action="store_true", help="show progress until every job finished")
    p.add_argument("--cancel", metavar="BATCH_ID", help="cancel that batch's unfinished jobs instead")
    p.add_argument("--attach", metavar="BATCH_ID", help="follow an existing batch's progress (implies --wait)")
    p.add_argument("--json", action="store_true", help="print the batch record as JSON")
    add_access_flags(p, every_job=True)
    p.set_defaults(handler=run)


class FlagError(ValueError):
    """A flag's value is wrong (not the batch file): the message names the flag."""


def flag_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """``--defaults`` with ``--allow``/``--deny``/``--allow-network`` over it."""
    defaults: Any = {}
    if args.defaults:
        try:
            defaults = json.loads(args.defaults)
        except ValueError as exc:
            raise FlagError(f"--defaults is not JSON: {exc}") from None
        if not isinstance(defaults, dict):
            raise FlagError("--defaults must be a JSON object of job spec fields, e.g. '{\"timeout\": 60}'")
    return {**defaults, **access_fields(args)}


def body_of(args: argparse.Namespace, raw: bytes) -> bytes:
    """The body to send: the file as it is, or, with flags for every job, the file read (any of its
    forms, a JSONL header line included) and sent as one object whose defaults are the file's with
    the flags' over them (key by key) and whose webhook is ``--webhook`` or the file's."""
    extra = flag_defaults(args)
    if not (extra or args.webhook):
        return raw
    request = parse_body(raw)  # a SpecError names the file's bad part
    body = {"jobs": request.jobs, "defaults": merged(request.defaults, extra), "mode": request.mode,
            "webhook_url": args.webhook or request.webhook_url}
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


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
            raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
        except OSError as exc:
            print(f"browserd batch: cannot read {args.file}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            body = body_of(args, raw)
        except FlagError as exc:
            print(f"browserd batch: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except SpecError as exc:
            print(f"browserd batch: {args.file}: {exc}", file=sys.stderr)
            return EXIT_FAILED
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
