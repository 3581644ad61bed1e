"""Locators in jobs: recorded in an agent job's steps, and naming elements in scripts (selector,
text, role and name, a recorded locator), on the small shop and its changed variants, with a
cross-origin newsletter frame. Real Chromium; only the LLM is scripted."""

from __future__ import annotations

import pytest

from config import Settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan, run
from tests.support.jobs import run_job
from workers.jobs.errors import SpecError
from workers.jobs.model.actions import (
    ACTION_PARAMS,
    LOCATOR_FIELDS,
    params_schema,
    replay_action,
    validate_script,
)
from workers.jobs.model.locators import Locator
from workers.jobs.model.result import ActionRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.specs.checks import check_spec

FRAME = [{"url": "/locators/newsletter.html"}]


def shop_url(site, other_site, variant: str = "") -> str:
    return site.url(f"locators/shop.html?other=http://127.0.0.1:{other_site.port}&variant={variant}")


async def test_an_agent_job_records_a_locator_with_every_element_action(pool, site, other_site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Added the kettle."))
    llm.add(NAVIGATOR,
            act({"input_text": {"intent": "search", "index": 3, "text": "kettle"}},
                {"click_element": {"intent": "search", "index": 4}}),
            act({"click_element": {"intent": "add the kettle", "index": 7}}, {"scroll_to_bottom": {}}),
            act({"done": {"text": "added"}}))
    result, text, _ = await run(pool, settings, task="Add the red kettle to the cart",
                                start_url=shop_url(site, other_site))
    assert result.status == JobStatus.succeeded, result.error
    assert "added Red Kettle" in text
    typed, searched = result.steps[0].actions
    assert typed.index == 3 and typed.locator.attributes["name"] == "q" and typed.locator.role == "searchbox"
    assert searched.locator.name == "Search" and searched.locator.tag == "button"
    added, scrolled = result.steps[1].actions
    assert added.index == 7 and added.params == {"intent": "add the kettle", "index": 7}
    assert added.locator.context == "Red Kettle $30" and added.locator.nth == 2
    assert added.locator.xpath == "/html[1]/body[1]/ul[1]/li[2]/button[1]"
    assert scrolled.locator is None and scrolled.index is None  # the page, not an element

    # the recorded steps, as a finished job's JSON holds them, replay on a changed page by locator
    steps = [ActionRecord.model_validate(a) for s in result.model_dump(mode="json")["steps"][:2] for a in s["actions"]]
    replay = [replay_action(a) for a in steps]
    assert replay[0] == {"input_text": {"intent": "search", "text": "kettle",
                                        "locator": typed.locator.model_dump(exclude_none=True)}}
    assert replay[3] == {"scroll_to_bottom": {"intent": ""}}
    spec = JobSpec(start_url=shop_url(site, other_site, "reordered,text,banner,classes"), script=validate_script([
        *replay, {"extract_fields": {"fields": {"status": "#status"}}},
    ]))
    async with pool.lease() as lease:
        replayed = await run_job(spec, lease)
    assert replayed.status == JobStatus.succeeded, replayed.error
    assert replayed.data == {"status": "added Red Kettle"}
    assert replayed.steps[2].actions[0].locator.context == "Red Kettle $30"
    assert replayed.steps[2].actions[0].index != 7, "the button moved: its index is the new page's"
    with pytest.raises(ValueError, match="holds no locator"):
        replay_action(ActionRecord(name="click_element", params={"index": 3}))


async def test_a_script_names_elements_by_selector_text_role_and_locator(pool, site, other_site):
    spec = JobSpec(start_url=shop_url(site, other_site), script=validate_script([
        {"input_text": {"role": "searchbox", "text": "kettle"}},
        {"click_element": {"role": "button", "name": "Search"}},
        {"extract_fields": {"fields": {"searched": "#status"}}},
        {"click_element": {"selector": "li:nth-child(2) button.add"}},
        {"click_element": {"locator": {"tag": "button", "name": "Add to cart", "context": "Green Teapot"}}},
        {"get_dropdown_options": {"selector": "select[name=sort]"}},
        {"select_dropdown_option": {"role": "combobox", "name": "Sort by", "text": "Rating"}},
        {"click_element": {"text": "Cart (2)"}},
        {"input_text": {"locator": {"frame_path": FRAME, "attributes": {"name": "email"}}, "text": "ada@example.test"}},
        {"click_element": {"locator": {"frame_path": FRAME, "role": "button", "name": "Subscribe"}}},
        {"scroll_to_top": {"role": "searchbox"}},
        {"extract_fields": {"fields": {"status": "#status", "count": "#count"}}},
        {"extract_content": {}},
        {"done": {"text": "shopped"}},
    ]))
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.succeeded, result.error
    assert result.data["searched"] == "searched kettle"
    assert result.data["status"] == "sorted by Rating" and result.data["count"] == "2"
    assert "subscribed ada@example.test" in result.data["content"]  # typed and clicked inside the frame
    actions = [s.actions[0] for s in result.steps]
    assert actions[3].locator.context == "Red Kettle $30" and actions[4].locator.context == "Green Teapot $21"
    assert "options of [" in actions[5].result and "2: text='Rating'" in actions[5].result
    assert actions[7].locator.attributes["id"] == "cart-link"
    assert actions[9].locator.frame_path[0].url == "/locators/newsletter.html"
    assert actions[9].locator.attributes["id"] == "subscribe"
    assert all(a.index is not None and a.locator is not None for a in actions[:2] + actions[3:11] if a.ok)
    assert result.steps[3].elements == 10, "a locator searches the whole page, frames included"


@pytest.mark.parametrize("action, message", [
    ({"click_element": {"text": "Add to cart"}}, "click_element: 3 elements match text 'Add to cart': [6] button"),
    ({"click_element": {"selector": "button.checkout"}}, "click_element: css 'button.checkout' matches no element"),
    ({"click_element": {"selector": "button[["}}, "click_element: css 'button[[' is not a valid selector"),
    ({"input_text": {"role": "textbox", "name": "Coupon", "text": "X"}},
     "input_text: no element matches role='textbox' name='Coupon' (1 with that role); closest: [9] input 'Your email'"),
    ({"click_element": {"locator": {"tag": "button", "name": "Checkout", "attributes": {"id": "checkout"}}}},
     "click_element: no element matches button 'Checkout' (score >= 0.6); best: ["),
    ({"click_element": {"locator": {"frame_path": [{"url": "/gone.html"}], "name": "Subscribe"}}},
     "no element matches element 'Subscribe' in frame /gone.html"),
])
async def test_a_wrong_locator_fails_the_step_naming_what_it_found(pool, site, other_site, action, message):
    spec = JobSpec(start_url=shop_url(site, other_site), script=validate_script([action, {"done": {"text": "never"}}]))
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.failed and result.category == FailureCategory.action_error
    assert message in result.error, result.error
    [step] = result.steps
    assert not step.actions[0].ok and message in step.actions[0].error
    assert step.actions[0].locator is None


@pytest.mark.parametrize("bad, message", [
    ({"click_element": {}}, "script[0].click_element: field index: Field required (or give selector, text, role"),
    ({"click_element": {"index": 1, "selector": "a"}}, "field selector: give one of index, selector, text, role (+name) "
                                                       "or locator, not index and selector"),
    ({"click_element": {"name": "Add"}}, "field name: give role with it"),
    ({"click_element": {"selector": "  "}}, "field selector: is blank"),
    ({"click_element": {"selector": "a\nb"}}, "field selector: must be one line of CSS"),
    ({"click_element": {"locator": {}}}, "field locator: a locator needs at least one of"),
    ({"click_element": {"locator": {"tag": "a", "colour": "red"}}}, "field locator.colour: Extra inputs"),
    ({"click_element": {"locator": {"tag": "a", "nth": 0}}}, "field locator.nth: Input should be greater than"),
    ({"click_element": {"locator": {"tag": "a", "frame_path": [{"nth": "x"}]}}}, "field locator.frame_path.0.nth"),
    ({"click_element": {"locator": {"tag": "a", "attributes": {"": "x"}}}}, "field locator.attributes: attribute ''"),
    ({"input_text": {"text": "a"}}, "field index: Field required (or give selector, role (+name) or locator)"),
    ({"select_dropdown_option": {"role": "combobox", "text": "A", "selector": "select"}},
     "field role: give one of index, selector, role (+name) or locator, not selector and role"),
    ({"scroll_to_top": {"selector": ""}}, "field selector: String should have at least 1 character"),
    ({"get_dropdown_options": {"text": "a", "role": "combobox"}}, "not role and text"),
])
def test_a_malformed_locator_is_refused_at_submission_naming_the_field(bad, message):
    with pytest.raises(ValueError) as err:
        validate_script([bad])
    assert message in str(err.value)
    with pytest.raises(SpecError) as caught:  # what the API answers with 422
        check_spec(JobSpec(script=[bad]), Settings())
    assert caught.value.problems[0].field == "script" and message in caught.value.summary


def test_scripts_may_leave_the_target_out_only_where_the_page_is_meant():
    assert validate_script([{"scroll_to_bottom": {}}]) == [{"scroll_to_bottom": {"intent": ""}}]
    normalised = validate_script([{"click_element": {"locator": {"tag": "button", "name": "Go"}}}])
    assert Locator.model_validate(normalised[0]["click_element"]["locator"]).summary() == "button 'Go'"


def test_the_navigator_reads_indexes_only():
    for name, params in ACTION_PARAMS.items():
        props = params_schema(params, for_model=True).get("properties", {})
        assert not set(props) & (set(LOCATOR_FIELDS) - {"text"}), name
    assert params_schema(ACTION_PARAMS["click_element"], for_model=True)["required"] == ["index"]
    assert "text" in params_schema(ACTION_PARAMS["input_text"], for_model=True)["properties"]
    assert "text" not in params_schema(ACTION_PARAMS["click_element"], for_model=True)["properties"]
