"""``browserd config``: the effective settings, secrets masked."""

from __future__ import annotations

import argparse
import json

from config import env_name, load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="print the effective settings (secrets masked)")
    p.add_argument("--json", action="store_true", help="print JSON instead of NAME=value lines")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    values = load_settings().masked()
    if args.json:
        print(json.dumps(values, indent=2, default=str))
    else:
        for field, value in values.items():
            shown = ",".join(value) if isinstance(value, list) else ("" if value is None else value)
            print(f"{env_name(field)}={shown}")
    return 0
