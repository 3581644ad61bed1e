"""Procedural memory: a long job's history is summarised every ``memory_interval`` steps, stays
under ``max_input_tokens``, and keeps its findings."""

from __future__ import annotations

import json
import re

from tests.agent.scripted import NAVIGATOR, PLANNER, act, last_state, plan, run
from tests.support.llm_server import Reply, offered_tool
from workers.jobs.model.status import JobStatus

MEMORY = "ProceduralMemory"
BUDGET = 3500
FOUND = {5: "Kettle 10 costs 10.50", 15: "Toaster 11 costs 11.50", 25: "Grinder 12 costs 12.50",
         35: "Blender 13 costs 13.50"}


def request_chars(request) -> int:
    """What a request's history weighs in characters (the token estimate is characters / 3)."""
    total = 0
    for m in request["messages"]:
        total += len(m.get("content") or "")
    return total


def responder(request) -> Reply:
    if offered_tool(request) == MEMORY:
        steps = re.findall(r"\[State at step (\d+)\]", request["messages"][-1]["content"])
        return Reply.tool({"summary": f"Waited on the shop page in steps {','.join(steps)}."})
    step = int(re.search(r"Current step: (\d+)/", last_state(request)).group(1))
    if step in FOUND:
        return act({"cache_content": {"content": FOUND[step]}})
    if step == 40:
        return act({"done": {"text": "; ".join(FOUND.values())}})
    return act({"wait": {"seconds": 0}})


async def test_a_40_step_job_stays_under_budget_with_its_findings(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="; ".join(FOUND.values())))
    llm.responder = responder
    result, _, _ = await run(pool, settings, task="Note four prices, one every ten steps",
                             start_url=site.url("agent/shop/page-1.html"),
                             options={"max_steps": 40, "planning_interval": 100, "max_input_tokens": BUDGET,
                                      "memory_interval": 10})
    assert result.status == JobStatus.succeeded, result.error
    assert len(result.steps) == 40 and result.data == {"cached": list(FOUND.values())}
    summaries = llm.requests_for(MEMORY)
    assert len(summaries) == 3  # after steps 10, 20 and 30; the 40th is the last
    assert "Steps 11-20:" in summaries[1]["messages"][-1]["content"]
    assert "[State at step 11]" in summaries[1]["messages"][-1]["content"]
    assert "untrusted_content_" in summaries[1]["messages"][-1]["content"]
    navigator = llm.requests_for(NAVIGATOR)
    assert max(request_chars(r) for r in navigator) <= BUDGET * 3
    history = [m["content"] or "" for m in navigator[-1]["messages"]]
    headers = [h.split("\n")[0] for h in history if h.startswith("[Summary of steps")]
    assert headers == ["[Summary of steps 1-10]", "[Summary of steps 11-20]", "[Summary of steps 21-30]"]
    assert any("steps 21,22,23,24,25,26,27,28,29,30." in h for h in history)
    memory = next(h for h in history if h.startswith("[Memory:"))
    assert all(f"cached: {found}" in memory for found in FOUND.values())
    assert result.totals.llm_calls == 40 + 2 + 3  # navigator, planner, summaries
    assert sum(s.input_tokens for s in result.steps) == 100 * result.totals.llm_calls


async def test_memory_interval_zero_never_summarises(pool, site, llm, settings):
    llm.add(PLANNER, plan())
    llm.responder = lambda request: act({"wait": {"seconds": 0}})
    result, _, _ = await run(pool, settings, task="wait", start_url=site.url("agent/catalog.html"),
                             options={"max_steps": 3, "memory_interval": 0})
    assert result.category == "max_steps"
    assert llm.requests_for(MEMORY) == []
    assert all("Summary of steps" not in json.dumps(r["messages"]) for r in llm.requests)
