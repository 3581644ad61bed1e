"""``browserd tenant``: the operator's tenant keys (needs the admin token, BROWSERD_API_TOKEN).

    browserd tenant create acme [--network 10.1.0.0/16] [--domain acme.example] [--max-steps 50] [--timeout 600]
    browserd tenant list [--json]
    browserd tenant limits acme --max-running 4 --max-queued 1000 --max-batch-size 500 --max-jobs-per-day 20000 --max-sessions 2
        --max-artifact-bytes 10000000000 --max-cost-usd-per-day 20 --max-cost-usd-per-month 400
    browserd tenant usage acme       # queued, running, held by fair dispatch, submitted today, sessions
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
    p = sub.add_parser("tenant", help="tenant keys (admin): create, list, limits, usage, rotate, revoke")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    make = actions.add_parser("create", help="a tenant and its key (printed once)")
    make.add_argument("name", help="lowercase letters, digits, '-' and '_'")
    _limit_flags(make)
    change = actions.add_parser("limits", help="replace a tenant's ceilings and quotas (its key stays)")
    change.add_argument("name")
    _limit_flags(change)
    usage = actions.add_parser("usage", help="what a tenant uses now, beside its quotas")
    usage.add_argument("name")
    usage.add_argument("--json", action="store_true", help="print JSON")
    listing = actions.add_parser("list", help="every tenant: name, key id, revoked, limits (never a key)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    for action, text in (("rotate", "a new key (printed once); the old one fails at once"),
                         ("revoke", "the key fails at once everywhere; the tenant's objects stay")):
        one = actions.add_parser(action, help=text)
        one.add_argument("name")
        one.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def _limit_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--network", action="append", default=[], metavar="CIDR",
                   help="a private network its jobs may open (repeat; inside BROWSERD_ALLOWED_NETWORKS; default none)")
    p.add_argument("--domain", action="append", default=None, metavar="DOMAIN",
                   help="a domain its jobs may visit (repeat; default any)")
    p.add_argument("--max-steps", type=int, help="most agent steps one job may ask for")
    p.add_argument("--timeout", type=float, help="most seconds one job may run")
    p.add_argument("--proxy-pool", action="append", default=[], metavar="NAME",
                   help="one of BROWSERD_PROXY_POOLS its jobs may name (repeat; default none)")
    for flag, text in QUOTA_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", type=int, metavar="N", help=text)
    p.add_argument("--max-cost-usd-per-day", type=float, metavar="USD",
                   help="budget: USD its jobs' LLM calls may cost per UTC day (429 past it)")
    p.add_argument("--max-cost-usd-per-month", type=float, metavar="USD",
                   help="budget: USD its jobs' LLM calls may cost per UTC month (429 past it)")
    p.add_argument("--json", action="store_true", help="print JSON")


QUOTA_FLAGS = {  # TenantLimits' quota fields: --max-running ...
    "max_running": "quota: most of its jobs running at once (the rest wait their turn)",
    "max_queued": "quota: most of its jobs queued at once (429 past it)",
    "max_batch_size": "quota: most jobs in one batch (429 past it)",
    "max_jobs_per_day": "quota: most jobs submitted per UTC day (429 past it)",
    "max_sessions": "quota: most interactive sessions open at once (429 past it)",
    "max_artifact_bytes": "quota: bytes its jobs' artifacts may hold in the store (429 past it)",
}


def _limits(args: argparse.Namespace) -> TenantLimits:
    return TenantLimits(allowed_networks=args.network, allowed_domains=args.domain, max_steps=args.max_steps,
                        timeout=args.timeout, max_cost_usd_per_day=args.max_cost_usd_per_day,
                        proxy_pools=args.proxy_pool,
                        max_cost_usd_per_month=args.max_cost_usd_per_month,
                        **{name: getattr(args, name) for name in QUOTA_FLAGS})


def _line(t: TenantInfo) -> str:
    limits = t.limits
    parts = [f"networks {','.join(limits.allowed_networks) or 'none'}",
             f"domains {','.join(limits.allowed_domains) if limits.allowed_domains is not None else 'any'}"]
    parts += [f"max_steps {limits.max_steps}"] if limits.max_steps is not None else []
    parts += [f"timeout {limits.timeout:g}s"] if limits.timeout is not None else []
    parts += [f"proxy_pools {','.join(limits.proxy_pools)}"] if limits.proxy_pools else []
    parts += [f"{name} {getattr(limits, name)}" for name in QUOTA_FLAGS if getattr(limits, name) is not None]
    parts += [f"{name} {getattr(limits, name):g}" for name in ("max_cost_usd_per_day", "max_cost_usd_per_month")
              if getattr(limits, name) is not None]
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
    if args.action in ("create", "limits"):
        try:
            limits = _limits(args)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err.get("loc", ()))
            print(f"browserd: {where + ': ' if where else ''}{err['msg'].removeprefix('Value error, ')}", file=sys.stderr)
            return EXIT_USAGE
        if args.action == "create":
            _print(api.create_tenant(args.name, limits=limits), args.json)
        else:
            _print(api.set_tenant_limits(args.name, limits), args.json)
    elif args.action == "usage":
        used = api.tenant_usage(args.name)
        if args.json:
            print_json(used.model_dump(mode="json"))
        else:
            print("  ".join(f"{name} {value}" for name, value in used.model_dump().items()))
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
