"""A crawl of the generated test site (tests/support/crawl_site.py) on the real stack; prints one JSON line.

    python -m bench.crawl [--sections 3 --items 8 --orphans 10 --max-depth 4 --concurrency 4]

It starts its own redis-server, API and one ``browserd worker`` (``--concurrency`` jobs at once),
serves the site on 127.0.0.1 (a sitemap index with a gzip sitemap, tracking-parameter, fragment
and host-case duplicates, canonical print views, an endless calendar, a ``/private/`` tree robots.txt
disallows), crawls it in extract mode from ``/`` and reads what the site itself answered:

- ``pages``: the site's pages a full crawl must visit at that depth (calendar aside);
- ``visited_once`` / ``visited_twice``: normalised URLs the site answered once / more than once;
- ``missed``: pages the crawl should have visited and did not;
- ``trap_pages``: calendar pages visited (bounded by max_depth: at most 2 x max_depth);
- ``robots_violations``: requests for ``/private/``;
- ``pages_per_minute``: pages visited per minute, from the crawl's creation to its completion.

No peer crawler is run here (issue 28 asks for one: not done). The defaults keep it under a minute
on a shared 2-core machine; the e2e test crawls about 200 pages (tests/crawls/test_crawls_e2e.py).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from tests.queue.stack import stack, wait_until
from tests.support.crawl_site import CrawlSite


def run(sections: int, items: int, orphans: int, max_depth: int, concurrency: int) -> dict[str, Any]:
    with stack() as s, CrawlSite(sections=sections, items=items, orphans=orphans) as site:
        s.start_worker(concurrency=concurrency)
        status, record = s.call("POST", "/v1/crawls", {"start_urls": [site.url("/")], "max_depth": max_depth,
                                                       "max_pages": 10_000})
        assert status == 201, record

        def done() -> dict[str, Any] | None:
            _, now = s.call("GET", f"/v1/crawls/{record['id']}")
            return now if now["state"] == "completed" else None

        final = wait_until(done, 1800, "the crawl to complete", interval=0.2)
        minutes = (datetime.fromisoformat(final["finished_at"]) - datetime.fromisoformat(final["created_at"])
                   ).total_seconds() / 60
        expected = site.pages(max_depth)
        return {
            "pages": len(expected),
            "visited_once": sum(1 for n in site.visits.values() if n == 1),
            "visited_twice": sum(1 for n in site.visits.values() if n > 1),
            "missed": len(expected - set(site.visits)),
            "trap_pages": sum(1 for url in site.visits if site.is_trap(url)),
            "robots_violations": sum(n for url, n in site.visits.items() if "/private/" in url),
            "pages_per_minute": round(final["visited"] / minutes, 1) if minutes else None,
            "queued": final["queued"], "failed": final["failed"], "skipped": final["skipped"],
            "concurrency": concurrency,
        }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", type=int, default=3)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--orphans", type=int, default=10)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    print(json.dumps(run(args.sections, args.items, args.orphans, args.max_depth, args.concurrency)))


if __name__ == "__main__":
    cli()
