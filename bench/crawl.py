"""Crawls of the generated test site (tests/support/crawl_site.py) on the real stack, beside a peer
crawler on the same site at the same concurrency; prints one JSON line.

    python -m bench.crawl [--sections 3 --items 8 --orphans 10 --max-depth 4 --concurrency 4 --limit 2]
                          [--no-peer]

It starts its own redis-server, API and one ``browserd worker`` (``--concurrency`` jobs at once), the
scripted model (``tests.support.llm_server``, whose every call is counted), and serves the site on
127.0.0.1 (a sitemap index with a gzip sitemap, tracking-parameter, fragment and host-case
duplicates, canonical print views, an endless calendar, a ``/private/`` tree robots.txt disallows;
each page's answer held ``--hold`` seconds so visits at once overlap). Three phases, side by side in
one run:

1. **browserd, extract mode**: a crawl from ``/`` (``politeness.max_concurrent`` = ``--limit``), each
   page's markdown and links, no model.
2. **the peer**: crawl4ai's deep crawl (``BFSDeepCrawlStrategy``, ``bench/crawl_peer.py``), installed
   on first use into a virtualenv of its own (``bench.peers``: pip from PyPI), on the system Chromium
   (no browser download), with ``semaphore_count`` = ``--limit`` pages at once, robots.txt honoured
   and its per-domain delay 0; the same site, the same depth.
3. **browserd, a scheduled crawl with an agent task on each page** (the scripted model reads the
   page's sentence into ``{"text"}``): run, about 5% of the pages changed (item pages reworded, one
   sitemap page removed, one added), run again; the second run reuses the first run's extraction of
   every unchanged page (incremental runs).

What it prints:

- ``pages``: the site's pages a full crawl must visit at that depth (calendar aside);
- ``visited_once`` / ``visited_twice``: normalised URLs the site answered once / more than once (phase 1);
- ``missed``: pages phase 1 should have visited and did not;
- ``trap_pages``: calendar pages visited (bounded by max_depth: at most 2 x max_depth);
- ``robots_violations``: requests for ``/private/`` by browserd (phases 1 and 3);
- ``max_concurrent_per_domain``: the most page requests browserd had the site answer at once (phases 1
  and 3), and ``concurrency_limit``, the crawls' ``max_concurrent``;
- ``pages_per_minute``: pages phase 1 visited per minute, from its creation to its completion;
  ``peer_pages_per_minute``: distinct pages the peer read successfully per minute, from its crawler's
  start to its end (``peer_pages``, ``peer_failed``: what it read, what it did not); ``peer``: which;
- ``first_run_llm_calls`` / ``second_run_llm_calls``: model calls of phase 3's runs, and
  ``second_run_llm_calls_over_first`` their ratio; ``pages_reused``: second-run pages whose result
  says it reused the first run's extraction;
- ``changes_expected``: the changes planted (changed + removed + added items, keyed by page URL);
  ``changes_found``: those the second run's change feed lists; ``false_changes``: what it lists that
  was not planted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.peers import CHROMIUM, peer_python
from tests.batches.helpers import results
from tests.queue.stack import Stack, stack, wait_until
from tests.support.crawl_site import READ_SCHEMA, READ_TASK, CrawlSite, Manners, Shape, read_page
from tests.support.llm_server import LLMServer

PEER = "crawl4ai"
PEER_SCRIPT = Path(__file__).resolve().parent / "crawl_peer.py"


def minutes(record: dict[str, Any]) -> float:
    return (datetime.fromisoformat(record["finished_at"]) - datetime.fromisoformat(record["created_at"])
            ).total_seconds() / 60


def extract_crawl(s: Stack, site: CrawlSite, max_depth: int, limit: int) -> dict[str, Any]:
    """Phase 1: one crawl, extract mode; its completed record."""
    body = {"start_urls": [site.url("/")], "max_depth": max_depth, "max_pages": 10_000,
            "politeness": {"max_concurrent": limit, "respect_robots_txt": True}}
    status, record = s.call("POST", "/v1/crawls", body)
    assert status == 201, record

    def done() -> dict[str, Any] | None:
        now = s.call("GET", f"/v1/crawls/{record['id']}")[1]
        return now if now["state"] == "completed" else None

    return wait_until(done, 1800, "the extract crawl to complete", interval=0.2)


def peer_crawl(site: CrawlSite, max_depth: int, limit: int) -> dict[str, Any]:
    """Phase 2: crawl4ai's deep crawl of the same site, in its own virtualenv; what it printed."""
    python = peer_python("crawl4ai-crawl", PEER, PEER)
    plan = {"start": site.url("/"), "max_depth": max_depth, "max_pages": 10_000, "concurrency": limit,
            "chromium": CHROMIUM}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(plan, fh)
    try:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(Path.home()), "CRAWL4AI_NO_CLOUD_NOTICE": "1"}
        done = subprocess.run([str(python), "-I", str(PEER_SCRIPT), fh.name], capture_output=True, text=True,
                              env=env, timeout=1800)  # -I: bench/queue.py must not shadow the stdlib's queue
    finally:
        os.unlink(fh.name)
    if done.returncode != 0:
        raise SystemExit(f"bench: the peer failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def scheduled_task_runs(s: Stack, llm: LLMServer, site: CrawlSite, max_depth: int, limit: int,
                        expected: int) -> dict[str, Any]:
    """Phase 3: a schedule holding an agent-task crawl, run, changes planted, run again."""
    crawl = {"start_urls": [site.url("/")], "max_depth": max_depth, "max_pages": 10_000, "task": READ_TASK,
             "output_schema": READ_SCHEMA, "politeness": {"max_concurrent": limit, "respect_robots_txt": True}}
    status, schedule = s.call("POST", "/v1/schedules", {"every": 86400, "enabled": False, "crawl": crawl})
    assert status == 201, schedule
    sid = schedule["id"]

    def run_once(n: int) -> tuple[str, int]:
        before = len(llm.requests)
        status, batch = s.call("POST", f"/v1/schedules/{sid}/run")
        assert status == 201, batch

        def done() -> dict[str, Any] | None:
            _, now = s.call("GET", f"/v1/batches/{batch['id']}")
            return now if now["state"] == "completed" else None

        wait_until(done, 1800, f"run {n} to complete", interval=0.2)
        wait_until(lambda: len(s.call("GET", f"/v1/schedules/{sid}/changes")[1]) == n, 120, f"run {n} compared")
        return batch["id"], len(llm.requests) - before

    _, first_calls = run_once(1)
    site.plant(changed=max(1, expected // 20 - 2), gone=1, added=1)
    second, second_calls = run_once(2)
    lines = results(s, second)
    _, feed = s.call("GET", f"/v1/schedules/{sid}/changes")
    last = feed[-1]
    found = ({("changed", c["key"]) for c in last["changed"]} | {("removed", c["key"]) for c in last["removed"]}
             | {("added", c["key"]) for c in last["added"]})
    orphans = site.orphans
    planted = ({("changed", site.url(f"/item/{x}/{i}")) for x, i in site.revised}
               | {("removed", site.url(f"/orphan/{n}")) for n in site.gone}
               | {("added", site.url(f"/orphan/{n}")) for n in range(orphans, orphans + site.added)})
    return {"first_run_llm_calls": first_calls, "second_run_llm_calls": second_calls,
            "second_run_llm_calls_over_first": round(second_calls / first_calls, 4) if first_calls else None,
            "pages_reused": sum(1 for line in lines if line.get("reused_from")),
            "second_run_pages": len(lines), "second_run_failed": sum(1 for line in lines if line["status"] != "succeeded"),
            "changes_expected": len(planted), "changes_found": len(found & planted),
            "false_changes": len(found - planted), "pages_removed_reported": len(last["pages_removed"])}


def run(sections: int, items: int, orphans: int, max_depth: int, concurrency: int, limit: int,
        hold: float, peer: bool) -> dict[str, Any]:
    shape = Shape(sections=sections, items=items, orphans=orphans)
    with LLMServer() as llm, CrawlSite(shape, Manners(hold=hold)) as site:
        llm.responder = read_page
        with stack(llm_base_url=llm.base_url, openai_api_key="sk-bench") as s:
            s.start_worker(concurrency=concurrency)
            first = extract_crawl(s, site, max_depth, limit)
            visits, most = dict(site.visits), site.most_in_flight
            expected = site.pages(max_depth)
            violations = sum(n for url, n in visits.items() if "/private/" in url)
            out: dict[str, Any] = {
                "pages": len(expected),
                "visited_once": sum(1 for n in visits.values() if n == 1),
                "visited_twice": sum(1 for n in visits.values() if n > 1),
                "missed": len(expected - set(visits)),
                "trap_pages": sum(1 for url in visits if site.is_trap(url)),
                "pages_per_minute": round(first["visited"] / minutes(first), 1),
                "queued": first["queued"], "failed": first["failed"],
            }
            if peer:
                site.visits.clear()
                got = peer_crawl(site, max_depth, limit)
                read = {u for u, ok in zip(got["urls"], got["ok"]) if ok}
                out.update({"peer": f"{PEER} BFSDeepCrawlStrategy", "peer_pages": len(read),
                            "peer_failed": got["pages"] - sum(got["ok"]),
                            "peer_pages_per_minute": round(len(read) / (got["seconds"] / 60), 1),
                            "peer_errors": got["errors"]})
            else:
                out.update({"peer": None, "peer_pages_per_minute": None})
            site.visits.clear()
            site.most_in_flight = 0
            out.update(scheduled_task_runs(s, llm, site, max_depth, limit, len(expected)))
            violations += sum(n for url, n in site.visits.items() if "/private/" in url)
            out.update({"robots_violations": violations, "max_concurrent_per_domain": max(most, site.most_in_flight),
                        "concurrency_limit": limit, "concurrency": concurrency, "hold": hold})
            return out


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", type=int, default=3)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--orphans", type=int, default=10)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="the worker's jobs at once")
    parser.add_argument("--limit", type=int, default=2, help="pages at once at the site: the crawls' "
                        "politeness.max_concurrent, the peer's semaphore_count")
    parser.add_argument("--hold", type=float, default=0.2, help="seconds each page's answer takes")
    parser.add_argument("--no-peer", action="store_true", help="skip the peer (no crawl4ai install)")
    args = parser.parse_args()
    print(json.dumps(run(args.sections, args.items, args.orphans, args.max_depth, args.concurrency, args.limit,
                         args.hold, not args.no_peer)))


if __name__ == "__main__":
    cli()
