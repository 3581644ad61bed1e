"""What Chrome itself spends on a page load: a fresh context per page, a tab in one context, one tab.

``python -m bench.chrome_cost [--loads 46] [--rounds 2]`` launches the system Chromium (over its
DevTools pipe, no pool, no egress gate), serves the saved pages (``bench.scrape``'s, without the one
that never loads) from a separate process on 127.0.0.1, and loads them one at a time in three ways,
alternating, each after a warm-up pass over the pages:

- ``context``: a new browser context and tab per page, the context disposed after the load (what
  every browserd job does: its isolation);
- ``tab``: a new tab per page in one shared context, closed after the load (what a crawler that
  shares a context does);
- ``same``: one tab navigating from page to page.

It prints one JSON line with the median over the rounds of Chrome's CPU-seconds a load (the whole
process tree, renderers that ended included) and seconds a load, per way: the difference between
``context`` and ``tab`` is what a context per job costs in Chrome. Remote hosts fail at once (the
pages' README): Chrome maps every host but 127.0.0.1 to NOTFOUND.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.scrape import PAGES, saved_pages
from bench.support import cpu_seconds
from cdp import Browser
from tests.queue.stack import wait_until
from tests.support.redis_server import free_port

WAYS = ("context", "tab", "same")
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"


class Loader:
    """Loads a URL in one of the three ways on one browser."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.context = ""
        self.page: Any = None

    async def start(self) -> None:
        self.context = await self.browser.new_context()
        self.page = await self.browser.new_page(self.context)

    async def load(self, way: str, url: str) -> None:
        if way == "context":
            context = await self.browser.new_context()
            page = await self.browser.new_page(context)
            await page.goto(url)
            await self.browser.dispose_context(context)
        elif way == "tab":
            page = await self.browser.new_page(self.context)
            await page.goto(url)
            await page.close()
        else:
            await self.page.goto(url)


async def measure(loader: Loader, way: str, urls: list[str]) -> tuple[float, float]:
    """(Chrome CPU-seconds, seconds) a load, over ``urls`` loaded one at a time."""
    chrome = loader.browser.pid
    assert chrome is not None
    cpu, started = cpu_seconds(chrome), time.perf_counter()
    for url in urls:
        await loader.load(way, url)
    return (cpu_seconds(chrome) - cpu) / len(urls), (time.perf_counter() - started) / len(urls)


async def run(origin: str, pages: list[str], loads: int, rounds: int) -> dict[str, Any]:
    urls = [f"{origin}/{pages[n % len(pages)]}" for n in range(loads)]
    browser = await Browser.launch(extra_args=[OFFLINE])
    try:
        loader = Loader(browser)
        await loader.start()
        got: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
        for way in WAYS:
            await measure(loader, way, urls[:len(pages)])  # warm-up: every page once
        for _ in range(rounds):
            for way in WAYS:
                got[way].append(await measure(loader, way, urls))
    finally:
        await browser.close()
    out: dict[str, Any] = {"loads": loads, "rounds": rounds}
    for way, runs in got.items():
        out[f"{way}_chrome_cpu_s"] = round(statistics.median(c for c, _ in runs), 3)
        out[f"{way}_seconds"] = round(statistics.median(s for _, s in runs), 3)
    return out


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=46, help="page loads per way per round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    pages = saved_pages(PAGES)
    if not pages:
        raise SystemExit(f"bench: no saved pages under {PAGES}")
    port = free_port()
    # a process of its own: serving the pages costs the same in every way, and none of it is Chrome's
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "-b", "127.0.0.1", "-d", str(PAGES)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _accepts(port), 10, f"the page server on port {port}", interval=0.05)
        print(json.dumps(asyncio.run(run(f"http://127.0.0.1:{port}", pages, args.loads, args.rounds))))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
