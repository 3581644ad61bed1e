"""One browserd deployment shared by the batch, schedule, webhook and metrics tests.

redis-server, the API, one worker (metrics on a free port, webhook secret set) and a beat, all
real processes, started once for the package and always stopped.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.queue.stack import Proc, Stack, wait_until
from tests.support.llm_server import LLMServer, Reply

WEBHOOK_SECRET = "test-webhook-secret"
SECRETS_KEY = "Z3JlYXQtdGVzdC1rZXktb2YtMzItYnl0ZXMtZXhhY3Q="  # 32 bytes, url-safe base64: a Fernet key


def finish_at_once(request: dict) -> Reply:
    """The scripted model: every agent job is done at its first step, and the planner agrees."""
    tool = (request.get("tools") or [{}])[0].get("function", {}).get("name")
    if tool == "AgentOutput":
        state = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "finish"}
        return Reply.tool({"current_state": state, "action": [{"done": {"text": "agent done", "success": True}}]})
    return Reply.tool({"observation": "page", "challenges": "", "done": True, "next_steps": "",
                       "final_answer": "agent done", "reasoning": "test", "web_task": True})


@pytest.fixture(scope="session")
def llm() -> Iterator[LLMServer]:
    with LLMServer() as server:
        server.responder = finish_at_once
        yield server


@pytest.fixture(scope="session")
def ops(llm: LLMServer) -> Iterator[Stack]:
    # the receivers run on 127.0.0.1: the tests open that one address to webhooks, as an operator would
    s = Stack(metrics_port=0, webhook_secret=WEBHOOK_SECRET, webhook_allowed_networks="127.0.0.1/32", log_level="INFO",
              secrets_key=SECRETS_KEY,
              llm_base_url=llm.base_url, openai_api_key="sk-test")
    try:
        s.start_api()
        s.start_worker(concurrency=8)
        beat = Proc("beat", [sys.executable, "-m", "daemon", "beat", "--max-interval=1"], s.env, s.dir)
        s.workers.append(beat)  # stopped with the workers
        wait_until(lambda: beat.alive and "beat: Starting" in beat.log(100_000) or _dead(beat), 60, "beat to start")
        yield s
    finally:
        s.close()


def _dead(proc: Proc) -> bool:
    if not proc.alive:
        raise AssertionError(f"{proc.name} exited:\n{proc.log()}")
    return False
