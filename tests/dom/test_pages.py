"""Frames, overlays, page changes between captures, scrolling, and hostile page text."""

from __future__ import annotations

import asyncio
import re

import pytest

import dom
from tests.dom.conftest import by_id, click


def frame_buttons(state: dom.PageState) -> dict[str, dom.Element]:
    return {el.text: el for el in state.elements.values() if el.text.startswith("Button in")}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["cross-origin", "cross-site-oopif"])
async def test_iframes_same_and_cross_origin(page, site, other_site, host):
    other = f"http://{host}:{other_site.port}"
    await page.goto(site.url(f"/dom/frames.html?other={other}"))
    await page.wait_for_lifecycle("networkAlmostIdle")
    if host == "localhost":
        assert page.frame_sessions, "a cross-site iframe should be its own target under site isolation"
    state = await dom.capture(page)
    buttons = frame_buttons(state)
    assert set(buttons) == {"Button in same", "Button in cross"}
    same, cross = buttons["Button in same"], buttons["Button in cross"]
    assert len({same.frame_id, cross.frame_id, page.target_id}) == 3
    if host == "localhost":
        assert cross.session is not page.session and cross.frame_id in page.frame_sessions
    # boxes are in top-level page coordinates: inside their iframe's content box
    for iframe_id, el in (("same", same), ("cross", cross)):
        r = await page.evaluate(
            f"(() => {{ const r = document.getElementById('{iframe_id}').getBoundingClientRect();"
            " return [r.left + 3, r.top + 3 + scrollY]; })()"
        )
        assert el.box[0] == pytest.approx(r[0], abs=1) and el.box[1] == pytest.approx(r[1], abs=1)
    prompt = state.to_prompt()
    assert "Frame same" in prompt and "Frame cross" in prompt
    assert "Frame cross" in state.text()
    inputs = [el for el in state.elements.values() if el.attributes.get("placeholder") == "inner input"]
    assert len(inputs) == 2
    # a real click at the located point lands inside the right frame
    await click(page, cross)
    # the event reaches an out-of-process frame through the browser, after the click's own ack
    for _ in range(50):
        after = await dom.capture(page, state)
        if "clicked in cross" in after.to_prompt():
            break
        await asyncio.sleep(0.1)
    assert "clicked in cross" in after.to_prompt()
    assert frame_buttons(after)["Button in cross"].index == cross.index


async def test_modal_overlay_hides_what_is_under_it(page, site):
    await page.goto(site.url("/dom/modal.html"))
    state = await dom.capture(page)
    ids = by_id(state)
    assert set(ids) == {"accept", "reject"}
    prompt = state.to_prompt()
    assert "Accept cookies?" in prompt
    assert "Background text under the overlay" not in prompt
    await page.evaluate("document.getElementById('overlay').remove(); document.getElementById('dialog').remove()")
    state = await dom.capture(page)
    assert {"under-1", "under-2", "banner-button"} <= set(by_id(state))
    assert "Background text under the overlay" in state.to_prompt()


async def test_inserted_element_is_marked_new_and_old_indexes_stay(page, site):
    await page.goto(site.url("/dom/dynamic.html"))
    first = await dom.capture(page)
    assert not first.new_indexes and "*[" not in first.to_prompt()
    before = {el.attributes["id"]: el.index for el in first.elements.values()}
    await click(page, first.elements[before["add"]])
    second = await dom.capture(page, first)
    after = {el.attributes["id"]: el.index for el in second.elements.values()}
    assert {k: after[k] for k in before} == before
    added = after["added-1"]
    assert second.new_indexes == {added} and added not in before.values()
    assert second.elements[added].is_new
    assert re.search(rf"^\t*\*\[{added}\]<button>Added 1 />$", second.to_prompt(), re.M)
    third = await dom.capture(page, second)
    assert not third.new_indexes
    assert {el.attributes["id"]: el.index for el in third.elements.values()} == after
    # a new document starts numbering afresh, with nothing marked new
    await page.goto(site.url("/dom/modal.html"))
    other = await dom.capture(page, third)
    assert not other.new_indexes and sorted(other.elements) == [1, 2]


async def test_viewport_expansion_and_scroll_lines(page, site):
    await page.goto(site.url("/dom/scroll.html"))
    at_top = await dom.capture(page)
    assert {"b0"} <= set(by_id(at_top)) and not {"b1", "b2", "b3"} & set(by_id(at_top))
    prompt = at_top.to_prompt()
    assert prompt.startswith("[Start of page]\n")
    assert re.search(r"\n\.\.\. \d+ pixels below - scroll or extract content to see more \.\.\.$", prompt)
    assert at_top.scroll.pixels_above == 0 and at_top.scroll.pixels_below > 1000
    box = by_id(at_top)["box"]
    assert box.scrollable is not None and box.scrollable.below > 0 and "scroll=" in prompt
    assert "in-box-bottom" not in by_id(at_top)  # scrolled out of its container's view
    wider = await dom.capture(page, viewport_expansion=300)
    assert "b1" in by_id(wider) and "b2" not in by_id(wider)
    whole = await dom.capture(page, viewport_expansion=-1)
    assert {"b0", "b1", "b2", "b3"} <= set(by_id(whole))
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    at_end = await dom.capture(page)
    assert "b3" in by_id(at_end) and "b0" not in by_id(at_end)
    assert at_end.to_prompt().endswith("\n[End of page]")
    assert at_end.scroll.pixels_above > 1000 and at_end.scroll.pixels_below == 0


async def test_page_text_cannot_escape_the_untrusted_wrapper(page, site):
    await page.goto(site.url("/dom/injection.html"))
    state = await dom.capture(page)
    prompt = state.to_prompt()
    opening = re.findall(r"<(untrusted_content_[0-9a-f]{16})>", prompt)
    closing = re.findall(r"</(untrusted_content_[0-9a-f]{16})>", prompt)
    assert len(opening) == 1 and closing == opening
    tag = opening[0]
    inside = prompt.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]
    # the override phrase stays visible as an attempt, not as the order itself (dom.guard)
    assert "Ignore previous instructions" not in inside and "[flagged: text trying to change the task]" in inside
    assert inside.count("‹/untrusted_content›") == 2  # in the text and in the button's aria-label
    # no tag of any kind survives inside: not the fake closing tag, not a fake user request
    page_part = re.sub(r"^\t*\*?\[\d+\]<[a-z0-9-]+", "", inside, flags=re.M)
    assert "<" not in page_part and "</" not in inside
    assert "</untrusted_content>" not in prompt and "<user_request>" not in prompt
    assert "‹/untrusted_content›" in inside
    assert not re.search(r"^\t*\[99\]<button>", prompt, re.M)  # a fake element line stays text
    # a fresh nonce per render
    assert re.findall(r"<(untrusted_content_[0-9a-f]{16})>", state.to_prompt()) != opening
    # the wrapper for extraction text works the same way
    wrapped = dom.wrap_text(state.text())
    assert wrapped.count("<untrusted_content_") == 1 and "</untrusted_content>" not in wrapped


async def test_text_and_links(page, site):
    await page.goto(site.url("/dom/controls.html"))
    state = await dom.capture(page)
    text = state.text()
    assert "# Every kind of control" in text
    assert f"[A real link]({site.url('/dom/target.html')})" in text
    for hidden in ("Display none", "Opacity zero", "Visibility hidden", "Clipped link"):
        assert hidden not in text
    links = state.links()
    assert dom.Link("A real link", site.url("/dom/target.html")) in links
    assert all(link.href.startswith("http") for link in links)
