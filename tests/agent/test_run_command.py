"""``browserd run``: one job locally, no queue; prints per-step timings and the result, leaves no Chrome.

It runs the job through the same pipeline as a worker: result limits, offloading to the artifact
store, stored auth profiles and credential sets (from the shared store, ``BROWSERD_REDIS_URL``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from cryptography.fernet import Fernet
import pytest

from config import load_settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan
from tests.agent.test_profiles import LoginSite
from workers.jobs.profiles.models import StorageState
from workers.jobs.profiles.store import ProfileStore
from workers.jobs.secrets.credentials import CredentialStore
from workers.jobs.secrets.models import CredentialSet
from workers.jobs.store.connection import connect

pytestmark = pytest.mark.e2e  # every test runs python -m daemon run


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


# --- the worker's path: browserd run is the same pipeline (issue 21) ------------------------------

KEY = Fernet.generate_key().decode()


def script_file(tmp_path, actions: list[dict]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(actions))
    return str(path)


async def test_run_refuses_a_result_over_the_limit(site, tmp_path):
    """BROWSERD_MAX_RESULT_BYTES holds for a local run as for a worker's job."""
    script = script_file(tmp_path, [{"go_to_url": {"url": site.url("agent/long.html")}},
                                    {"extract_content": {"goal": "all of it"}}, {"done": {"text": "read"}}])
    code, out, err = await browserd("run", "--script", script, "--json", env={"BROWSERD_MAX_RESULT_BYTES": "1024"})
    result = json.loads(out)
    assert code == 1, err
    assert (result["status"], result["category"]) == ("failed", "invalid_output")
    assert "BROWSERD_MAX_RESULT_BYTES" in result["error"]


async def test_run_offloads_a_large_result_to_the_artifact_store(site, tmp_path):
    script = script_file(tmp_path, [{"go_to_url": {"url": site.url("agent/long.html")}},
                                    {"scroll_to_bottom": {}}, {"scroll_to_top": {}}, {"done": {"text": "x" * 3000}}])
    store = tmp_path / "store"
    code, out, err = await browserd("run", "--script", script, "--json",
                                    env={"BROWSERD_ARTIFACT_INLINE_BYTES": "1024", "BROWSERD_ARTIFACTS_URL": f"file://{store}"})
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "succeeded" and result["final_answer"] == "x" * 3000 and len(result["steps"]) == 4
    job_id = result["result_artifact"].split("/")[3]  # kept in the store, read back in for the output
    kept = json.loads((store / "jobs" / job_id / "result.json").read_text())
    assert kept["final_answer"] == "x" * 3000 and len(kept["steps"]) == 4


async def test_run_starts_from_a_stored_profile(redis, tmp_path):
    login = LoginSite()
    try:
        host = login.origin.split("//")[1].split(":")[0]
        state = StorageState.model_validate({"cookies": [{"name": "sid", "value": "s-1234", "domain": host,
                                                          "path": "/", "expires": -1}]})
        client = connect(redis.url)
        await ProfileStore(client, load_settings(secrets_key=KEY)).put("acme", state)
        await client.aclose()
        script = script_file(tmp_path, [{"go_to_url": {"url": f"{login.origin}/account"}},
                                        {"extract_fields": {"fields": {"server": "#server"}}}])
        env = {"BROWSERD_REDIS_URL": redis.url, "BROWSERD_SECRETS_KEY": KEY}
        code, out, err = await browserd("run", "--script", script, "--profile", "acme", "--json", env=env)
        assert code == 0, err
        assert json.loads(out)["data"] == {"server": "signed in"}
        code, out, _ = await browserd("run", "--script", script, "--profile", "nobody", "--json", env=env)
        assert code == 1 and json.loads(out)["category"] == "profile_missing"
    finally:
        login.close()


async def test_run_types_from_a_stored_credential_set(redis, site, tmp_path):
    client = connect(redis.url)
    await CredentialStore(client, load_settings(secrets_key=KEY)).put(
        CredentialSet(name="shop", secrets={"password": "hunter2hunter2"}))
    await client.aclose()
    script = script_file(tmp_path, [{"go_to_url": {"url": site.url("agent/login.html")}},
                                    {"input_text": {"index": 2, "text": "<secret>password</secret>"}},
                                    {"click_element": {"index": 3}}, {"done": {"text": "signed in"}}])
    env = {"BROWSERD_REDIS_URL": redis.url, "BROWSERD_SECRETS_KEY": KEY}
    code, out, err = await browserd("run", "--script", script, "--credentials", "shop", "--json", env=env)
    assert code == 0, err
    result = json.loads(out)
    assert "password=<secret>password</secret>" in result["steps"][-1]["url"], "the set's value was typed and sent"
    assert "hunter2hunter2" not in out + err
    code, out, _ = await browserd("run", "--script", script, "--credentials", "gone", "--json", env=env)
    assert code == 1 and json.loads(out)["category"] == "credentials_missing"
