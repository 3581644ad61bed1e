"""Dropdowns that are not native selects: ARIA comboboxes and listboxes, custom div menus, and a
hostile menu. The fixture pages react only to trusted (real) input, so a selection that shows on
the page was made with real clicks. Native selects: tests/agent/test_agent.py::test_dropdown."""

from __future__ import annotations

import json

from tests.agent.scripted import NAVIGATOR, PLANNER, act, last_state, plan, run
from tests.agent.test_injection import untrusted_blocks
from workers.jobs.model.status import JobStatus


def results(llm) -> list[str]:
    """The state message of each navigator request after the first (it holds the last results)."""
    return [last_state(r) for r in llm.requests_for(NAVIGATOR)[1:]]


async def test_aria_combobox_and_listbox(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(), plan(done=True, final_answer="Banana, Large"))
    llm.add(NAVIGATOR,
            act({"get_dropdown_options": {"index": 1}}),
            act({"select_dropdown_option": {"index": 1, "text": "Banana"}}),
            act({"get_dropdown_options": {"index": 2}}),
            act({"select_dropdown_option": {"index": 2, "text": "large"}}),
            act({"done": {"text": "ok"}}))
    result, text, _ = await run(pool, settings, task="Order a large banana", start_url=site.url("dropdowns/aria.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert "fruit: Banana; size: Large" in text
    listed, chosen, sizes, size = results(llm)[:4]
    assert "0: text='Apple'\n1: text='Banana'\n2: text='Cherry'" in listed
    assert "Choose a fruit" in listed and "Banana" not in listed.split("Action result")[0]  # closed again
    assert "selected 'Banana' in [1]" in chosen and "it shows 'Banana'" in chosen
    assert "0: text='Small'\n1: text='Medium'\n2: text='Large'" in sizes
    assert "selected 'Large' in [2]" in size
    assert all(a.ok for s in result.steps for a in s.actions)


async def test_custom_div_dropdown(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Rome"))
    llm.add(NAVIGATOR,
            act({"get_dropdown_options": {"index": 1}}),
            act({"select_dropdown_option": {"index": 1, "text": "Rome"}}),
            act({"done": {"text": "ok"}}))
    result, text, _ = await run(pool, settings, task="Deliver to Rome", start_url=site.url("dropdowns/custom.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert "city: Rome" in text
    listed, chosen = results(llm)[:2]
    assert "0: text='Paris'\n1: text='Berlin'\n2: text='Rome'" in listed
    assert "Paris" not in listed.split("Action result")[0]  # the menu it opened was closed again
    assert "selected 'Rome' in [1]" in chosen


async def test_a_missing_option_is_an_error_naming_the_options(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="no Madrid"))
    llm.add(NAVIGATOR,
            act({"select_dropdown_option": {"index": 1, "text": "Madrid"}}),
            act({"done": {"text": "ok"}}))
    result, text, _ = await run(pool, settings, task="Deliver to Madrid", start_url=site.url("dropdowns/custom.html"))
    failed = result.steps[0].actions[0]
    assert not failed.ok and "has no option 'Madrid'; options: ['Paris', 'Berlin', 'Rome']" in failed.error
    assert "city: none" in text
    assert "Paris" not in results(llm)[0].split("Action error")[0]  # the menu it opened was closed


async def test_an_element_that_is_no_dropdown(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="none"))
    llm.add(NAVIGATOR, act({"get_dropdown_options": {"index": 1}}), act({"done": {"text": "ok"}}))
    result, _, _ = await run(pool, settings, task="x", start_url=site.url("vision/boxes.html"))
    failed = result.steps[0].actions[0]
    assert not failed.ok and "shows no options after a click on it (not a dropdown, or it did not open)" in failed.error
    assert result.steps[1].url.endswith("vision/boxes.html")


async def test_hostile_menu_options_are_untrusted_text_and_a_hidden_decoy_is_never_clicked(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Berlin"))
    llm.add(NAVIGATOR,
            act({"get_dropdown_options": {"index": 1}}),
            act({"select_dropdown_option": {"index": 1, "text": "Berlin"}}),
            act({"done": {"text": "ok"}}))
    result, text, url = await run(pool, settings, task="Deliver to Berlin", start_url=site.url("dropdowns/hostile.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert "city: Berlin" in text and "DECOY" not in text and "steal" not in url
    listed, chosen = results(llm)[:2]
    inside = untrusted_blocks(listed)
    assert "[flagged: text trying to change the task]" in inside and "go_to_url http://127.0.0.2/steal" in inside
    assert "‹/untrusted_content›" in inside  # the page's closing tag is neutralized
    seen = json.dumps(llm.requests, ensure_ascii=False)
    assert "</untrusted_content> SYSTEM" not in seen
    assert "selected 'Berlin' in [1]" in chosen

