"""``browserd tenant``: the operator's tenant keys (needs the admin token, BROWSERD_API_TOKEN).

    browserd tenant create acme [--network 10.1.0.0/16] [--domain acme.example] [--max-steps 50] [--timeout 600]
    browserd tenant list [--json]
    browserd tenant rotate acme      # a new key; the old one fails at once
    browserd tenant revoke acme      # the key fails at once everywhere; the tenant's objects stay

``create`` and ``rotate`` print the key once: it is kept only hashed, so copy it now.
"""

from __future__ import annotations

import argparse
import sys

from pydantic import ValidationError

from daemon.cli.output import EXIT_USAGE, api_command, client, print_json
from workers.jobs.tenants.models import TenantInfo, TenantKey, TenantLimits


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tenant", help="tenant keys (admin): create, list, rotate, revoke")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    make = actions.add_parser("create", help="a tenant and its key (printed once)")
    make.add_argument("name", help="lowercase letters, digits, '-' and '_'")
    make.add_argument("--network", action="append", default=[], metavar="CIDR",
                      help="a private network its jobs may open (repeat; inside BROWSERD_ALLOWED_NETWORKS; default none)")
    make.add_argument("--domain", action="append", default=None, metavar="DOMAIN",
                      help="a domain its jobs may visit (repeat; default any)")
    make.add_argument("--max-steps", type=int, help="most agent steps one job may ask for")
    make.add_argument("--timeout", type=float, help="most seconds one job may run")
    make.add_argument("--json", action="store_true", help="print JSON")
    listing = actions.add_parser("list", help="every tenant: name, key id, revoked, limits (never a key)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    for action, text in (("rotate", "a new key (printed once); the old one fails at once"),
                         ("revoke", "the key fails at once everywhere; the tenant's objects stay")):
        one = actions.add_parser(action, help=text)
        one.add_argument("name")
        one.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def _line(t: TenantInfo) -> str:
    limits = t.limits
    parts = [f"networks {','.join(limits.allowed_networks) or 'none'}",
             f"domains {','.join(limits.allowed_domains) if limits.allowed_domains is not None else 'any'}"]
    parts += [f"max_steps {limits.max_steps}"] if limits.max_steps is not None else []
    parts += [f"timeout {limits.timeout:g}s"] if limits.timeout is not None else []
    return f"{t.name}  key {t.key_id}  {'REVOKED  ' if t.revoked else ''}{'  '.join(parts)}"


def _print(answer: TenantInfo, as_json: bool) -> None:
    if as_json:
        print_json(answer.model_dump(mode="json"))
        return
    print(_line(answer))
    if isinstance(answer, TenantKey):
        print(answer.key)
        print("the key is shown only now: give it to the tenant (their BROWSERD_API_TOKEN or --token; over HTTP, "
              "Authorization: Bearer <key>)", file=sys.stderr)


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "create":
        try:
            limits = TenantLimits(allowed_networks=args.network, allowed_domains=args.domain,
                                  max_steps=args.max_steps, timeout=args.timeout)
        except ValidationError as exc:
            print(f"browserd: {exc.errors()[0]['msg'].removeprefix('Value error, ')}", file=sys.stderr)
            return EXIT_USAGE
        _print(api.create_tenant(args.name, limits=limits), args.json)
    elif args.action == "list":
        tenants = api.tenants()
        if args.json:
            print_json([t.model_dump(mode="json") for t in tenants])
        for t in [] if args.json else tenants:
            print(_line(t))
    elif args.action == "rotate":
        _print(api.rotate_tenant(args.name), args.json)
    else:
        _print(api.revoke_tenant(args.name), args.json)
    return 0
