"""A scheduled crawl of the generated test site (tests/support/crawl_site.py), run twice on the real
stack with changes planted between the runs; prints one JSON line.

    python -m bench.crawl [--sections 3 --items 8 --orphans 10 --max-depth 4 --concurrency 4 --limit 2]

It starts its own redis-server, API and one ``browserd worker`` (``--concurrency`` jobs at once),
serves the site on 127.0.0.1 (a sitemap index with a gzip sitemap, tracking-parameter, fragment
and host-case duplicates, canonical print views, an endless calendar, a ``/private/`` tree robots.txt
disallows; each page's answer held ``--hold`` seconds so visits at once overlap), makes a schedule
holding an extract-mode crawl from ``/`` with ``politeness.max_concurrent`` = ``--limit``, runs it
(``POST /v1/schedules/{id}/run``), plants changes (about 5% of the pages: item pages reworded, one
sitemap page removed, one added), runs it again and reads the schedule's change feed and what the
site itself answered:

- ``pages``: the site's pages a full crawl must visit at that depth (calendar aside);
- ``visited_once`` / ``visited_twice``: normalised URLs the site answered once / more than once (first run);
- ``missed``: pages the first run should have visited and did not;
- ``trap_pages``: calendar pages visited (bounded by max_depth: at most 2 x max_depth);
- ``robots_violations``: requests for ``/private/`` (both runs);
- ``max_concurrent_per_domain``: the most page requests the site answered at once (both runs), and
  ``concurrency_limit``, the crawl's ``max_concurrent``;
- ``pages_per_minute``: pages visited per minute by the first run, from its creation to its completion;
- ``changes_expected``: the changes planted (changed + removed + added items, keyed by page URL);
  ``changes_found``: those the second run's change feed lists; ``false_changes``: what it lists
  that was not planted.

No peer crawler is run here (issue 28 asks for one: not done).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from tests.queue.stack import stack, wait_until
from tests.support.crawl_site import CrawlSite


def run(sections: int, items: int, orphans: int, max_depth: int, concurrency: int, limit: int,
        hold: float) -> dict[str, Any]:
    with stack() as s, CrawlSite(sections=sections, items=items, orphans=orphans, hold=hold) as site:
        s.start_worker(concurrency=concurrency)
        crawl = {"start_urls": [site.url("/")], "max_depth": max_depth, "max_pages": 10_000,
                 "politeness": {"max_concurrent": limit, "respect_robots_txt": True}}
        status, schedule = s.call("POST", "/v1/schedules", {"every": 86400, "enabled": False, "crawl": crawl})
        assert status == 201, schedule
        sid = schedule["id"]

        def run_once(n: int) -> dict[str, Any]:
            status, batch = s.call("POST", f"/v1/schedules/{sid}/run")
            assert status == 201, batch

            def done() -> dict[str, Any] | None:
                _, now = s.call("GET", f"/v1/batches/{batch['id']}")
                return now if now["state"] == "completed" else None

            final = wait_until(done, 1800, f"run {n} to complete", interval=0.2)
            wait_until(lambda: len(s.call("GET", f"/v1/schedules/{sid}/changes")[1]) == n, 120, f"run {n} compared")
            return final

        first = run_once(1)
        visits = dict(site.visits)
        expected = site.pages(max_depth)
        site.plant(changed=max(1, len(expected) // 20 - 2), gone=1, added=1)
        run_once(2)
        _, feed = s.call("GET", f"/v1/schedules/{sid}/changes")
        second = feed[-1]
        found = ({("changed", c["key"]) for c in second["changed"]} | {("removed", c["key"]) for c in second["removed"]}
                 | {("added", c["key"]) for c in second["added"]})
        planted = ({("changed", site.url(f"/item/{x}/{i}")) for x, i in site.revised}
                   | {("removed", site.url(f"/orphan/{n}")) for n in site.gone}
                   | {("added", site.url(f"/orphan/{n}")) for n in range(orphans, orphans + site.added)})
        minutes = (datetime.fromisoformat(first["finished_at"]) - datetime.fromisoformat(first["created_at"])
                   ).total_seconds() / 60
        visited = first["counts"]["succeeded"] + first["counts"]["failed"]
        return {
            "pages": len(expected),
            "visited_once": sum(1 for n in visits.values() if n == 1),
            "visited_twice": sum(1 for n in visits.values() if n > 1),
            "missed": len(expected - set(visits)),
            "trap_pages": sum(1 for url in visits if site.is_trap(url)),
            "robots_violations": sum(n for url, n in site.visits.items() if "/private/" in url),
            "max_concurrent_per_domain": site.most_in_flight,
            "concurrency_limit": limit,
            "pages_per_minute": round(visited / minutes, 1) if minutes else None,
            "changes_expected": len(planted),
            "changes_found": len(found & planted),
            "false_changes": len(found - planted),
            "pages_removed_reported": len(second["pages_removed"]),
            "queued": first["total"], "failed": first["counts"]["failed"], "concurrency": concurrency,
            "hold": hold,
        }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", type=int, default=3)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--orphans", type=int, default=10)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="the worker's jobs at once")
    parser.add_argument("--limit", type=int, default=2, help="the crawl's politeness.max_concurrent")
    parser.add_argument("--hold", type=float, default=0.2, help="seconds each page's answer takes")
    args = parser.parse_args()
    print(json.dumps(run(args.sections, args.items, args.orphans, args.max_depth, args.concurrency, args.limit,
                         args.hold)))


if __name__ == "__main__":
    cli()
