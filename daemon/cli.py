"""The ``browserd`` command. Each subcommand lives in its own module under ``daemon/commands``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from config import ConfigError, setup_logging
from daemon.commands import COMMANDS

__all__ = ["build_parser", "main", "setup_logging"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="browserd", description="Run LLM browser agents at scale on pooled headless Chromium."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"daemon.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except ConfigError as exc:
        print(f"browserd: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head & co.
        return 0


if __name__ == "__main__":
    sys.exit(main())
