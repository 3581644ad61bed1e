"""Which elements are offered: native controls, scripted ones, shadow DOM, and everything hidden."""

from __future__ import annotations

import asyncio

import dom
from dom.locate import STABLE_WAIT
from tests.dom.conftest import by_id, by_name, click

OFFERED_IDS = {
    "plain-button", "link", "listener-div", "pointer-card", "role-button", "tab-div", "editor", "t-text",
    "summary", "open-shadow-button", "closed-shadow-link", "styled-label",
}
INPUT_NAMES = {
    "t_password", "t_email", "t_number", "t_search", "t_tel", "t_url", "t_date", "t_time", "t_datetime",
    "t_month", "t_week", "t_color", "t_range", "t_file", "t_checkbox", "t_radio", "t_select", "t_textarea",
}
NOT_OFFERED_IDS = {
    "disabled-button", "no-href", "untabbable", "display-none", "visibility-hidden", "opacity-zero",
    "inert", "zero-size", "clipped", "offscreen-left", "far-below",
}


async def test_every_kind_of_control_is_offered(page, site):
    await page.goto(site.url("/dom/controls.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    assert OFFERED_IDS <= set(ids), OFFERED_IDS - set(ids)
    names = by_name(state)
    assert INPUT_NAMES <= set(names), INPUT_NAMES - set(names)
    radios = [el for el in state.elements.values() if el.attributes.get("name") == "t_radio"]
    assert len(radios) == 2
    tags_types = {(el.tag, el.attributes.get("type")) for el in state.elements.values()}
    assert {("input", "submit"), ("input", "reset"), ("input", "button"), ("input", "image")} <= tags_types
    # a button input is labelled by its value, as on screen
    prompt = state.to_prompt()
    assert "<input type=submit>Send it />" in prompt and "<input type=button>Input button />" in prompt
    assert "<input type=reset>Reset />" in prompt
    shadow_input = [el for el in state.elements.values() if el.attributes.get("placeholder") == "open shadow input"]
    assert len(shadow_input) == 1


async def test_hidden_disabled_and_offscreen_are_not_offered(page, site):
    await page.goto(site.url("/dom/controls.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    assert not NOT_OFFERED_IDS & set(ids), NOT_OFFERED_IDS & set(ids)
    # aria-hidden hides from assistive technology only: the button still shows and takes clicks
    # (links and text under it stay out: see tests/dom/test_forms.py)
    assert "aria-hidden" in ids
    names = by_name(state)
    assert "t_hidden" not in names
    assert "in_disabled_fieldset" not in names
    assert "styled" not in names  # the opacity-0 input; its label is offered instead
    # a label whose control is offered is shown as text, not as a second element
    assert not [el for el in state.elements.values() if el.tag == "label" and el.attributes.get("for") == "t-text"]
    assert "Text field" in state.to_prompt()
    # the editable region's children are part of it, not separate elements
    assert [el.text for el in state.elements.values() if el.attributes.get("id") == "editor"] == ["Editable text here"]


async def test_element_handles_describe_the_node(page, site):
    await page.goto(site.url("/dom/controls.html"))
    state = await dom.capture(page)
    ids, names = by_id(state), by_name(state)
    text = ids["t-text"]
    assert (text.tag, text.role, text.name) == ("input", "textbox", "Text field")
    assert names["t_email"].value == "a@b.c"
    assert names["t_checkbox"].checked is True and names["t_checkbox"].name == "Checkbox label"
    select = names["t_select"]
    assert select.options == ["Red", "Green", "Blue"] and select.value == "Green"
    assert ids["link"].role == "link" and ids["link"].name == "A real link"
    desc = ids["plain-button"].description()
    assert desc["tag"] == "button" and desc["name"] == "Plain button" and desc["attributes"]["id"] == "plain-button"
    # the xpath finds the same node again
    found = await page.evaluate(
        f"document.evaluate({desc['xpath']!r}, document, null, 9, null).singleNodeValue.id"
    )
    assert found == "plain-button"
    for el in state.elements.values():
        assert el.backend_node_id > 0 and el.frame_id == page.target_id and el.session is page.session
        assert el.box[2] > 0 and el.box[3] > 0
        assert state.element(el.index) is el


async def test_locate_gives_a_clickable_point(page, site):
    await page.goto(site.url("/dom/controls.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    await click(page, ids["listener-div"])
    assert await page.title() == "listener clicked"
    await click(page, ids["open-shadow-button"])
    clicks = await page.evaluate("window.clicks")
    assert clicks[:1] == ["listener-div"]
    assert clicks[1] == "open-host"  # a click inside a shadow root is retargeted to its host
    await page.evaluate("document.getElementById('plain-button').remove()")
    assert await dom.locate(page, ids["plain-button"]) is None


async def test_locate_scrolls_far_elements_into_view(page, site):
    await page.goto(site.url("/dom/controls.html"))
    state = await dom.capture(page, viewport_expansion=-1)
    far = by_id(state)["far-below"]
    assert far.box[1] > 2000  # page coordinates
    point = await dom.locate(page, far)
    x, y = point.x, point.y
    assert 0 <= y <= await page.evaluate("innerHeight")
    await click(page, far)
    assert (await page.evaluate("window.clicks"))[-1] == "far-below"


async def test_a_moving_element_is_clicked_where_it_comes_to_rest(page, site):
    # an accordion: the panel above closes while ours opens, so our link slides up 600 px
    await page.goto(site.url("/dom/moving.html"))
    await click(page, by_id(await dom.capture(page))["head-two"])
    await asyncio.sleep(0.1)  # ours is open, the one above still closing
    target = by_id(await dom.capture(page))["target"]
    await click(page, target)
    assert await page.evaluate("window.clicks") == ["target"]


async def test_an_element_that_never_rests_is_clicked_after_a_bounded_wait(page, site):
    await page.goto(site.url("/dom/moving.html"))
    spinner = by_id(await dom.capture(page))["spinner"]
    started = asyncio.get_running_loop().time()
    assert await dom.locate(page, spinner) is not None
    assert asyncio.get_running_loop().time() - started < STABLE_WAIT + 1.0
