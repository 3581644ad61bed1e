"""What the agent asks of a job's proxy pool (the pipeline's ``proxy_pools`` feature answers).

The agent knows nothing of pools, health or metrics: it needs the proxy to open its browser
through (``first``), the hook the egress gate calls when that proxy itself fails (``replace``,
a ``cdp.upstream.Fallback``), and a way to say the site blocked it (``blocked``): the pool then
moves the job to another of its proxies, and the agent goes on instead of ending
``blocked_by_site``, within the pool's bound of moves.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

import cdp


class BlockReason(StrEnum):
    """Why a job leaves its proxy for another of the pool (the metrics' ``reason``)."""

    http_403 = "http_403"
    http_429 = "http_429"
    blocked_by_site = "blocked_by_site"


class ProxyRotation(Protocol):
    def first(self) -> cdp.UpstreamProxy:
        """The proxy the job starts with (sticky: the same for the job's whole life unless it moves)."""
        ...

    def replace(self, failed: cdp.UpstreamProxy, reason: str) -> cdp.UpstreamProxy | None:
        """``failed`` failed as a proxy (``reason``): the one to go on through, or None."""
        ...

    def blocked(self, reason: BlockReason) -> bool:
        """The site blocked the job: whether it was moved to another proxy (False: no move left)."""
        ...
