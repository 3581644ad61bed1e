"""``browserd demo``: the whole system on one machine, end to end, in one command.

Starts what is missing (redis-server when BROWSERD_REDIS_URL is unset, one worker, the API),
serves the demo shop, submits one job per product as a batch through the API, follows it with
the progress bar, prints the results and a few metrics, and stops everything it started (with
``--keep``, only on Ctrl-C: meanwhile the console, the API and the metrics stay up to try).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
import urllib.request
from dataclasses import dataclass
from typing import Any, TextIO

from config import Settings
from config.masking import mask_url
from daemon.client import Client
from daemon.cli.progress import follow_batch
from daemon.demo.jobs import agent_jobs, script_jobs
from daemon.demo.services import ServiceError, Services, free_port, http_ok
from daemon.demo.site import PRODUCTS, SHOP_NETWORK, DemoSite
from workers.jobs.batches.models import BatchState

WORKER_CONCURRENCY = 4
START_TIMEOUT = 120.0
WORKER_METRICS = (
    'browserd_jobs_total{category="none",state="succeeded"}', "browserd_job_duration_seconds_count",
    "browserd_job_duration_seconds_sum", "browserd_agent_steps_total", "browserd_pool_browsers",
    "browserd_llm_requests_total",
)
DAEMON_METRICS = ('browserd_jobs_in_state{state="succeeded"}', "browserd_queue_depth", "browserd_workers_up")


def llm_configured(settings: Settings) -> bool:
    return bool(settings.openai_api_key or settings.llm_base_url)


def _terminate(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_demo(settings: Settings, out: TextIO = sys.stdout, *, keep: bool = False) -> int:
    """0 when the batch completed with every job succeeded, else 1 (2 when a service would not start)."""
    previous = signal.signal(signal.SIGTERM, _terminate)  # stop everything on SIGTERM too, not only Ctrl-C
    # Ctrl-C stops everything even when the demo was started with SIGINT ignored (a shell without
    # job control starts background commands so): Python then installs no KeyboardInterrupt handler.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    services = Services()
    try:
        return _run(settings, services, out, keep)
    except ServiceError as exc:
        print(f"browserd demo: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nbrowserd demo: interrupted; stopping everything", file=sys.stderr)
        return 130
    finally:
        services.close()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        print("stopped the demo's worker, API" + ("" if settings.redis_url else " and redis-server"), file=sys.stderr)


def _run(settings: Settings, services: Services, out: TextIO, keep: bool) -> int:
    redis_url = settings.redis_url
    if redis_url:
        print(f"using Redis at {mask_url(redis_url)} (BROWSERD_REDIS_URL)", file=sys.stderr)
    else:
        redis_url = services.redis()
        print(f"started an embedded redis-server at {redis_url}", file=sys.stderr)
    api_port, metrics_port = free_port(), free_port()
    token = settings.api_token.get_secret_value() if settings.api_token else secrets.token_urlsafe(16)
    api_url = f"http://127.0.0.1:{api_port}"
    env = {
        **os.environ, "BROWSERD_REDIS_URL": redis_url, "BROWSERD_API_HOST": "127.0.0.1",
        "BROWSERD_API_PORT": str(api_port), "BROWSERD_API_URL": api_url, "BROWSERD_API_TOKEN": token,
        # the demo's own worker may open the shop's loopback address: a job's allowed_networks must lie
        # inside the operator's (workers.jobs.tenants.ceilings)
        "BROWSERD_ALLOWED_NETWORKS": ",".join(dict.fromkeys([*settings.allowed_networks, SHOP_NETWORK])),
        "BROWSERD_METRICS_PORT": str(metrics_port), "BROWSERD_LOG_LEVEL": os.environ.get("BROWSERD_LOG_LEVEL", "WARNING"),
    }
    worker = services.start("worker", [sys.executable, "-m", "daemon", "worker",
                                       f"--concurrency={WORKER_CONCURRENCY}", f"--name=demo-{os.getpid()}@%h"], env)
    api = services.start("api", [sys.executable, "-m", "daemon", "serve"], env)
    print("starting a worker (with its Chromium) and the API ...", file=sys.stderr)
    services.wait(api, lambda: http_ok(api_url + "/healthz"), START_TIMEOUT, "the API")
    services.wait(worker, lambda: http_ok(api_url + "/readyz"), START_TIMEOUT, "the worker to report ready")
    client = Client(api_url, token)
    with DemoSite() as site:
        print(f"demo shop at {site.url('/catalogue')}", file=sys.stderr)
        if llm_configured(settings):
            specs = agent_jobs(site)
            print(f"LLM configured ({settings.llm_model}): {len(specs)} agent jobs find each product from the "
                  "catalogue", file=sys.stderr)
        else:
            specs = script_jobs(site)
            print(f"no LLM configured (set OPENAI_API_KEY or BROWSERD_LLM_BASE_URL for agent jobs): running "
                  f"{len(specs)} script-mode jobs that read each product page by CSS selector", file=sys.stderr)
        submitted = client.submit_batch(list(specs))
        print(f"batch {submitted.id}: {submitted.total} jobs queued", file=sys.stderr)
        record = follow_batch(lambda: client.batch(submitted.id), interval=0.3)
        batch = record.model_dump(mode="json")
        rows = [line.model_dump(mode="json") for line in client.results(submitted.id)]
        print_table(rows, out)
        print_metrics(api_url, metrics_port, out, kept=keep)
        counts = batch["counts"]
        print(f"\n{counts['succeeded']} of {batch['total']} jobs succeeded, {counts['failed']} failed", file=out)
        code = 0 if record.state is BatchState.completed and counts["succeeded"] == batch["total"] else 1
        if keep:
            print_kept(Kept(api_url=api_url, token=token, batch_id=submitted.id, shop=site.url("/catalogue")), out)
            wait_for_interrupt()
    return code


@dataclass(frozen=True)
class Kept:
    """What ``--keep`` leaves up, as the newcomer will use it."""

    api_url: str
    token: str
    batch_id: str
    shop: str


def print_kept(kept: Kept, out: TextIO) -> None:
    print(f"\nThe demo stays up until Ctrl-C:\n"
          f"  console  {kept.api_url}/ui/?token={kept.token}\n"
          f"  API      {kept.api_url} (token {kept.token}; browse it at {kept.api_url}/docs)\n"
          f"  shop     {kept.shop}\n"
          f"Try, in another shell:\n"
          f"  export BROWSERD_API_URL={kept.api_url} BROWSERD_API_TOKEN={kept.token}\n"
          f"  browserd results {kept.batch_id}     # this batch's results as JSON lines\n"
          f"  browserd jobs                        # the jobs, newest first", file=out, flush=True)


def wait_for_interrupt() -> None:
    """Until Ctrl-C or SIGTERM (both raise KeyboardInterrupt here); then the demo stops everything."""
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            signal.pause()


def print_table(rows: list[dict[str, Any]], out: TextIO) -> None:
    table = [("product", "price", "stock", "status")]
    for product, row in zip(PRODUCTS, rows):
        data = row.get("data") if isinstance(row.get("data"), dict) else {}
        table.append((str(data.get("name") or product.name), str(data.get("price") or "-"),
                      str(data.get("stock") or "-"), row["status"] + (f" ({row['category']})" if row.get("category") else "")))
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    print(file=out)
    for n, r in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def print_metrics(api_url: str, metrics_port: int, out: TextIO, *, kept: bool = False) -> None:
    worker_url = f"http://127.0.0.1:{metrics_port}/metrics"
    if kept:
        print(f"\nPrometheus metrics: {api_url}/metrics (jobs, queues, workers) and {worker_url} (the worker's "
              "jobs, steps, pool, LLM); a few of them:", file=out)
    else:  # no URL: the demo stops these processes as it ends
        print("\nPrometheus metrics, read from the API's /metrics and the worker's before the demo stops them "
              "(browserd demo --keep keeps them up); a few of them:", file=out)
    for url, shown in ((worker_url, WORKER_METRICS), (api_url + "/metrics", DAEMON_METRICS)):
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                text = reply.read().decode()
        except OSError as exc:
            print(f"  (could not read {url}: {exc})", file=out)
            continue
        for line in text.splitlines():
            if line.startswith(shown):
                print("  " + line, file=out)
