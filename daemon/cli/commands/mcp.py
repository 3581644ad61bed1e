"""``browserd mcp``: an MCP server on stdio for desktop AI clients, talking to the API.

The same tools are served over streamable HTTP by ``browserd serve`` at ``/mcp``.

``daemon.mcp`` is imported when the command runs, not when the CLI registers it: the ``mcp``
library takes about half a second to import, which every other command (and every ``browserd
worker``) would pay at start for nothing (``browserd --version``: 1.5 s with it, see
docs/development.md).
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from config import load_settings
from daemon.client import api_url


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve browserd's MCP tools on stdio (for Claude Desktop & co.)")
    p.add_argument("--api-url", help="the API to use (default: BROWSERD_API_URL)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from daemon.mcp import Api, build_server  # here, not at the top: see the module's docstring

    settings = load_settings()
    # stdout carries the protocol: logs go to stderr only
    logging.basicConfig(stream=sys.stderr, level=settings.log_level)
    token = settings.api_token.get_secret_value() if settings.api_token else None
    api = Api.remote(args.api_url or api_url(settings), token)
    server = build_server(api)

    async def serve() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await api.aclose()

    anyio.run(serve)
    return 0
