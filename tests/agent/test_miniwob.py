"""MiniWoB++ tasks solved through the whole agent stack by a scripted oracle model.

The oracle (tests/agent/miniwob_oracle.py) answers over HTTP to the real ChatOpenAI client and
sees only the task utterance and the serialized page state, as a real model would; the actions
run with real input in Chromium. The task HTML comes from the ``miniwob`` package (a dev-only
extra, installed with ``pip install --no-deps miniwob``), served over http on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

import dom
from tests.agent.miniwob_oracle import HorizonOracle, oracle
from tests.support.jobs import run_job
from tests.support.servers import StaticServer, serve
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus

_spec = importlib.util.find_spec("miniwob")
HTML = Path(_spec.origin).parent / "html" if _spec and _spec.origin else None
pytestmark = pytest.mark.skipif(HTML is None or not HTML.is_dir(), reason="miniwob is not installed")

SEED = 7
ORACLE_TASKS = [
    "click-button", "click-button-sequence", "click-link", "click-dialog", "click-dialog-2", "click-option",
    "click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer", "click-tab", "click-test",
    "click-test-2", "click-test-transfer", "click-collapsible", "click-widget", "focus-text", "focus-text-2",
    "unicode-test", "sign-agreement", "enter-text", "enter-text-2", "enter-text-dynamic", "enter-password",
    "login-user", "find-word", "read-table", "simple-arithmetic", "simple-algebra", "form-sequence-2",
    "multi-layouts", "multi-orderings", "odd-or-even", "click-tab-2", "click-tab-2-easy", "click-collapsible-2",
    "click-menu", "text-transform", "choose-list", "click-scroll-list",
]


@pytest.fixture(scope="module")
def miniwob() -> Iterator[StaticServer]:
    assert HTML is not None
    with serve(HTML) as server:
        yield server


async def start_episode(lease, miniwob: StaticServer, task: str) -> str:
    """What MiniWoB's own Python harness does: open the task, seed it, start it; the utterance."""
    await lease.page.goto(miniwob.url(f"miniwob/{task}.html"))
    return await lease.page.evaluate(
        f"Math.seedrandom({SEED}); core.EPISODE_MAX_TIME = 120000; core.startEpisodeReal(); core.getUtterance()")


async def reward(lease) -> float:
    return await lease.page.evaluate("WOB_DONE_GLOBAL ? WOB_REWARD_GLOBAL : 0")


@pytest.mark.parametrize("task", ORACLE_TASKS)
async def test_oracle_model_solves(task, pool, miniwob, llm, settings):
    llm.responder = oracle
    async with pool.lease() as lease:
        utterance = await start_episode(lease, miniwob, task)
        result = await run_job(JobSpec(task=utterance, options={"max_steps": 8}), lease, settings=settings)
        got = await reward(lease)
    assert result.status == JobStatus.succeeded, result.error
    assert got > 0, f"{task}: {utterance!r} got reward {got}; steps: {[s.actions for s in result.steps]}"


@pytest.mark.parametrize("task", ORACLE_TASKS)
async def test_oracle_model_solves_with_a_rolling_horizon(task, pool, miniwob, llm, settings):
    llm.responder = HorizonOracle(horizon=3)
    async with pool.lease() as lease:
        utterance = await start_episode(lease, miniwob, task)
        spec = JobSpec(task=utterance, options={"max_steps": 30, "strategy": "rolling_horizon", "horizon": 3})
        result = await run_job(spec, lease, settings=settings)
        got = await reward(lease)
    assert result.status == JobStatus.succeeded, result.error
    assert got > 0, f"{task}: {utterance!r} got reward {got}; steps: {[s.actions for s in result.steps]}"
    assert {r["tool_choice"]["function"]["name"] for r in llm.requests} <= {"HorizonPlan", "ProceduralMemory"}


async def test_script_mode_solves_a_task(pool, miniwob):
    async with pool.lease() as lease:
        utterance = await start_episode(lease, miniwob, "login-user")
        user, password = utterance.split('"')[1], utterance.split('"')[3]
        # the script's author looked the indexes up once, as `browserd inspect` shows them
        state = await dom.capture(lease.page)
        fields = [e for e in state.elements.values() if e.tag == "input"]
        login = next(e for e in state.elements.values() if e.tag == "button" and e.text == "Login")
        script = [{"input_text": {"index": fields[0].index, "text": user}},
                  {"input_text": {"index": fields[1].index, "text": password}},
                  {"click_element": {"index": login.index}}, {"done": {"text": "logged in"}}]
        result = await run_job(JobSpec(script=script), lease)
        got = await reward(lease)
    assert result.status == JobStatus.succeeded, result.error
    assert got > 0
