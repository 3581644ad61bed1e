"""``browserd crawl URL... [--max-depth N --max-pages N --max-pages-per-pattern N --include RE --exclude RE
--extract|--task T|--recipe NAME --param K=V] [--follow TEXT [--follow-min-score N]] [--page-webhook URL] [--wait]``:
start a crawl, optionally following its progress.

``browserd crawl --cancel ID`` stops a crawl, ``browserd crawl --resume ID`` goes on with a cancelled
one from where it stopped; ``browserd crawl --attach ID`` follows one started
earlier; ``browserd crawl --results ID`` prints its pages as JSON lines; ``browserd crawl --list``
lists recent crawls (a tenant's key: its own).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from daemon.cli.commands.submit import params_of
from daemon.cli.output import EXIT_FAILED, EXIT_USAGE, api_command, client, print_json
from daemon.cli.progress import follow_batch
from workers.jobs.crawls.models import CrawlRecord


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("crawl", help="crawl a site: its pages from start URLs and sitemaps, each visited once")
    p.add_argument("urls", nargs="*", metavar="URL", help="start URLs (depth 0)")
    p.add_argument("--sitemap", action="append", default=[], help="a sitemap (or index) to read; repeatable")
    p.add_argument("--max-depth", type=int, help="links followed at most this many hops from a start page (3)")
    p.add_argument("--max-pages", type=int, help="pages visited at most (100)")
    p.add_argument("--max-duration", type=float, help="seconds after which no new page is queued")
    p.add_argument("--max-pages-per-pattern", type=int, metavar="N",
                   help="pages of one URL pattern queued at most, against crawler traps (200; 0: no cap)")
    p.add_argument("--include", action="append", default=[], help="visit only URLs this RE2 pattern matches")
    p.add_argument("--exclude", action="append", default=[], help="never visit URLs this RE2 pattern matches")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--extract", action="store_true", help="each page's markdown and links, no model (default)")
    mode.add_argument("--task", help="the agent's task on each page")
    mode.add_argument("--recipe", metavar="NAME", help="a saved recipe replayed on each page (no model)")
    p.add_argument("--param", action="append", default=None, metavar="NAME=VALUE",
                   help="a parameter of the recipe (repeat)")
    p.add_argument("--schema", help="JSON schema of each page's data (with --task or --recipe)")
    p.add_argument("--page-webhook", metavar="URL", help="POSTed each page's result when its job finishes")
    p.add_argument("--trailing-slash", choices=["keep", "strip", "add"],
                   help="/a/ and /a: two pages (keep, the default), one spelt /a (strip) or /a/ (add)")
    p.add_argument("--modified-since", metavar="ISO_DATE",
                   help="queue only the sitemap pages whose lastmod is at or after this date (or that have none)")
    p.add_argument("--retry-blocked", type=int, metavar="N",
                   help="times a page the site answered 429 or 503 is visited again later in the run (2)")
    p.add_argument("--follow", metavar="TEXT", help="which links to follow, in words: a model scores each page's "
                   "new in-scope links 0-10 against it; the crawl follows the best (default: every link in scope)")
    p.add_argument("--follow-min-score", type=int, metavar="N", help="with --follow: the lowest score followed (5)")
    p.add_argument("--spec", help="more of the crawl's spec as a JSON object (e.g. '{\"allowed_networks\": [...]}')")
    p.add_argument("--wait", action="store_true", help="show progress until the crawl completes")
    p.add_argument("--cancel", metavar="CRAWL_ID", help="stop that crawl instead")
    p.add_argument("--resume", metavar="CRAWL_ID", help="go on with that cancelled crawl from where it stopped "
                   "(its unvisited pages queued again; with --wait, follow it)")
    p.add_argument("--attach", metavar="CRAWL_ID", help="follow an existing crawl's progress (implies --wait)")
    p.add_argument("--results", metavar="CRAWL_ID", help="print that crawl's pages as JSON lines")
    p.add_argument("--list", action="store_true", help="list recent crawls, newest first, instead")
    p.add_argument("--json", action="store_true", help="print the crawl record as JSON")
    p.set_defaults(handler=run)


def spec_of(args: argparse.Namespace) -> dict[str, Any]:
    """The crawl's spec from the options (``--spec`` first, the named options over it)."""
    spec: dict[str, Any] = json.loads(args.spec) if args.spec else {}
    given = {"start_urls": args.urls, "sitemaps": args.sitemap, "include": args.include, "exclude": args.exclude,
             "max_depth": args.max_depth, "max_pages": args.max_pages, "max_duration": args.max_duration,
             "task": args.task, "output_schema": json.loads(args.schema) if args.schema else None,
             "recipe": args.recipe, "params": params_of(args.param), "page_webhook_url": args.page_webhook,
             "trailing_slash": args.trailing_slash, "sitemap_modified_since": args.modified_since,
             "retry_blocked": args.retry_blocked, "follow": args.follow, "follow_min_score": args.follow_min_score}
    spec.update({k: v for k, v in given.items() if v not in (None, [])})
    if args.max_pages_per_pattern is not None:  # 0: no cap (null in the spec)
        spec["max_pages_per_pattern"] = args.max_pages_per_pattern or None
    return spec


