"""Form controls on the layouts real forms use: every visible, enabled one offered, hidden ones not."""

from __future__ import annotations

import dom
from tests.dom.conftest import by_id


async def test_login_form_just_below_the_fold_is_offered_whole(page, site):
    # a consent drawer parked just below the viewport (position: fixed; top: 100%) covered the
    # username in the snapshot's geometry, but never on screen: the whole-page index lost it
    await page.goto(site.url("/forms/fold.html"))
    state = await dom.capture(page, viewport_expansion=-1)
    ids = by_id(state)
    assert {"username", "password", "signin"} <= set(ids)
    assert ids["username"].name == "Username"
    # fixed controls parked off screen never scroll into view: not offered, at any scroll position
    assert not {"consent-ok", "appbar-open"} & set(ids)
    await page.evaluate("scrollTo(0, 300); true")
    ids = by_id(await dom.capture(page, viewport_expansion=0))
    assert {"username", "password", "signin"} <= set(ids)
    assert not {"consent-ok", "appbar-open"} & set(ids)


async def test_a_floating_label_over_its_field_does_not_hide_it(page, site):
    await page.goto(site.url("/forms/floating.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    # opaque, wrapping and almost-transparent labels drawn over their fields hand them the click
    assert {"email", "nick", "phone", "city", "create"} <= set(ids)
    assert ids["email"].name == "Email address" and ids["nick"].name == "Nickname"
    # a panel that is not the field's label still hides it
    assert "covered" not in ids


async def test_an_invisible_control_over_a_visible_wrapper_is_offered(page, site):
    # the styled file button, submit, select and switch: the wrapper shows, the control takes the click
    await page.goto(site.url("/forms/styled.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    assert {"cv", "send", "country", "news"} <= set(ids)
    assert ids["country"].options == ["Norway", "Sweden"]
    # a styled checkbox in its label is offered through the label, as before
    assert "terms" not in ids
    assert [el.text for el in state.elements.values() if el.tag == "label"] == ["I accept the terms"]
    # a 1-pixel invisible honeypot and a field in an invisible block stay out
    assert not {"trap", "faded"} & set(ids)


async def test_aria_hidden_hides_links_and_text_but_not_a_visible_control(page, site):
    await page.goto(site.url("/forms/styled.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    assert "thumb-1" in ids  # Amazon's image thumbnails are buttons in an aria-hidden block
    assert "thumb-link" not in ids and "Photo 2" not in state.to_prompt()
    # a checkbox drawn inside a filter link acts through the link, which is offered alone
    assert "filter-nike" in ids and "filter-check" not in ids


async def test_fields_in_every_layout_are_offered_with_their_captions(page, site):
    await page.goto(site.url("/forms/layouts.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    expected = {
        "first", "last", "street", "zip", "standard", "express", "legend-toggle", "phone", "qty", "coupon",
        "currency", "inline-clipped", "message", "readonly", "place",
    }
    assert expected <= set(ids), expected - set(ids)
    # disabled stays out; a disabled fieldset disables all but its first legend
    assert not {"disabled", "gift-note"} & set(ids)
    assert ids["first"].name == "First name" and ids["street"].name == "Street"
    prompt = state.elements_text()
    # a label on its own line, tied to nothing, is still the caption above its input
    assert prompt.index("Last name") < prompt.index(f"[{ids['last'].index}]")
    assert "Phone" in prompt and "Gift wrap" in prompt


async def test_labels_of_a_score_panel_are_still_a_panel(page, site):
    # labels tied to nothing caption the fields of a form, but a block of them under the page's
    # root after its controls is a status panel, left out like any other (MiniWoB's score panel)
    await page.goto(site.url("/forms/panel.html"))
    prompt = (await dom.capture(page)).elements_text()
    assert "Name" in prompt and "Enter your name" in prompt
    assert "Last reward" not in prompt and "Time left" not in prompt
