"""Batch scraping side by side with crawl4ai: pages per minute, latency and memory at concurrency 4 and 8.

``python -m bench.scrape [--pages 100] [--levels 4,8]`` serves the real saved pages of
``/work/shared/pages`` (``--pages-dir``; the developer guide's ``../shared/pages``) on 127.0.0.1 and, for
each concurrency, runs ``--pages`` page loads (the saved pages round-robin) through both sides, one
after the other, in one run:

- **browserd**: its own redis-server, API and one real ``browserd worker`` (``--concurrency`` = the
  level, ``BROWSERD_POOL_WARM`` = the level), the jobs submitted as one batch of script jobs:
  open the page (which waits for its load), read its text (``extract_content``, with no model: the
  page's text), done;
- **the peer**: crawl4ai's ``arun_many`` (a ``SemaphoreDispatcher`` of the same concurrency, cache
  bypassed, ``wait_until="load"``, the page's markdown), in a virtualenv of its own the bench makes and
  fills from PyPI (``~/.cache/browserd-bench/crawl4ai``), on the same system Chromium
  (``/usr/bin/chromium``: no browser is downloaded). ``bench/scrape_peer.py`` is what runs there.

Both sides load the same URLs with remote hosts failing fast: the peer's Chromium maps every host
but 127.0.0.1 to NOTFOUND (as the pages' README says), and the browserd jobs set
``allowed_domains: ["127.0.0.1"]`` so their egress gate refuses other hosts at once (as issue 27's
runs did; a job with domain lists also has each request checked by ``Fetch`` for its reports).
``--open-domains`` leaves them out: the gate then resolves the remote names itself.

The saved eBay item page never finishes loading on either side (issue 27); it is left out
(``NEVER_LOADS``). One JSON line: ``{"runs": [...]}``, one entry per concurrency:

- ``browserd_pages_per_min`` / ``peer_pages_per_min``: page loads per minute, from the batch's
  submission (the ``arun_many`` call) to the last page's end; ``ratio``: browserd over the peer;
- ``browserd_p95_s`` / ``peer_p95_s``: 95th percentile of one page's time, from its job's start
  (claimed by the worker; the peer's dispatcher starting its task) to its end;
- ``max_latency_over_work_s``: the most any browserd page took beyond the page's *work*, the fastest
  time that page took on either side in this run (a stalled job shows here);
- ``browserd_mib_per_job`` / ``peer_mib_per_job``: peak PSS of the worker (or the peer process) and
  its Chrome during the batch, minus before it, over the concurrency (MiB);
- ``browserd_cpu_s_per_page`` / ``peer_cpu_s_per_page``: CPU-seconds a page during the batch: the
  whole machine's (``total``: on two cores, what decides pages per minute once both are busy) and its
  parts: browserd's Chrome, worker, API and Redis; the peer's Chrome with Playwright's driver, and
  crawl4ai's own process; ``other`` is the rest of the machine (the page server is the same for both).

Warm-up: each side loads every distinct page once before it is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.queue import MemoryPeak, pss_bytes
from bench.support import CpuSpan, serve_path
from tests.queue.stack import TOKEN, Stack, stack, wait_until

PAGES = Path(os.environ.get("BROWSERD_BENCH_PAGES", "/work/shared/pages"))
NEVER_LOADS = ("webshop/mock_parse_item_page_ebay.html",)  # its load event never fires, on either side
PEER_HOME = Path.home() / ".cache" / "browserd-bench" / "crawl4ai"
PEER_PACKAGE = "crawl4ai"
PEER_SCRIPT = Path(__file__).resolve().parent / "scrape_peer.py"
CHROMIUM = "/usr/bin/chromium"
JOB_TIMEOUT = 120


def saved_pages(root: Path) -> list[str]:
    """The saved pages' paths under ``root``, sorted, without the one that never loads."""
    found = sorted(str(p.relative_to(root)) for p in root.rglob("*.html"))
    return [p for p in found if p not in NEVER_LOADS]


