"""An agent job through a real OpenAI-compatible server that browserd did not write (issue 24).

The server is LiteLLM's proxy (``litellm[proxy]`` from PyPI), a gateway as users deploy it in front
of their models: it parses each chat-completions request with its own request model, rewrites it
for its upstream (its ``openai/`` provider) and rewrites the answer back. Behind it is the strict
stand-in (tests/support/llm_server.py), scripted with the honest model of the fixture shop's search
and with an adversary. So the whole path is real but the model: the job's ChatOpenAI client talks
to LiteLLM's server process, whose own client talks to the stand-in.

LiteLLM lives in its own virtualenv (``.venv-gateway``, made by ``.ci/setup``: its pins are not
browserd's); ``BROWSERD_TEST_LITELLM`` may name another ``litellm`` executable. Without one the
tests skip, saying so; CI installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from config import load_settings
from tests.agent.scripted import run
from tests.support.adversaries import SEARCH_ANSWER, SEARCH_TASK, ClaimsAtOnce, SearchOracle
from tests.support.llm_server import LLMServer
from tests.support.proxies import free_port
from workers.jobs.model.status import FailureCategory, JobStatus

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MASTER_KEY = "sk-browserd-gateway-test"
MODEL = "shop-model"  # the gateway's name for the model; it maps it to the stand-in's
STARTUP_SECONDS = 300  # LiteLLM's proxy imports a great deal before it listens (11 s of CPU; minutes on a busy machine)


def litellm_executable() -> str | None:
    named = os.environ.get("BROWSERD_TEST_LITELLM")
    if named:
        return named
    local = ROOT / ".venv-gateway" / "bin" / "litellm"
    return str(local) if local.exists() else shutil.which("litellm")


@pytest.fixture(scope="module")
def upstream() -> Iterator[LLMServer]:
    with LLMServer() as llm:  # strict: what the gateway sends on must be what strict servers take
        yield llm


@pytest.fixture(scope="module")
def gateway(upstream: LLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """LiteLLM's proxy on a free port, routing ``MODEL`` to the stand-in; its base URL."""
    executable = litellm_executable()
    if executable is None:
        pytest.skip("LiteLLM's proxy is not installed: `bash .ci/setup` makes .venv-gateway with litellm[proxy] "
                    "(or set BROWSERD_TEST_LITELLM to a litellm executable)")
    folder = tmp_path_factory.mktemp("gateway")
    config = folder / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        "      model: openai/scripted-model\n"
        f"      api_base: {upstream.base_url}\n"
        "      api_key: upstream-key\n"
        "general_settings:\n"
        f"  master_key: {MASTER_KEY}\n"
        "litellm_settings:\n"
        "  num_retries: 0\n"
        "  telemetry: false\n")
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    env.pop("DATABASE_URL", None)
    log = (folder / "litellm.log").open("wb")
    proc = subprocess.Popen([executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    try:
        _until_ready(proc, base, folder / "litellm.log")
        yield f"{base}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _until_ready(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"LiteLLM's proxy exited ({proc.returncode}): {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/health/liveliness", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"LiteLLM's proxy did not answer within {STARTUP_SECONDS}s: {log.read_text()[-3000:]}")


def gateway_settings(gateway: str):
    return load_settings(llm_base_url=gateway, openai_api_key=MASTER_KEY, llm_model=MODEL, max_steps=8,
                         job_timeout=120, llm_timeout=60)


async def test_an_agent_job_through_litellms_proxy_succeeds_with_its_answer_shown(pool, site, upstream, gateway):
    upstream.responder = SearchOracle()
    before = len(upstream.requests)
    result, page, _ = await run(pool, gateway_settings(gateway), task=SEARCH_TASK,
                                start_url=site.url("agent/search.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == SEARCH_ANSWER and "24.50 EUR" in page
    assert result.verification.accepted and "evidence_seen" in result.verification.checks
    served = upstream.requests[before:]
    assert served and upstream.refused == []  # the gateway sent on nothing a strict server refuses
    assert {r["model"] for r in served} == {"scripted-model"}  # rewritten by the gateway for its upstream
    assert result.totals.llm_calls == len(served)  # every call counted, through the gateway too
    assert result.totals.input_tokens == 100 * len(served)  # the stand-in's usage, passed back by the gateway


async def test_a_model_claiming_done_at_once_through_the_gateway_ends_unverified(pool, site, upstream, gateway):
    upstream.responder = ClaimsAtOnce()
    result, page, _ = await run(pool, gateway_settings(gateway), task=SEARCH_TASK,
                                start_url=site.url("agent/search.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.unverified), result.error
    assert "24.50" not in page
