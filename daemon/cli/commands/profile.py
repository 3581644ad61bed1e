"""``browserd profile``: auth profiles (a browser storage state jobs start from and save to).

    browserd profile import acme state.json      # a Playwright storageState file (or - for stdin)
    browserd profile export acme [--out FILE]    # the same format back (it holds the login: keep it safe)
    browserd profile list
    browserd profile delete acme
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from daemon.cli.output import api_command, client, json_file, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="auth profiles: import, export, list, delete")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    put = actions.add_parser("import", help="create or replace a profile from a Playwright storage state JSON file")
    put.add_argument("name")
    put.add_argument("file", help="the storage state JSON ('-': read stdin)")
    put.add_argument("--if-version", type=int, help="write only over this version (0: only a new profile)")
    out = actions.add_parser("export", help="print (or write) a profile's storage state in Playwright's format")
    out.add_argument("name")
    out.add_argument("--out", type=Path, help="write it to this file (created readable by you only)")
    listing = actions.add_parser("list", help="every profile: name, version, cookies, origins, last write")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument("--tenant", help="the admin's: one tenant's profiles (default: everyone's)")
    gone = actions.add_parser("delete", help="forget a profile")
    gone.add_argument("name")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "import":
        state = json_file(args.file, "a storage state")
        info = api.put_profile(args.name, state, if_version=args.if_version)
        print(f"{info.name}  version {info.version}  {info.cookies} cookies  {info.origins} origins")
    elif args.action == "export":
        text = api.export_profile(args.name).model_dump_json(exclude_none=True, indent=2)
        if args.out is None:
            print(text)
        else:
            fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(text + "\n")
    elif args.action == "list":
        profiles = api.profiles(tenant=args.tenant)
        if args.json:
            print_json([p.model_dump(mode="json") for p in profiles])
        for p in [] if args.json else profiles:
            owner = f"  tenant {p.tenant}" if p.tenant else ""
            print(f"{p.name}  version {p.version}  {p.cookies} cookies  {p.origins} origins  "
                  f"updated {p.updated_at:%Y-%m-%d %H:%M:%S}Z{owner}")
    else:
        api.delete_profile(args.name)
        print(f"deleted {args.name}")
    return 0
