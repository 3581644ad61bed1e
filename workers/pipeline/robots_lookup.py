"""A site's robots.txt as a job sees it: from the shared cache, else fetched through the job's own
egress gate (``side_fetch``) and cached for every worker. The politeness gate asks it before each
navigation; a crawl asks it before queueing a page, so a disallowed page never becomes a job."""

from __future__ import annotations

from typing import Protocol

import cdp
from workers.jobs.politeness.robots import MAX_BODY, RobotsFile, robots_url
from workers.pipeline.side_fetch import side_fetch

ROBOTS_TIMEOUT = 10.0  # seconds one robots.txt fetch may take


class Robots(Protocol):
    """Where fetched robots.txt files are kept (``RobotsCache`` in Redis, ``LocalRobots`` in a process)."""

    async def get(self, origin: str) -> RobotsFile | None: ...

    async def put(self, origin: str, found: RobotsFile) -> None: ...


async def robots_file(cache: Robots, egress: cdp.Gate | None, url: str, user_agent: str) -> RobotsFile:
    """The robots.txt ruling ``url``; ``SideDoorRefused`` when the job's egress policy refuses its fetch."""
    address = robots_url(url)
    found = await cache.get(address.origin)
    if found is not None:
        return found
    if egress is None:
        found = RobotsFile(0, error="the job has no egress gate")
    else:
        got = await side_fetch(egress, address.url, f"{user_agent} (robots.txt)", max_bytes=MAX_BODY,
                               timeout=ROBOTS_TIMEOUT)
        found = RobotsFile(got.status, got.body.decode("utf-8", errors="replace"), got.error)
    await cache.put(address.origin, found)
    return found