def as_batch(crawl: CrawlRecord) -> dict[str, Any]:
    """The crawl's progress in the shape the batch progress bar reads (its total grows as pages are found)."""
    counts = crawl.counts
    return {"total": crawl.queued, "done": counts.succeeded + counts.failed + counts.cancelled,
            "counts": counts.model_dump(), "state": crawl.state.value}


@api_command
def run(args: argparse.Namespace) -> int:
    given = [name for name in ("cancel", "resume", "attach", "results", "list") if getattr(args, name)] + (
        ["URL"] if args.urls or args.sitemap else [])
    if len(given) != 1:
        print("browserd crawl: give start URLs (or --sitemap), or --cancel ID, --resume ID, --attach ID, --results ID or --list "
              "(exactly one)", file=sys.stderr)
        return EXIT_USAGE
    api = client()
    if args.list:
        crawls = api.crawls()
        if args.json:
            print_json([c.model_dump(mode="json") for c in crawls])
        for c in [] if args.json else crawls:
            print(f"{c.id}  {c.state.value}  {c.visited}/{c.queued} visited  {c.created_at:%Y-%m-%d %H:%M:%S}  "
                  f"{c.spec.seeds()[0]}")
        return 0
    if args.results:
        for line in api.crawl_results(args.results):
            print(line.model_dump_json())
        return 0
    if args.cancel:
        crawl = api.cancel_crawl(args.cancel)
    elif args.resume:
        crawl = api.resume_crawl(args.resume)
        print(f"crawl {crawl.id}: resumed, {crawl.queued} pages queued in all", file=sys.stderr)
    elif args.attach:
        crawl = api.crawl(args.attach)
    else:
        try:
            spec = spec_of(args)
        except ValueError as exc:
            print(f"browserd crawl: --spec and --schema take JSON: {exc}", file=sys.stderr)
            return EXIT_USAGE
        crawl = api.start_crawl(spec)
        print(f"crawl {crawl.id}: {crawl.queued} pages queued", file=sys.stderr)
    wait = args.wait or bool(args.attach)
    if wait:
        follow_batch(lambda: as_batch(api.crawl(crawl.id)), workers=api.live_workers)
        crawl = api.crawl(crawl.id)
        skipped = ", ".join(f"{k} {v}" for k, v in crawl.skipped.model_dump().items() if v)
        print(f"done: {crawl.visited} pages visited ({crawl.failed} failed) of {crawl.discovered} discovered; "
              f"links skipped: {skipped or 'none'}; results: browserd crawl --results {crawl.id}", file=sys.stderr)
    if args.json:
        print_json(crawl.model_dump(mode="json"))
    else:
        print(crawl.id)
    return EXIT_FAILED if wait and (crawl.failed or crawl.counts.cancelled) else 0