def peer_python(home: Path = PEER_HOME) -> Path:
    """The peer's interpreter: a virtualenv of its own with crawl4ai, made on first use."""
    python = home / "bin" / "python"
    if not python.exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    done = subprocess.run([str(python), "-c", "import crawl4ai"], capture_output=True)
    if done.returncode != 0:
        print(f"bench: installing {PEER_PACKAGE} into {home}", file=sys.stderr)
        subprocess.run([str(home / "bin" / "pip"), "install", "-q", PEER_PACKAGE], check=True)
    return python


def ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


# --- browserd --------------------------------------------------------------------------------


def job_spec(url: str, open_domains: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"script": [{"go_to_url": {"url": url}}, {"extract_content": {}}, {"done": {"text": "ok"}}],
                            "timeout": JOB_TIMEOUT}
    if not open_domains:
        spec["allowed_domains"] = ["127.0.0.1"]
    return spec


def run_batch(s: Stack, urls: list[str], open_domains: bool) -> tuple[float, list[dict[str, Any]]]:
    """Submit ``urls`` as one batch; (its submission time, the finished job records)."""
    lines = [json.dumps({"defaults": {"labels": {"bench": "scrape"}}}),
             *(json.dumps(job_spec(u, open_domains)) for u in urls)]
    req = urllib.request.Request(s.url + "/v1/batches", data=("\n".join(lines) + "\n").encode(), method="POST",
                                 headers={"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {TOKEN}"})
    submitted = time.time()
    with urllib.request.urlopen(req, timeout=120) as resp:
        batch = json.loads(resp.read())

    def completed() -> bool:
        return s.call("GET", f"/v1/batches/{batch['id']}")[1]["state"] == "completed"

    wait_until(completed, 60 + len(urls) * JOB_TIMEOUT, "the batch to complete", interval=0.2)
    ids = [row["id"] for row in _rows(s, batch["id"])]
    return submitted, [s.job(i) for i in ids]


def _rows(s: Stack, batch_id: str) -> list[dict[str, Any]]:
    req = urllib.request.Request(f"{s.url}/v1/batches/{batch_id}/results", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return [json.loads(line) for line in resp.read().decode().splitlines() if line.strip()]


def browserd_side(s: Stack, origin: str, pages: list[str], level: int, count: int,
                  open_domains: bool = False) -> dict[str, Any]:
    s.env["BROWSERD_POOL_WARM"] = str(level)
    worker = s.start_worker(level)
    try:
        run_batch(s, [f"{origin}/{p}" for p in pages], open_domains)  # warm-up: every page once
        urls = [f"{origin}/{pages[n % len(pages)]}" for n in range(count)]
        idle = pss_bytes(worker.pid)
        meter = MemoryPeak(worker.pid)
        assert s.api is not None
        cpu = CpuSpan({"worker_tree": worker.pid, "api": s.api.pid, "redis": redis_pid(s)}, own={"worker": worker.pid})
        meter.start()
        cpu.start()
        submitted, jobs = run_batch(s, urls, open_domains)
        spent = cpu.stop()
        meter.running = False
        meter.join()
    finally:
        worker.stop()
    failed = [j for j in jobs if j["state"] != "succeeded"]
    span = max(ts(j["finished_at"]) for j in jobs) - submitted
    return {"rate": count / span * 60, "failed": len(failed),
            "first_error": failed[0]["error"] if failed else None,
            "times": [(u, ts(j["finished_at"]) - ts(j["started_at"])) for u, j in zip(urls, jobs)],
            "mib_per_job": max(0, meter.peak - idle) / level / 2**20,
            "cpu": per_page({"chrome": spent["worker_tree"] - spent["worker"], "worker": spent["worker"],
                             "api": spent["api"], "redis": spent["redis"]}, spent["machine"], count)}


def redis_pid(s: Stack) -> int:
    proc = s.redis_server.proc
    assert proc is not None
    return proc.pid


def per_page(parts: dict[str, float], machine: float, count: int) -> dict[str, float]:
    """CPU-seconds a page: the machine's (``total``: both sides serve the pages from this process,
    the same work), the named parts' and the rest (``other``)."""
    return {"total": round(machine / count, 3), **{k: round(v / count, 3) for k, v in parts.items()},
            "other": round((machine - sum(parts.values())) / count, 3)}


# --- the peer --------------------------------------------------------------------------------


def peer_side(python: Path, origin: str, pages: list[str], level: int, count: int) -> dict[str, Any]:
    urls = [f"{origin}/{pages[n % len(pages)]}" for n in range(count)]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"urls": urls, "warm": [f"{origin}/{p}" for p in pages], "concurrency": level,
                   "chromium": CHROMIUM}, fh)
        plan = fh.name
    proc = subprocess.Popen([str(python), "-I", str(PEER_SCRIPT), plan], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "CRAWL4AI_NO_CLOUD_NOTICE": "1"})
    # -I: bench/ is not on its path (bench/queue.py would shadow the queue module)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        expect(proc, "BENCH-READY")
        idle = pss_bytes(proc.pid)
        meter = MemoryPeak(proc.pid)
        cpu = CpuSpan({"tree": proc.pid}, own={"crawl4ai": proc.pid})
        meter.start()
        cpu.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out = json.loads(expect(proc, "BENCH-RESULT"))
        spent = cpu.stop()
        meter.running = False
        meter.join()
        proc.stdin.close()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        Path(plan).unlink(missing_ok=True)
    return {"rate": count / out["seconds"] * 60, "failed": out["failed"], "first_error": out["first_error"],
            "times": [(r["url"], r["seconds"]) for r in out["pages"]],
            "mib_per_job": max(0, meter.peak - idle) / level / 2**20,
            "cpu": per_page({"chrome_and_driver": spent["tree"] - spent["crawl4ai"], "crawl4ai": spent["crawl4ai"]},
                            spent["machine"], count)}


