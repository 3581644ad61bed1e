"""Subcommands of ``browserd``: each module has ``register(subparsers)`` setting ``handler``."""

COMMANDS = ["config", "run", "inspect"]
