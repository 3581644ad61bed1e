"""``browserd credentials``: named credential sets jobs type from (``"credentials": name``).

    browserd credentials set shop secrets.json --domain shop.example   # {"user": "...", "password": "..."} ('-': stdin)
    browserd credentials list [--tenant NAME] [--json]
    browserd credentials show shop
    browserd credentials delete shop

Values are read from a file or stdin, never from the command line (where ``ps`` and the shell's
history would keep them), and never come back. ``--domain`` binds the set: its secrets are typed only
into pages (and iframes) on those domains. ``--tenant`` is the admin's: act on a tenant's sets.
"""

from __future__ import annotations

import argparse

from daemon.cli.output import UsageError, api_command, client, json_file, print_json
from workers.jobs.secrets.models import CredentialInfo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("credentials", help="credential sets: set, list, show, delete")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    put = actions.add_parser("set", help="create or replace a set from a JSON file of secret name -> value")
    put.add_argument("name")
    put.add_argument("file", help="a JSON object of secret name -> value ('-': read stdin)")
    put.add_argument("--domain", action="append", dest="domains", metavar="DOMAIN",
                     help="where its secrets may be typed (repeat; a domain covers its subdomains); none: anywhere")
    listing = actions.add_parser("list", help="every set: name, secret names, domains (never a value)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = actions.add_parser("show", help="one set's secret names and domains")
    show.add_argument("name")
    gone = actions.add_parser("delete", help="forget a set")
    gone.add_argument("name")
    for each in (put, listing, show, gone):
        each.add_argument("--tenant", help="the admin's: a tenant's sets (default: your own; list: everyone's)")
    p.set_defaults(handler=run)


def _line(info: CredentialInfo) -> str:
    owner = f"  tenant {info.tenant}" if info.tenant else ""
    return f"{info.name}  secrets {', '.join(info.secrets)}  domains {', '.join(info.domains) or 'any'}{owner}"


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "set":
        values = json_file(args.file, "secrets")
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise UsageError(f"{args.file} must hold a JSON object of secret name -> string value")
        print(_line(api.put_credentials(args.name, values, domains=args.domains, tenant=args.tenant)))
    elif args.action == "list":
        sets = api.credentials(tenant=args.tenant)
        if args.json:
            print_json([c.model_dump(mode="json") for c in sets])
        for info in [] if args.json else sets:
            print(_line(info))
    elif args.action == "show":
        print(_line(api.credential(args.name, tenant=args.tenant)))
    else:
        api.delete_credentials(args.name, tenant=args.tenant)
        print(f"deleted {args.name}")
    return 0
