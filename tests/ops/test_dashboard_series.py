"""The dashboard shows what operators asked for (issue 25, item 9): the politeness, session, recipe
and Redis-up series that were exported but on no panel, the reconciler's re-sends and republishes,
hard-limit abandons and worker capacity; and its "LLM error share" reads 0, not nothing, before the
first error. Every query names only series the code exports (``metrics.metric_names``), and
Prometheus's own ``promtool`` evaluates the error share."""

from __future__ import annotations

import json
import re
import runpy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import load_settings
from tests.ops.test_alerts import tool
from workers.instrument import serve_metrics
from workers.jobs import metrics

DOCKER = Path(__file__).resolve().parents[2] / "docker"
SERIES = re.compile(r"\bbrowserd_\w+")
ASKED = {
    "browserd_politeness_wait_seconds_bucket", "browserd_politeness_waiting_jobs",  # politeness
    "browserd_sessions_open", "browserd_session_commands_total", "browserd_sessions_ended_total",  # sessions
    "browserd_replay_steps_total", "browserd_llm_tokens_saved_total",  # recipes
    "browserd_redis_up",
    "browserd_reconciler_jobs_total", "browserd_jobs_abandoned_total",  # what the reconciler and hard limit do
    "browserd_worker_slots", "browserd_worker_jobs_running",  # capacity, saturation
}


@pytest.fixture(scope="module")
def exprs() -> list[str]:
    dashboard = json.loads((DOCKER / "grafana/dashboards/browserd.json").read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_every_asked_series_is_on_a_panel_and_every_query_names_exported_series(exprs: list[str]) -> None:
    used = {name for expr in exprs for name in SERIES.findall(expr)}
    assert ASKED <= used, sorted(ASKED - used)
    assert used <= metrics.metric_names(), sorted(used - metrics.metric_names())


def error_share_at(series: list[dict[str, str]], tmp_path: Path) -> str:
    """``promtool test rules`` evaluating the panel's query an hour into ``series``; returns its failure
    output ('' when the expected value matched)."""
    share = runpy.run_path(str(DOCKER / "grafana/dashboard.py"))["LLM_ERROR_SHARE"].replace("$__range", "1h")
    (tmp_path / "none.yml").write_text("groups: []\n")
    cases = []
    for expected, inputs in series:
        cases.append({"interval": "1m", "input_series": inputs,
                      "promql_expr_test": [{"expr": share, "eval_time": "60m",
                                            "exp_samples": [{"labels": "{}", "value": expected}]}]})
    (tmp_path / "share.test.yml").write_text(yaml.safe_dump({"rule_files": ["none.yml"], "tests": cases}))
    done = subprocess.run([tool("promtool"), "test", "rules", str(tmp_path / "share.test.yml")],
                          capture_output=True, text=True, timeout=60)
    return "" if done.returncode == 0 else done.stdout + done.stderr


def test_llm_error_share_reads_zero_before_the_first_error(tmp_path: Path) -> None:
    ok = {"series": 'browserd_llm_requests_total{model="m",outcome="ok"}', "values": "0+9x60"}
    failed = {"series": 'browserd_llm_requests_total{model="m",outcome="timeout"}', "values": "0+1x60"}
    nothing = {"series": "browserd_redis_up", "values": "1x60"}
    assert error_share_at([(0, [ok]), (0, [nothing]), (0.1, [ok, failed])], tmp_path) == ""


def test_worker_metrics_bind_where_the_setting_says() -> None:
    server = serve_metrics(load_settings(metrics_host="127.0.0.2", metrics_port=0), "w1@host")
    try:
        assert server is not None and server.server_address[0] == "127.0.0.2"
    finally:
        server.shutdown()
        server.server_close()
        metrics.WORKER_INFO.node = None  # this test process is no worker
