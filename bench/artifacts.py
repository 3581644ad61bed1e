"""What per-step screenshots cost: the same batch with every-step artifacts and with none, side by side.

``python -m bench.artifacts`` starts its own redis-server, API, scripted LLM server (1 s per
answer, as ``bench.queue``), fixture site and one ``browserd worker`` whose artifact store is a
temporary local folder. It runs rounds of two batches of agent jobs on a catalog page: one with
``artifacts: {"screenshots": "every_step", "page": "always", "logs": "always"}``, one with
everything ``off``, alternating which goes first, and prints one JSON line:

- ``jobs``: jobs run with artifacts (as many ran without);
- ``screenshots``: step screenshots those jobs stored (read back from the API's listings);
- ``mean_screenshot_kb``: their mean size;
- ``artifact_overhead_over_plain``: wall time of the batches with artifacts over the batches
  without (first enqueue to last finish, summed over the rounds). Target: at most 1.3.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

from bench.queue import SITE, ScriptedModel, Specs, finish_all
from tests.queue.stack import Stack, stack
from tests.support.llm_server import LLMServer
from tests.support.servers import serve

KEEP = {"screenshots": "every_step", "page": "always", "logs": "always"}
PLAIN = {"screenshots": "off", "page": "off", "logs": "off"}


def run_batch(s: Stack, specs: Specs, jobs: int, artifacts: dict[str, str]) -> tuple[float, list[str]]:
    """Seconds from the first enqueue to the last finish, and the job ids."""
    started = time.monotonic()
    ids = [s.submit({**specs.next(), "artifacts": artifacts})["id"] for _ in range(jobs)]
    finish_all(s, ids)
    return time.monotonic() - started, ids


def screenshot_sizes(s: Stack, ids: list[str]) -> list[int]:
    sizes = []
    for job_id in ids:
        status, listing = s.call("GET", f"/v1/jobs/{job_id}/artifacts")
        if status != 200:
            raise SystemExit(f"bench: listing the artifacts of {job_id} answered {status}: {listing}")
        sizes += [a["size"] for a in listing if a["name"].startswith("step-") and a["name"].endswith(".jpg")]
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=8, help="jobs per batch")
    parser.add_argument("--steps", type=int, default=5, help="1 s model answers per job")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of batches (with, without)")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    walls: dict[str, float] = {"keep": 0.0, "plain": 0.0}
    sizes: list[int] = []
    with tempfile.TemporaryDirectory(prefix="browserd-bench-artifacts-") as store, serve(SITE) as site, \
            LLMServer() as llm:
        llm.responder = ScriptedModel(args.steps)
        specs = Specs("agent", site.url("/agent/catalog.html"), args.steps)
        settings: dict[str, Any] = {"job_timeout": 300, "visibility_timeout": 900, "llm_base_url": llm.base_url,
                                    "openai_api_key": "sk-bench", "log_level": "WARNING",
                                    "artifacts_url": f"file://{store}", "pool_warm": args.concurrency}
        with stack(**settings) as s:
            s.start_worker(args.concurrency)
            finish_all(s, [s.submit({**specs.next(), "artifacts": KEEP})["id"]])  # warm-up
            for n in range(args.rounds):
                order = ("keep", "plain") if n % 2 == 0 else ("plain", "keep")
                for kind in order:
                    seconds, ids = run_batch(s, specs, args.jobs, KEEP if kind == "keep" else PLAIN)
                    walls[kind] += seconds
                    if kind == "keep":
                        sizes += screenshot_sizes(s, ids)
    print(json.dumps({
        "jobs": args.jobs * args.rounds,
        "screenshots": len(sizes),
        "mean_screenshot_kb": round(statistics.fmean(sizes) / 1024, 1) if sizes else 0.0,
        "artifact_overhead_over_plain": round(walls["keep"] / walls["plain"], 3),
    }))


if __name__ == "__main__":
    main()
