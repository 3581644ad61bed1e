"""Subcommands of ``browserd``: each module has ``register(subparsers)`` setting ``handler``."""

COMMANDS = ["config", "run", "worker", "serve", "submit", "status", "watch", "cancel", "pause", "follow_up", "artifacts", "jobs",
            "inspect", "batch", "batches", "crawl", "results", "beat", "schedule", "changes", "profile", "credentials", "recipe", "tenant", "demo", "completion", "mcp", "doctor", "queue", "webhooks"]
