"""Writes dashboards/browserd.json, the Grafana dashboard the compose stack provisions.

Edit the panels here, then run ``python docker/grafana/dashboard.py``; tests/ops checks that the
JSON file matches this script's output and that every metric it queries exists. Panels are laid
out left to right in rows of 24 grid units, so no panel needs coordinates by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "dashboards" / "browserd.json"
DS = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"


def q(expr: str, legend: str = "") -> dict[str, Any]:
    return {"expr": expr, "legendFormat": legend}


def quantiles(metric: str, by: str = "", qs: tuple[float, ...] = (0.5, 0.95)) -> list[dict[str, Any]]:
    """p50/p95 of a histogram, optionally one line per ``by`` label."""
    labels = f"le, {by}" if by else "le"
    return [
        q(f"histogram_quantile({x}, sum by ({labels}) (rate({metric}_bucket[{RATE}])))",
          f"p{int(x * 100)}" + (f" {{{{{by}}}}}" if by else ""))
        for x in qs
    ]


def panel(kind: str, title: str, targets: list[dict[str, Any]], w: int, h: int, unit: str = "short",
          stack: bool = False, description: str = "") -> dict[str, Any]:
    custom = {"stacking": {"mode": "normal"}, "fillOpacity": 40} if stack else {"fillOpacity": 10}
    return {
        "type": kind, "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "targets": [{"refId": chr(65 + i), "datasource": DS, **t} for i, t in enumerate(targets)],
        "fieldConfig": {"defaults": {"unit": unit, **({"custom": custom} if kind == "timeseries" else {})},
                        "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}} if kind == "timeseries"
        else {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value"},
    }


def graph(title: str, targets: list[dict[str, Any]], unit: str = "short", **kw: Any) -> dict[str, Any]:
    return panel("timeseries", title, targets, w=12, h=8, unit=unit, **kw)


def stat(title: str, expr: str, unit: str = "short", h: int = 4, **kw: Any) -> dict[str, Any]:
    return panel("stat", title, [q(expr)], w=6, h=h, unit=unit, **kw)


def row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "gridPos": {"w": 24, "h": 1}, "panels": []}


FINISHED = f'sum(rate(browserd_jobs_total{{state=~"succeeded|failed"}}[{RATE}]))'
WORKER_JOB = 'job="browserd-worker"'  # the scrape job prometheus.yml gives workers
NODE = 'browserd_worker_info{worker=~"$worker"}'  # the workers the variable picks, by Celery node name


def by_worker(series: str) -> str:
    """``series`` (a worker's own, known by scrape address) labelled with its worker's Celery node name
    and kept only for the workers the variable picks: each worker's scrape serves
    ``browserd_worker_info{worker}``, joined here on the target (``job``, ``instance``)."""
    return f"{series} * on (job, instance) group_left (worker) {NODE}"


API = f"browserd_api_requests_total[{RATE}]"


# Errors over requests, 0 rather than nothing before the first error (no series with outcome!="ok"
# yet) or with no request in the range (nothing to divide by).
LLM_ERROR_SHARE = ('(sum(rate(browserd_llm_requests_total{outcome!="ok"}[$__range])) or vector(0)) / '
                   '(sum(rate(browserd_llm_requests_total[$__range])) > 0 or vector(1))')


def cost(fn: str, window: str) -> str:
    """USD the workers priced (``browserd_llm_cost_usd_total``: the price table per model)."""
    return f"sum({fn}(browserd_llm_cost_usd_total[{window}]))"


PANELS = [
    row("Jobs"),
    stat("Throughput (jobs/min)", f"sum(rate(browserd_jobs_total[{RATE}])) * 60"),
    stat("Success rate", 'sum(rate(browserd_jobs_total{state="succeeded"}[$__range])) / '
         'sum(rate(browserd_jobs_total{state=~"succeeded|failed"}[$__range]))', "percentunit"),
    stat("Jobs running", 'sum(browserd_jobs_in_state{state="running"})'),
    stat("Workers up", "max(browserd_workers_up)",
         description="Workers (Celery nodes) with a fresh heartbeat in Redis; 'Live workers' below names them."),
    graph("Throughput by final state (jobs/min)", [q(f"sum by (state) (rate(browserd_jobs_total[{RATE}])) * 60",
                                                     "{{state}}")], stack=True),
    graph("Success rate and failures by category (share of finished jobs)", [
        q(f'sum(rate(browserd_jobs_total{{state="succeeded"}}[{RATE}])) / {FINISHED}', "success rate"),
        q(f'sum by (category) (rate(browserd_jobs_total{{state="failed"}}[{RATE}])) / scalar({FINISHED})',
          "failed: {{category}}"),
    ], "percentunit"),
    graph("Job duration", quantiles("browserd_job_duration_seconds"), "s"),
    graph("Queue wait (enqueue to start)", quantiles("browserd_job_queue_wait_seconds"), "s"),
    row("Queue"),
    graph("Queue depth by queue", [q('sum by (queue) (browserd_queue_depth{queue!="webhooks"})', "{{queue}}")],
          stack=True),
    graph("Jobs by state", [q('sum by (state) (browserd_jobs_in_state{state=~"queued|running|retrying"})', "{{state}}")]),
    graph("Batches and schedule runs (per hour)", [
        q(f"sum(rate(browserd_batches_submitted_total[{RATE}])) * 3600", "batches submitted"),
        q(f"sum(rate(browserd_batches_completed_total[{RATE}])) * 3600", "batches completed"),
        q(f"sum by (outcome) (rate(browserd_schedule_runs_total[{RATE}])) * 3600", "schedule runs: {{outcome}}"),
    ]),
    graph("Live workers", [q('max by (worker) (browserd_worker_up{worker=~"$worker"})', "{{worker}}")],
          description="One line per worker with a fresh heartbeat, by Celery node name (as Flower and "
          "celery-exporter's hostname label name it)."),
    graph("Worker saturation (jobs running / slots)", [
        q(f"sum by (worker) ({by_worker('browserd_worker_jobs_running')}) / "
          f"sum by (worker) ({by_worker('browserd_worker_slots')})", "{{worker}}"),
    ], "percentunit", description="A worker's running jobs over its slots (its concurrency); at 100% new jobs wait."),
    graph("Job slots (capacity)", [q(f"sum({by_worker('browserd_worker_slots')})", "slots"),
                                   q(f"sum({by_worker('browserd_worker_jobs_running')})", "running")]),
    graph("Reconciler: jobs sent again (per hour)", [
        q(f"sum by (action) (rate(browserd_reconciler_jobs_total[{RATE}])) * 3600", "{{action}}"),
    ], description="resent: running with a stale heartbeat (its worker died), sent again as a retry; "
       "republished: queued with no message in the broker (lost, or dropped by celery purge)."),
    graph("Jobs abandoned at the hard limit (per hour)", [
        q(f"sum(rate(browserd_jobs_abandoned_total[{RATE}])) * 3600", "abandoned"),
    ], description="Runs that ignored their cancel past the hard time limit; the reconciler settles them."),
    row("Agent steps"),
    graph("Step time breakdown (seconds per step)", [
        q(f"sum by (phase) (rate(browserd_step_duration_seconds_sum[{RATE}])) / "
          f"scalar(sum(rate(browserd_agent_steps_total[{RATE}])))", "{{phase}}"),
    ], "s", stack=True, description="Mean time per step in DOM capture, LLM calls and actions."),
    graph("Steps per second", [q(f"sum(rate(browserd_agent_steps_total[{RATE}]))", "steps/s")]),
    graph("DOM capture time", quantiles("browserd_dom_capture_seconds"), "s"),
    graph("Elements per capture", quantiles("browserd_dom_elements")),
    row("LLM"),
    graph("Tokens per second by model", [
        q(f"sum by (model, direction) (rate(browserd_llm_tokens_total[{RATE}]))", "{{model}} {{direction}}"),
    ], stack=True),
    graph("LLM cost (USD/hour)", [q(f"{cost('rate', RATE)} * 3600", "USD/hour"),
                                  q(f"sum by (tenant) (rate(browserd_llm_cost_usd_total[{RATE}])) * 3600", "{{tenant}}")],
          "currencyUSD", description="What the workers priced each LLM call at (the price table per model, "
          "BROWSERD_LLM_PRICES), in all and by tenant; unpriced models count nothing."),
    stat("LLM cost over the range (USD)", cost("increase", "$__range"), "currencyUSD", h=8),
    stat("LLM error share", LLM_ERROR_SHARE, "percentunit", h=8,
         description="0 until the first failed request (and with no request in the range)."),
    graph("LLM requests by outcome", [q(f"sum by (outcome) (rate(browserd_llm_requests_total[{RATE}]))",
                                        "{{outcome}}")], "reqps", stack=True),
    graph("LLM latency by model", quantiles("browserd_llm_latency_seconds", "model"), "s"),
    row("Browser pool"),
    graph("Pool health: browsers by state, leases in use", [
        q(f"sum by (state) ({by_worker('browserd_pool_browsers')})", "browsers {{state}}"),
        q(f"sum({by_worker('browserd_pool_leases_in_use')})", "leases in use"),
    ]),
    graph("Lease wait", quantiles("browserd_pool_lease_wait_seconds"), "s"),
    graph("Browser crashes and recycles", [
        q(f"sum({by_worker(f'increase(browserd_browser_crashes_total[{RATE}])')})", "crashes"),
        q(f"sum by (reason) ({by_worker(f'increase(browserd_browser_recycles_total[{RATE}])')})",
          "recycled: {{reason}}"),
    ]),
    graph("Chrome memory per worker (PSS)", [q(f"sum by (worker) ({by_worker('browserd_pool_memory_bytes')})",
                                               "{{worker}}")], "bytes",
          description="All browser processes of a worker's pool; a browser is recycled past BROWSERD_POOL_MAX_MEMORY_MB."),
    row("Workers"),
    graph("Worker CPU (cores)", [q(by_worker(f"rate(process_cpu_seconds_total[{RATE}])"), "{{worker}}")],
          description="The worker process itself (Python); Chrome's CPU is not included."),
    graph("Worker memory (RSS)", [q(by_worker("process_resident_memory_bytes"), "{{worker}}")], "bytes",
          description="The worker process itself (Python); Chrome's memory is in 'Chrome memory per worker'."),
    row("Politeness, sessions and recipes"),
    graph("Politeness wait", quantiles("browserd_politeness_wait_seconds", "kind"), "s",
          description="slot: a concurrency slot on the job's domain; navigation: the domain's delay between navigations."),
    graph("Jobs waiting for politeness", [q("sum by (kind) (browserd_politeness_waiting_jobs)", "{{kind}}")]),
    graph("Interactive sessions", [
        q("max(browserd_sessions_open)", "open"),
        q(f"sum by (reason) (rate(browserd_sessions_ended_total[{RATE}])) * 3600", "ended/hour: {{reason}}"),
    ]),
    graph("Session commands by outcome", [
        q(f"sum by (outcome) (rate(browserd_session_commands_total[{RATE}]))", "{{outcome}}"),
    ], "reqps", stack=True),
    graph("Recipe steps by outcome", [q(f"sum by (outcome) (rate(browserd_replay_steps_total[{RATE}]))", "{{outcome}}")],
          stack=True, description="replayed: run from the recipe with no LLM; healed: run by the agent; failed."),
    stat("LLM tokens saved by recipes", "sum(increase(browserd_llm_tokens_saved_total[$__range])) or vector(0)", h=8),
    row("Webhooks"),
    graph("Webhook backlog (deliveries waiting)", [q('sum(browserd_queue_depth{queue="webhooks"})', "waiting")]),
    graph("Webhook attempts by outcome", [
        q(f"sum by (outcome) (rate(browserd_webhook_deliveries_total[{RATE}]))", "{{outcome}}"),
    ], "reqps", stack=True, description="given_up: every retry failed, the notification is lost."),
    graph("Webhook delivery time", quantiles("browserd_webhook_delivery_seconds"), "s"),
    row("API"),
    graph("API requests by status class", [q(f"sum by (status) (rate({API}))", "{{status}}")], "reqps", stack=True),
    graph("API errors by route (4xx and 5xx)", [
        q(f'sum by (route, status) (rate(browserd_api_requests_total{{status=~"4xx|5xx"}}[{RATE}]))',
          "{{status}} {{route}}"),
    ], "reqps"),
    graph("API latency by route (to response headers)", quantiles("browserd_api_request_duration_seconds", "route",
                                                                  qs=(0.95,)), "s"),
    row("Redis"),
    stat("Redis up (as the API reads it)", "min(browserd_redis_up)", h=8,
         description="0: the API's last scrape could not read Redis (queue, jobs and workers read nothing)."),
    graph("Redis memory", [
        q("max(redis_memory_used_bytes)", "used"),
        q("max(redis_memory_max_bytes) > 0", "maxmemory (writes refused above it: noeviction)"),
    ], "bytes", description="From the stack's redis-exporter."),
    stat("browserd versions running", "count by (version) (browserd_build_info)", h=8),
]


def layout(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Place panels left to right, wrapping at 24 units; rows start a new line."""
    x = y = line_h = 0
    for number, p in enumerate(panels, start=1):
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if x + w > 24 or p["type"] == "row":
            x, y, line_h = 0, y + line_h, 0
        p["id"], p["gridPos"] = number, {"x": x, "y": y, "w": w, "h": h}
        x, line_h = x + w, max(line_h, h)
        if p["type"] == "row":
            x, y, line_h = 0, y + h, 0
    return panels




WORKER_VARIABLE = {
    "type": "query", "name": "worker", "label": "Worker", "datasource": DS, "hide": 0, "refresh": 2,
    "query": {"query": f"label_values(browserd_worker_info{{{WORKER_JOB}}}, worker)", "refId": "worker"},
    "definition": f"label_values(browserd_worker_info{{{WORKER_JOB}}}, worker)",
    "multi": True, "includeAll": True, "allValue": ".*", "sort": 1,
    "current": {"text": ["All"], "value": ["$__all"]}, "options": [],
    "description": "A worker's Celery node name (as in 'Live workers', Flower and celery-exporter): filters "
                   "the live workers, pool and worker panels.",
}

# Firing browserd alerts (Prometheus's own ALERTS series) as marks on every panel.
ALERT_ANNOTATIONS = {
    "name": "Alerts", "datasource": DS, "enable": True, "iconColor": "red", "step": "60s",
    "expr": 'ALERTS{alertstate="firing", alertname=~"Browserd.*"}',
    "titleFormat": "{{alertname}}", "textFormat": "{{severity}}", "tagKeys": "severity",
    "useValueForTime": False,
}


def dashboard() -> dict[str, Any]:
    return {
        "uid": "browserd", "title": "browserd", "tags": ["browserd"], "editable": True,
        "schemaVersion": 39, "version": 1, "refresh": "30s", "timezone": "browser", "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"},
        "annotations": {"list": [ALERT_ANNOTATIONS]},
        "templating": {"list": [
            {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus",
             "hide": 0, "current": {"text": "Prometheus", "value": "prometheus"}},
            WORKER_VARIABLE,
        ]},
        "panels": layout([json.loads(json.dumps(p)) for p in PANELS]),
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
