"""``browserd mcp``: browserd for MCP clients (the official ``mcp`` SDK).

Two transports, one server (``server.build_server``): stdio for desktop AI clients
(``browserd mcp``, talking to the API at ``BROWSERD_API_URL``), and streamable HTTP mounted on the
API at ``/mcp`` behind the same bearer token (``http.mount``). The server reaches browserd only
through the HTTP API, never the agent or the browser layer.
"""

from __future__ import annotations

from daemon.mcp.backend import Api
from daemon.mcp.server import build_server

__all__ = ["Api", "build_server"]