def expect(proc: subprocess.Popen[str], tag: str) -> str:
    """The rest of the peer's next line starting with ``tag`` (other lines are crawl4ai's own)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(tag):
            return line[len(tag):].strip()
    raise SystemExit(f"bench: the peer ended before {tag} (exit {proc.wait()})")


def compare(level: int, count: int, ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    work: dict[str, float] = {}
    for url, seconds in [*ours["times"], *peer["times"]]:
        work[url] = min(seconds, work.get(url, seconds))
    return {
        "pages": count, "concurrency": level,
        "browserd_pages_per_min": round(ours["rate"], 1), "peer_pages_per_min": round(peer["rate"], 1),
        "ratio": round(ours["rate"] / peer["rate"], 2),
        "browserd_p95_s": round(p95([t for _, t in ours["times"]]), 2),
        "peer_p95_s": round(p95([t for _, t in peer["times"]]), 2),
        "max_latency_over_work_s": round(max(t - work[u] for u, t in ours["times"]), 2),
        "browserd_mib_per_job": round(ours["mib_per_job"], 1), "peer_mib_per_job": round(peer["mib_per_job"], 1),
        "browserd_failed": ours["failed"], "peer_failed": peer["failed"],
        "browserd_cpu_s_per_page": ours["cpu"], "peer_cpu_s_per_page": peer["cpu"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100, help="page loads per side per concurrency")
    parser.add_argument("--levels", default="4,8", help="concurrencies, comma-separated")
    parser.add_argument("--pages-dir", type=Path, default=PAGES)
    parser.add_argument("--open-domains", action="store_true",
                        help="no allowed_domains on the jobs: their egress gate resolves the pages' remote names "
                             "(fair only where those fail at once, as the peer's do)")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    pages = saved_pages(args.pages_dir)
    if not pages:
        raise SystemExit(f"bench: no saved pages under {args.pages_dir}")
    python = peer_python()
    runs = []
    with serve_path(args.pages_dir) as origin, stack(job_timeout=JOB_TIMEOUT, log_level="WARNING") as s:
        for level in levels:
            ours = browserd_side(s, origin, pages, level, args.pages, args.open_domains)
            peer = peer_side(python, origin, pages, level, args.pages)
            for side, got in (("browserd", ours), ("peer", peer)):
                if got["failed"]:
                    print(f"bench: {got['failed']} {side} pages failed at c{level}, e.g. {got['first_error']}",
                          file=sys.stderr)
            runs.append(compare(level, args.pages, ours, peer))
    print(json.dumps({"runs": runs, "open_domains": args.open_domains}))


if __name__ == "__main__":
    main()
