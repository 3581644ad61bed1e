"""The peer of ``bench.scrape``: crawl4ai's ``arun_many`` on the system Chromium.

Run by the peer's own interpreter (a virtualenv with crawl4ai, made by ``bench.scrape``); it imports
nothing of browserd. ``python scrape_peer.py PLAN.json``: the plan names the URLs, the warm-up URLs,
the concurrency and the Chromium. It starts the crawler, loads the warm-up URLs, prints ``BENCH-READY``,
waits for a line on stdin (the bench reads the process's memory meanwhile), crawls the URLs and
prints ``BENCH-RESULT`` and one JSON line: ``{"seconds", "failed", "first_error", "pages": [{"url", "seconds"}]}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from crawl4ai import AsyncWebCrawler, BrowserConfig, CacheMode, CrawlerRunConfig
from crawl4ai.async_dispatcher import SemaphoreDispatcher
from crawl4ai.browser_manager import BrowserManager

# remote hosts the saved pages name fail at once, as the pages' README asks
READY, RESULT = "BENCH-READY", "BENCH-RESULT"  # its lines to the bench (crawl4ai may print others)
RESOLVER_RULES = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"


async def crawl(crawler: AsyncWebCrawler, urls: list[str], concurrency: int) -> list[Any]:
    run = CrawlerRunConfig(cache_mode=CacheMode.BYPASS, wait_until="load", page_timeout=120_000, stream=False,
                           verbose=False)
    dispatcher = SemaphoreDispatcher(semaphore_count=concurrency)
    return await crawler.arun_many(urls, config=run, dispatcher=dispatcher)


def use_chromium(path: str) -> None:
    """Launch ``path`` (the system Chromium) with crawl4ai's own launch arguments: its BrowserConfig has
    no executable path, and Playwright's launch takes one (so no browser is downloaded)."""
    build = BrowserManager._build_browser_args

    def with_path(self: BrowserManager) -> dict[str, Any]:
        return {**build(self), "executable_path": path}

    BrowserManager._build_browser_args = with_path  # type: ignore[method-assign]


def timed(crawler: AsyncWebCrawler, times: list[dict[str, Any]]) -> None:
    """Time each page from the moment its task holds a dispatcher slot (the dispatcher's own
    ``start_time`` is taken before it waits for one): ``arun`` is what it calls inside the slot."""
    arun = crawler.arun

    async def arun_timed(url: str, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await arun(url, *args, **kwargs)
        finally:
            times.append({"url": url, "seconds": time.monotonic() - started})

    crawler.arun = arun_timed  # type: ignore[method-assign]


async def main(plan: dict[str, Any]) -> None:
    use_chromium(plan["chromium"])
    browser = BrowserConfig(browser_type="chromium", headless=True, verbose=False, extra_args=[RESOLVER_RULES])
    async with AsyncWebCrawler(config=browser) as crawler:
        await crawl(crawler, plan["warm"], plan["concurrency"])
        print(READY, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        pages: list[dict[str, Any]] = []
        timed(crawler, pages)
        started = time.monotonic()
        results = await crawl(crawler, plan["urls"], plan["concurrency"])
        seconds = time.monotonic() - started
    failed = [r for r in results if not r.success or not str(r.markdown or "").strip()]
    print(RESULT, json.dumps({"seconds": seconds, "failed": len(failed),
                      "first_error": failed[0].error_message if failed else None, "pages": pages}), flush=True)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        asyncio.run(main(json.load(fh)))
