"""The agent's narrow config: made from the settings once, holding only what the agent reads."""

from __future__ import annotations

import ast
from pathlib import Path

from config import load_settings
from workers.agent.config import AgentConfig

AGENT = Path(__file__).resolve().parents[2] / "workers" / "agent"


def test_the_config_carries_the_settings_the_agent_reads_grouped() -> None:
    settings = load_settings(llm_base_url="http://127.0.0.1:9/v1/", openai_api_key="sk-test", planner_model="big",
                             navigator_temperature=0.5, max_steps=7, viewport_expansion=-1, download_max_mb=3,
                             download_max_files=2, artifact_screenshot_max_kb=20, max_extract_chars=500,
                             allowed_domains="a.test,b.test", allowed_networks="10.0.0.0/8", pause_max_seconds=9)
    config = AgentConfig.from_settings(settings)
    assert config.llm.base_url == "http://127.0.0.1:9/v1"
    assert (config.llm.role("planner").name, config.llm.role("navigator").name) == ("big", "gpt-4o-mini")
    assert config.llm.role("navigator").params == {"temperature": 0.5}
    assert (config.defaults.max_steps, config.defaults.viewport_expansion) == (7, -1)
    assert (config.downloads.max_bytes, config.downloads.max_files) == (3 * 1024 * 1024, 2)
    assert config.screenshots.max_bytes == 20 * 1024 and config.actions.max_extract_chars == 500
    assert config.egress.allowed_domains == ("a.test", "b.test")
    assert config.egress.allowed_networks == ("10.0.0.0/8",) and config.pause_max_seconds == 9


def test_secrets_stay_sealed_in_the_config_until_used() -> None:
    config = AgentConfig.from_settings(load_settings(openai_api_key="sk-very-secret",
                                                     secrets_key="x" * 43 + "="))
    assert "sk-very-secret" not in repr(config) and "xxxx" not in repr(config)
    assert config.llm.api_key is not None and config.llm.api_key.get_secret_value() == "sk-very-secret"


def test_no_agent_module_but_the_config_reads_the_settings() -> None:
    readers = []
    for path in sorted(AGENT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in ("config", "config.settings"):
                if any(alias.name in ("Settings", "get_settings", "load_settings") for alias in node.names):
                    readers.append(str(path.relative_to(AGENT)))
    assert readers == ["config.py"]
