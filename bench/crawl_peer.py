"""The peer side of ``bench.crawl``: crawl4ai's deep crawl (``BFSDeepCrawlStrategy``) of the same site,
run in crawl4ai's own virtualenv (``bench.peers``), so it imports only crawl4ai and the standard library.

    python -I bench/crawl_peer.py PLAN.json   # one JSON line: pages, succeeded, seconds, urls, ok, errors

The plan names the start URL, ``max_depth``, ``max_pages``, the concurrency (crawl4ai's
``semaphore_count``: pages crawled at once) and the Chromium to use. That Chromium is started here,
headless with a DevTools port, and crawl4ai attaches to it (``browser_mode="custom"``, its
``cdp_url``): Playwright downloads no browser. robots.txt is honoured (``check_robots_txt``), the
cache bypassed, and crawl4ai's own per-domain delay set to 0, as browserd's crawl has none here.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from crawl4ai import AsyncWebCrawler, BrowserConfig, CacheMode, CrawlerRunConfig
from crawl4ai.deep_crawling import BFSDeepCrawlStrategy


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def chromium(path: str, port: int, profile: str) -> subprocess.Popen:
    proc = subprocess.Popen([path, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
                             f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the peer's Chromium did not open its DevTools port")


async def crawl(plan: dict, port: int) -> dict:
    browser = BrowserConfig(browser_mode="custom", cdp_url=f"http://127.0.0.1:{port}", headless=True, verbose=False)
    strategy = BFSDeepCrawlStrategy(max_depth=plan["max_depth"], include_external=False, max_pages=plan["max_pages"])
    run = CrawlerRunConfig(deep_crawl_strategy=strategy, cache_mode=CacheMode.BYPASS, check_robots_txt=True,
                           semaphore_count=plan["concurrency"], mean_delay=0.0, max_range=0.0, verbose=False)
    started = time.monotonic()
    async with AsyncWebCrawler(config=browser) as crawler:
        results = await crawler.arun(plan["start"], config=run)
    seconds = time.monotonic() - started
    return {"pages": len(results), "succeeded": sum(1 for r in results if r.success), "seconds": seconds,
            "urls": [r.url for r in results], "ok": [bool(r.success) for r in results],
            "errors": sorted({(r.error_message or "")[:200] for r in results if not r.success})}


def main() -> None:
    with open(sys.argv[1]) as fh:
        plan = json.load(fh)
    profile = tempfile.mkdtemp(prefix="crawl-peer-")
    port = free_port()
    proc = chromium(plan["chromium"], port, profile)
    try:
        print(json.dumps(asyncio.run(crawl(plan, port))))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
