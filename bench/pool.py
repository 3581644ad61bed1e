"""Warm pool lease vs. launching a browser and opening a page, side by side in one run.

``python -m bench.pool [--leases N]`` prints one JSON line:
``{"warm_lease_p50_ms", "warm_lease_p95_ms", "cold_launch_and_page_ms",
"ratio_cold_over_warm", "leases", "leaked_processes"}``.

Each warm lease does what a short job does (load a local page, read its title) and then holds
the context for ``--hold`` seconds of job time before releasing it: the pool refills in the
background meanwhile, as it does between real jobs. The cold figure is the same first step
without a pool: launch Chrome, open a context and a page, close it all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time

from bench.support import serve_directory
from cdp import Browser, BrowserPool, PoolConfig, chrome_pids

PAGE = "<!doctype html><title>bench</title><p>a small page</p>"


async def _warm_leases(url: str, leases: int, hold: float) -> list[float]:
    waits = []
    async with BrowserPool(PoolConfig(browsers=1, warm=2)) as pool:
        async with pool.lease() as lease:  # first lease waits for the browser's warm-up; not counted
            await lease.page.goto(url)
        await asyncio.sleep(1.0)
        for _ in range(leases):
            started = time.perf_counter()
            lease = await pool.acquire()
            waits.append((time.perf_counter() - started) * 1000)
            try:
                await lease.page.goto(url)
                await lease.page.title()
                await asyncio.sleep(hold)
            finally:
                await pool.release(lease)
    return waits


async def _cold_launches(url: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        browser = await Browser.launch()
        try:
            context = await browser.new_context()
            page = await browser.new_page(context)
            times.append((time.perf_counter() - started) * 1000)
            await page.goto(url)
        finally:
            await browser.close()
    return times


async def run(leases: int, cold_runs: int, hold: float) -> dict[str, float | int]:
    run_dir = tempfile.mkdtemp(prefix="browserd-bench-")
    os.environ["TMPDIR"] = run_dir  # Chrome profiles go here, so their command lines name it
    tempfile.tempdir = None
    with serve_directory({"index.html": PAGE}) as origin:
        url = origin + "/index.html"
        warm = await _warm_leases(url, leases, hold)
        cold = await _cold_launches(url, cold_runs)
    await asyncio.sleep(0.5)
    p50 = statistics.median(warm)
    p95 = statistics.quantiles(warm, n=20)[18] if len(warm) >= 20 else max(warm)
    cold_ms = statistics.median(cold)
    figures: dict[str, float | int] = {
        "warm_lease_p50_ms": round(p50, 3),
        "warm_lease_p95_ms": round(p95, 3),
        "cold_launch_and_page_ms": round(cold_ms, 1),
        "ratio_cold_over_warm": round(cold_ms / max(p50, 1e-3), 1),
        "leases": len(warm),
        "leaked_processes": len(chrome_pids(run_dir)),
    }
    shutil.rmtree(run_dir, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leases", type=int, default=100)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--hold", type=float, default=0.25, help="seconds of job time per lease")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.leases, args.cold_runs, args.hold))))


if __name__ == "__main__":
    main()
