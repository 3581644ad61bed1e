"""robots.txt as RFC 9309 reads it, cached per origin in Redis so that every worker fetches it once.

What a fetch found is kept as ``RobotsFile`` (status and body), and its rules are parsed with
``urllib.robotparser``. The status decides before the body does (RFC 9309 §2.3.1):

* 2xx: the body's rules;
* 4xx (404 most often, 401/403 too): no rules, everything is allowed ("unavailable");
* 5xx, or no answer at all (``status`` 0: refused, reset, timed out): everything is disallowed
  ("unreachable"), and it is cached for ``UNREACHABLE_TTL`` only, so the site is asked again soon.

``Crawl-delay`` (not in RFC 9309, honoured by most crawlers) is the seconds the site asks between two
requests; the politeness gate spaces navigations by it as by ``min_delay``, whichever is longer.
Sites write fractions (``Crawl-delay: 0.5``), which ``urllib.robotparser`` drops (it reads whole
seconds only): each value is handed to it in milliseconds instead (``_millis``), so the parser's
own grouping of user agents still decides which line applies.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import redis.asyncio as aioredis

from workers.jobs.politeness.options import MAX_DELAY
from workers.jobs.store.keys import Keys

MAX_BODY = 512 * 1024  # bytes parsed at most (RFC 9309 asks crawlers to read at least 500 KiB)
UNREACHABLE_TTL = 60  # seconds an unreachable robots.txt is cached before it is asked again
MILLIS = 1000  # Crawl-delay values reach the parser in these units (it keeps whole numbers only)


@dataclass(frozen=True)
class RobotsFile:
    """What fetching one origin's robots.txt gave: the final status (0: no answer) and body."""

    status: int
    body: str = ""
    error: str = ""

    @property
    def unreachable(self) -> bool:
        return self.status == 0 or self.status >= 500

    def parser(self) -> RobotFileParser:
        parser = RobotFileParser()
        if self.unreachable:
            parser.disallow_all = True
        elif 400 <= self.status < 500:
            parser.allow_all = True
        else:
            parser.parse(list(_millis(self.body.splitlines())))
        return parser

    def crawl_delay(self, user_agent: str) -> float:
        """The ``Crawl-delay`` the group for ``user_agent`` asks for in seconds, fractions included
        (0: none), at most ``MAX_DELAY``."""
        if self.unreachable or not 200 <= self.status < 300:
            return 0.0
        try:
            delay = float(self.parser().crawl_delay(user_agent) or 0) / MILLIS
        except (TypeError, ValueError):
            return 0.0
        return min(max(delay, 0.0), MAX_DELAY)

    def refusal(self, url: str, user_agent: str) -> str | None:
        """Why robots.txt forbids ``url`` to ``user_agent``, or None when it allows it."""
        if self.parser().can_fetch(user_agent, url):
            return None
        if self.unreachable:
            why = f"HTTP {self.status}" if self.status else (self.error or "no answer")
            return f"the site's robots.txt could not be read ({why}), which RFC 9309 takes as disallowing all"
        return f"disallowed by the site's robots.txt for user-agent {user_agent!r}"


def _millis(lines: Iterable[str]) -> Iterator[str]:
    """robots.txt lines with each readable ``Crawl-delay`` (a finite number of seconds, 0 or more,
    fractions too) rewritten in whole milliseconds, everything else as it was; an unreadable value
    (``abc``, ``-1``, ``inf``) is left for the parser to ignore, as before."""
    for line in lines:
        name, colon, value = line.split("#", 1)[0].partition(":")
        if colon and name.strip().lower() == "crawl-delay":
            try:
                seconds = float(value.strip())
            except ValueError:
                seconds = math.nan
            if math.isfinite(seconds) and seconds >= 0:
                yield f"Crawl-delay: {round(min(seconds, MAX_DELAY) * MILLIS)}"
                continue
        yield line


# A NamedTuple, not a frozen dataclass like the rest: tests/jobs/test_politeness.py asserts it
# equals the plain (origin, url) pair, and earlier tests' assertions stay as they are.
class RobotsAddress(NamedTuple):
    """Where a site's robots.txt is (``url``), and the ``origin`` (scheme, host, port) it rules."""

    origin: str
    url: str


def robots_url(url: str) -> RobotsAddress:
    """The robots.txt of an http(s) URL: robots.txt rules one scheme, host and port."""
    parts = urlsplit(url)
    origin = f"{parts.scheme.lower()}://{parts.netloc.lower()}"
    return RobotsAddress(origin, origin + "/robots.txt")


class RobotsCache:
    """Fetched robots.txt files in Redis, one per origin, each with its own expiry."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, ttl: int) -> None:
        self.redis = redis
        self.keys = keys
        self.ttl = ttl

    async def get(self, origin: str) -> RobotsFile | None:
        raw = await self.redis.get(self.keys.robots(origin))
        if raw is None:
            return None
        data = json.loads(raw)
        return RobotsFile(int(data["status"]), data.get("body", ""), data.get("error", ""))

    async def put(self, origin: str, found: RobotsFile) -> None:
        ttl = min(self.ttl, UNREACHABLE_TTL) if found.unreachable else self.ttl
        data = {"status": found.status, "body": found.body[:MAX_BODY], "error": found.error}
        await self.redis.set(self.keys.robots(origin), json.dumps(data), ex=ttl)
