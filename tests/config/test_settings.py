"""Settings: read from the environment, refused with the variable's name when wrong."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cdp import PoolConfig
from config import ConfigError, Settings, load_settings, settings_table

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_and_environment(monkeypatch):
    monkeypatch.setenv("BROWSERD_POOL_BROWSERS", "3")
    monkeypatch.setenv("BROWSERD_CDP_URLS", "ws://10.0.0.5:9222/devtools/browser/x, http://10.0.0.6:9222")
    monkeypatch.setenv("BROWSERD_LOG_LEVEL", "debug")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    s = load_settings()
    assert s.pool_browsers == 3
    assert s.cdp_urls == ["ws://10.0.0.5:9222/devtools/browser/x", "http://10.0.0.6:9222"]
    assert s.log_level == "DEBUG"
    assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == "sk-secret"
    assert s.model_for("planner") == s.llm_model


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("BROWSERD_POOL_BROWSERS", "-1", "greater than or equal to 0"),
        ("BROWSERD_LOG_LEVEL", "verbose", "'DEBUG', 'INFO'"),
        ("BROWSERD_LLM_BASE_URL", "not a url", "valid URL"),
        ("BROWSERD_REDIS_URL", "localhost:6379", "redis://"),
        ("BROWSERD_CDP_URLS", "localhost:9222", "ws://"),
        ("BROWSERD_SEARCH_URL", "https://example.com/?q=", "{query}"),
    ],
)
def test_bad_values_name_the_variable(monkeypatch, variable, value, message):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert variable in str(info.value) and message in str(info.value)


@pytest.mark.e2e  # python -m daemon config
def test_cli_masks_secrets_and_fails_cleanly_on_bad_values():
    env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-very-secret", "BROWSERD_API_TOKEN": "tok-secret"}
    shown = subprocess.run(
        [sys.executable, "-m", "daemon", "config"], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    ).stdout
    assert "OPENAI_API_KEY=********" in shown and "BROWSERD_API_TOKEN=********" in shown
    assert "secret" not in shown
    bad = subprocess.run(
        [sys.executable, "-m", "daemon", "config"],
        capture_output=True, text=True, env={**env, "BROWSERD_POOL_WARM": "-2"}, cwd=ROOT,
    )
    assert bad.returncode == 2
    assert "BROWSERD_POOL_WARM='-2'" in bad.stderr and "Traceback" not in bad.stderr


def test_docs_configuration_table_matches_the_code():
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text()
    assert settings_table() in page, "docs/reference/configuration.md is stale: run `python -m docs.gen`"
    for name in Settings.model_fields:
        assert re.search(rf"`(BROWSERD_)?{name.upper()}`", page)


def test_logs_carry_the_bound_job_context(capsys):
    import json
    import logging

    from config import bind, setup_logging

    setup_logging("INFO", json_lines=True)
    try:
        with bind(job_id="job-1", step=3):
            with bind(url="http://127.0.0.1/"):
                logging.getLogger("browserd.test").info("clicked %s", "[12]")
        logging.getLogger("browserd.test").info("outside")
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    finally:
        logging.getLogger().handlers.clear()
    assert lines[0]["msg"] == "clicked [12]"
    assert (lines[0]["job_id"], lines[0]["step"], lines[0]["url"]) == ("job-1", 3, "http://127.0.0.1/")
    assert "job_id" not in lines[1]


def test_pool_browsers_follow_the_concurrency_unless_set():
    """0 (the default): one browser per pool_jobs_per_browser concurrent jobs, rounded up; a set count
    or a list of browsers to attach to wins; the warm contexts are the process's, shared out."""
    auto = [Settings(worker_concurrency=c).pool_browser_count() for c in (1, 4, 16, 17, 32, 33)]
    assert auto == [1, 1, 1, 2, 2, 3]
    assert Settings(worker_concurrency=32, pool_jobs_per_browser=8).pool_browser_count() == 4
    assert Settings(worker_concurrency=32, pool_browsers=1).pool_browser_count() == 1
    assert Settings(worker_concurrency=32, cdp_urls=["http://10.0.0.6:9222"]).pool_browser_count() == 1
    config = PoolConfig.from_settings(Settings(worker_concurrency=32, pool_warm=32))
    assert (config.browsers, config.warm) == (2, 16)
    config = PoolConfig.from_settings(Settings(worker_concurrency=4, pool_warm=3, pool_browsers=2))
    assert (config.browsers, config.warm) == (2, 2)
