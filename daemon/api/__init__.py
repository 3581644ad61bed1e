"""The HTTP API: ``create_app(settings)`` builds it (``browserd serve`` runs it with uvicorn).

Routers by resource (``jobs``, ``batches``, ``schedules``), the bearer check and store dependency
(``deps``), and the one place where domain errors become HTTP responses (``errors``).
"""

from daemon.api.app import create_app

__all__ = ["create_app"]
