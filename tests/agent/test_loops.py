"""Loops caught: a model repeating itself on an unchanged page is told once, then stopped as ``stuck``.

The scripted navigator below does what looping models do: it picks the first element of the
page it is shown and clicks it, step after step, whatever happens.
"""

from __future__ import annotations

import re

from tests.agent.scripted import NAVIGATOR, PLANNER, act, last_state, plan, run
from tests.support.llm_server import Reply, offered_tool
from workers.agent.loops import NUDGE_AFTER, STOP_AFTER
from workers.agent.prompts.loops import LOOP_NUDGE
from workers.jobs.model.status import FailureCategory, JobStatus

NOTICE = LOOP_NUDGE.split(".")[0]  # "browserd notice: you are repeating yourself"
ELEMENT = re.compile(r"\[(\d+)\]<(?:button|a)\b")


def first_element(request) -> Reply:
    if offered_tool(request) == PLANNER:
        return plan()
    found = ELEMENT.search(last_state(request))
    assert found, last_state(request)
    return act({"click_element": {"index": int(found.group(1))}})


def notices(llm) -> list[int]:
    """The navigator requests (1-based) whose current state carries the loop notice."""
    return [i for i, r in enumerate(llm.requests_for(NAVIGATOR), start=1) if NOTICE in last_state(r)]


async def test_the_same_click_on_an_unchanged_page_is_stopped_as_stuck(pool, site, llm, settings):
    llm.responder = first_element
    result, _, _ = await run(pool, settings, task="Find an offer", start_url=site.url("agent/loops/stuck.html"),
                             options={"max_steps": 30})
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.stuck
    assert "repeated the same actions" in (result.error or "")
    assert len(result.steps) == 1 + NUDGE_AFTER + STOP_AFTER  # the first click, then its repeats
    assert notices(llm) == [1 + NUDGE_AFTER + 1]  # told once, in the prompt after the third repeat


async def test_a_cycle_of_pages_is_stopped_as_stuck(pool, site, llm, settings):
    llm.responder = first_element  # A's link to B, B's link to A, and round again
    result, _, _ = await run(pool, settings, task="Find the contact address",
                             start_url=site.url("agent/loops/a.html"), options={"max_steps": 30})
    assert result.category == FailureCategory.stuck
    assert len(result.steps) == 2 + NUDGE_AFTER + STOP_AFTER
    assert [s.url.rsplit("/", 1)[1] for s in result.steps[:4]] == ["a.html", "b.html", "a.html", "b.html"]
    assert len(notices(llm)) == 1


async def test_the_same_scroll_that_moves_nothing_is_stopped_as_stuck(pool, site, llm, settings):
    llm.responder = lambda request: plan() if offered_tool(request) == PLANNER else act({"scroll_to_bottom": {}})
    result, _, _ = await run(pool, settings, task="Read the whole page", start_url=site.url("agent/loops/stuck.html"),
                             options={"max_steps": 30})
    assert result.category == FailureCategory.stuck
    assert len(result.steps) <= 1 + NUDGE_AFTER + STOP_AFTER


async def test_the_same_click_that_changes_the_page_is_no_loop(pool, site, llm, settings):
    clicks = 8

    def counter(request) -> Reply:
        if offered_tool(request) == PLANNER:
            done = "Clicked 8 times" in last_state(request)
            return plan(done=done, final_answer="clicked 8 times" if done else "")
        if f"Clicked {clicks} times" in last_state(request):
            return act({"done": {"text": "clicked 8 times", "evidence": [f"Clicked {clicks} times"]}})
        return first_element(request)

    llm.responder = counter
    result, page_text, _ = await run(pool, settings, task="Click 'Add one' 8 times",
                                     start_url=site.url("agent/loops/counter.html"),
                                     options={"max_steps": 20, "planning_interval": 20})
    assert result.status == JobStatus.succeeded, result.error
    assert f"Clicked {clicks} times" in page_text
    assert notices(llm) == []


async def test_after_the_notice_a_model_that_changes_course_goes_on(pool, site, llm, settings):
    def obeys(request) -> Reply:
        if offered_tool(request) == PLANNER:
            done = "Page B" in last_state(request)
            return plan(done=done, final_answer="no offers" if done else "")
        if NOTICE in last_state(request):
            return act({"go_to_url": {"url": site.url("agent/loops/b.html")}})
        if "Page B" in last_state(request):
            return act({"done": {"text": "no offers", "evidence": ["Nothing here either."]}})
        return first_element(request)

    llm.responder = obeys
    result, _, url = await run(pool, settings, task="Find an offer", start_url=site.url("agent/loops/stuck.html"),
                               options={"max_steps": 30, "planning_interval": 30})
    assert result.status == JobStatus.succeeded, result.error
    assert url.endswith("b.html")
    assert len(notices(llm)) == 1


async def test_waiting_on_an_unchanged_page_is_no_loop(pool, site, llm, settings):
    """Waiting for a slow page (or noting findings) on a page that does not change is not watched."""
    llm.responder = lambda request: plan() if offered_tool(request) == PLANNER else act({"wait": {"seconds": 0}})
    result, _, _ = await run(pool, settings, task="Wait for the offers", start_url=site.url("agent/loops/stuck.html"),
                             options={"max_steps": 9})
    assert result.category == FailureCategory.max_steps
    assert notices(llm) == []
