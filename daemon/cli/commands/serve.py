"""``browserd serve``: the HTTP API."""

from __future__ import annotations

import argparse

from config import load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the HTTP API (submit, follow, cancel and list jobs)")
    p.add_argument("--host", help="address to bind (default: BROWSERD_API_HOST)")
    p.add_argument("--port", type=int, help="port (default: BROWSERD_API_PORT)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from config import setup_logging
    from daemon.api import create_app
    from daemon.api.exposure import check_exposure
    from daemon.api.server import run as serve

    settings = load_settings()
    setup_logging(settings.log_level, json_lines=settings.log_json)
    # the address actually bound, so the Host check (config.api_hosts) and /mcp judge by it, not by the default
    settings = settings.model_copy(update={"api_host": args.host or settings.api_host,
                                           "api_port": args.port if args.port is not None else settings.api_port})
    check_exposure(settings.api_host, settings)
    serve(create_app(settings), settings)
    return 0
