"""Subcommands of ``browserd``: each module has ``register(subparsers)`` setting ``handler``."""

COMMANDS = ["config", "run", "worker", "serve", "submit", "status", "watch", "cancel", "jobs", "inspect", "batch", "results", "beat", "schedule", "demo"]
