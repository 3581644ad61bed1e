"""Warm pool lease vs. launching a browser and opening a page, side by side in one run.

``python -m bench.pool [--leases N]`` prints one JSON line:
``{"warm_lease_p50_ms", "warm_lease_p95_ms", "job_p50_ms", "gated_lease_p50_ms", "gated_lease_p95_ms",
"gated_job_p50_ms", "gated_context_open_p50_ms", "cold_launch_and_page_ms", "ratio_cold_over_warm", "leases", "leaked_processes"}``.

``warm_*`` and ``job_*``: a bare pool (no egress gate). ``gated_*``: the pool as a worker runs it,
every context behind its egress gate (and, where the host allows, the browsers in their own network
namespace, sandboxed as their own user: issue 22); ``*_job_*`` is one short job's page work (load a
local page through the gate, read its title), the lease wait excluded. ``gated_context_open_p50_ms``:
a lease with no warm context ready, i.e. what the pool pays (in the background, normally) per lease:
a gate, a browser context, a blank page.

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
from cdp import Browser, BrowserPool, Lease, NetworkPolicy, PoolConfig, chrome_pids

LOCAL = NetworkPolicy.build(False, ["127.0.0.1/32"])  # the bench page's address, opened as a job would

PAGE = "<!doctype html><title>bench</title><p>a small page</p>"


async def _warm_leases(url: str, leases: int, hold: float, config: PoolConfig) -> tuple[list[float], list[float]]:
    """Lease waits and job times (ms) of ``leases`` short jobs."""
    waits, jobs = [], []
    async with BrowserPool(config) as pool:
        async with pool.lease() as lease:  # first lease waits for the browser's warm-up; not counted
            _open(lease)
            await lease.page.goto(url)
        await asyncio.sleep(1.0)
        for _ in range(leases):
            started = time.perf_counter()
            lease = await pool.acquire()
            waits.append((time.perf_counter() - started) * 1000)
            try:
                _open(lease)
                started = time.perf_counter()
                await lease.page.goto(url)
                await lease.page.title()
                jobs.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(hold)
            finally:
                await pool.release(lease)
    return waits, jobs


def _open(lease: Lease) -> None:
    """A gated lease admits the job's rule, as the pipeline does: the local page's address is opened."""
    if lease.egress is not None:
        lease.egress.admit(LOCAL)


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
        warm, job = await _warm_leases(url, leases, hold, PoolConfig(browsers=1, warm=2))
        gated, gated_job = await _warm_leases(url, leases, hold, PoolConfig(browsers=1, warm=2, egress=LOCAL))
        opened, _ = await _warm_leases(url, max(5, leases // 4), hold, PoolConfig(browsers=1, warm=0, egress=LOCAL))
        cold = await _cold_launches(url, cold_runs)
    await asyncio.sleep(0.5)
    p50 = statistics.median(warm)
    p95 = _p95(warm)
    cold_ms = statistics.median(cold)
    figures: dict[str, float | int] = {
        "warm_lease_p50_ms": round(p50, 3),
        "warm_lease_p95_ms": round(p95, 3),
        "job_p50_ms": round(statistics.median(job), 2),
        "gated_lease_p50_ms": round(statistics.median(gated), 3),
        "gated_lease_p95_ms": round(_p95(gated), 3),
        "gated_job_p50_ms": round(statistics.median(gated_job), 2),
        "gated_context_open_p50_ms": round(statistics.median(opened), 2),
        "cold_launch_and_page_ms": round(cold_ms, 1),
        "ratio_cold_over_warm": round(cold_ms / max(p50, 1e-3), 1),
        "leases": len(warm),
        "leaked_processes": len(chrome_pids(run_dir)),
    }
    shutil.rmtree(run_dir, ignore_errors=True)
    return figures


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 20 else max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leases", type=int, default=100)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--hold", type=float, default=0.25, help="seconds of job time per lease")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.leases, args.cold_runs, args.hold))))


if __name__ == "__main__":
    main()
