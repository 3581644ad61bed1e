"""How every MCP tool and resource calls the API: its answer, or an MCP error carrying the API's own message."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from daemon.client import ClientError, RequestRefused

T = TypeVar("T")


async def api_call(call: Awaitable[T]) -> T:
    """The API's answer, or a tool error with its message."""
    try:
        return await call
    except ClientError as exc:
        raise ToolError(str(exc)) from None


async def resource_call(call: Awaitable[T]) -> T:
    """The API's answer for a resource read: a 404 is "no such resource", anything else a resource error."""
    try:
        return await call
    except ClientError as exc:
        if isinstance(exc, RequestRefused) and exc.status == 404:
            raise ResourceNotFoundError(str(exc)) from None
        raise ResourceError(str(exc)) from None
