"""The ``browserd`` command: ``main`` parses the arguments and runs one subcommand.

Each subcommand is a module of ``daemon.cli.commands``; the job commands talk to the HTTP API
through ``daemon.client`` and print with ``daemon.cli.output``.
"""

from daemon.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
