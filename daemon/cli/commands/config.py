"""``browserd config``: the effective settings, secrets masked."""

from __future__ import annotations

import argparse
import json

from config import env_name, load_settings, settings_table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="print the effective settings (secrets masked)")
    p.add_argument("--json", action="store_true", help="print JSON instead of NAME=value lines")
    p.add_argument("--markdown", action="store_true", help="print the table of every setting (docs/reference/configuration.md)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.markdown:
        print(settings_table())
        return 0
    values = load_settings().masked()
    if args.json:
        print(json.dumps(values, indent=2, default=str))
    else:
        for field, value in values.items():
            shown = ",".join(value) if isinstance(value, list) else ("" if value is None else value)
            print(f"{env_name(field)}={shown}")
    return 0
