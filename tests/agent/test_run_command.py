"""``browserd run``: one job locally, no queue; prints per-step timings and the result, leaves no Chrome."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan


async def browserd(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "daemon", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})})
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode, out.decode(), err.decode()


async def test_run_a_script(site, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"go_to_url": {"url": site.url("agent/catalog.html")}},
                                  {"extract_fields": {"fields": {"title": "h1"}}},
                                  {"done": {"text": "read it"}}]))
    code, out, err = await browserd("run", "--script", str(script))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("step   1  dom ") and "go_to_url" in lines[0]
    assert "extract_fields" in lines[1] and "done" in lines[2]
    assert "status: succeeded" in out and "final answer: read it" in out and '"title": "Kitchen catalog"' in out


async def test_run_a_task_with_the_configured_model(site, llm):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="It ships to Italy now."))
    llm.add(NAVIGATOR, act({"select_dropdown_option": {"index": 1, "text": "Italy"}}), act({"done": {"text": "ok"}}))
    env = {"BROWSERD_LLM_BASE_URL": llm.base_url, "OPENAI_API_KEY": "test-key", "BROWSERD_LLM_MODEL": "scripted-1"}
    code, out, err = await browserd("run", "Ship it to Italy", "--start-url", site.url("agent/dropdown.html"),
                                    "--json", env=env)
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "succeeded" and result["final_answer"] == "It ships to Italy now."
    assert result["steps"][0]["actions"][0]["result"].startswith("selected 'Italy'")
    assert {r["model"] for r in llm.requests} == {"scripted-1"}


async def test_run_refuses_an_invalid_script(tmp_path):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps([{"click_element": {}}]))
    code, _, err = await browserd("run", "--script", str(script))
    assert code == 2 and "script[0].click_element: field index: Field required" in err
