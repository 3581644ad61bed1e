"""``browserd webhooks``: deliveries given up after their last retry; list them, redeliver one or all.

A receiver down longer than ``BROWSERD_WEBHOOK_RETRY_SECONDS`` misses the notifications sent
meanwhile; each is kept, and once the receiver is back ``browserd webhooks redeliver --all`` sends
them again (with their delivery ids, so a receiver that got one already dedupes it).
"""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("webhooks", help="webhook deliveries given up after their last retry: list, redeliver")
    actions = p.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("given-up", help="list given-up deliveries, newest first")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument("--json", action="store_true")
    again = actions.add_parser("redeliver", help="queue given-up deliveries again (the receiver is back)")
    which = again.add_mutually_exclusive_group(required=True)
    which.add_argument("delivery_id", nargs="?", help="one delivery (as `browserd webhooks given-up` lists it)")
    which.add_argument("--all", action="store_true", help="every given-up delivery")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "given-up":
        deliveries = api.given_up_webhooks(limit=args.limit)
        if args.json:
            print_json([d.model_dump(mode="json") for d in deliveries])
            return 0
        for d in deliveries:
            print(f"{d.delivery_id}  {d.event}  {d.url}  given up {d.given_up_at:%Y-%m-%d %H:%M:%S} after "
                  f"{d.attempts} attempts: {d.error}")
        return 0
    if args.all:
        print(f"redelivering {api.redeliver_webhooks()} webhook deliveries")
    else:
        print(f"redelivering {api.redeliver_webhook(args.delivery_id).delivery_id}")
    return 0
