"""The ``browserd`` command. Each subcommand lives in its own module under ``daemon/cli/commands``.

Exit codes are one table for every command (``daemon.cli.output.EXIT_CODES``, below): a mistake
on the command line or in the configuration is 2 before anything is sent, an API that cannot be
reached 3, whatever the command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from config import ConfigError, get_settings
from daemon.cli.commands import COMMANDS
from daemon.cli.output import EXIT_CODES, EXIT_DONE, EXIT_INTERRUPTED, EXIT_USAGE, UsageError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="browserd", description="Run LLM browser agents at scale on pooled headless Chromium.",
        epilog="exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action="version", version=f"browserd {_version()}")
    parser.add_argument("--api-url", help="the API to talk to (default: BROWSERD_API_URL)")
    parser.add_argument("--token", help="the API's token, or a tenant's key (default: BROWSERD_API_TOKEN)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"daemon.cli.commands.{name}").register(sub)
    return parser


def _version() -> str:
    try:
        return version("browserd")
    except PackageNotFoundError:
        return "unknown"


def _apply_connection_flags(args: argparse.Namespace) -> None:
    """``--api-url``/``--token`` stand in for their variables, for this command and what it starts."""
    for flag, name in (("api_url", "BROWSERD_API_URL"), ("token", "BROWSERD_API_TOKEN")):
        if getattr(args, flag, None) is not None:
            os.environ[name] = getattr(args, flag)
            get_settings.cache_clear()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.parser = parser  # for commands that describe the command line itself (completion)
        _apply_connection_flags(args)
        return int(args.handler(args) or 0)
    except (ConfigError, UsageError) as exc:
        print(f"browserd: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into head & co.
        return EXIT_DONE


if __name__ == "__main__":
    sys.exit(main())
