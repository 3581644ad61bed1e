"""Locators on real pages: what ``dom.identify`` records, and ``dom.refind`` finding it again on
changed variants of a small shop (classes renamed, a banner inserted, button text changed, the
list reordered), inside a cross-origin iframe too, from one snapshot per frame target."""

from __future__ import annotations

import pytest

import dom
from cdp import Page
from workers.jobs.model.locators import Locator

VARIANTS = ["classes", "banner", "text", "reordered", "classes,banner,text,reordered"]


async def shop(page: Page, site, other_site, variant: str = "", host: str = "127.0.0.1") -> dom.PageState:
    other = f"http://{host}:{other_site.port}"
    await page.goto(site.url(f"/locators/shop.html?other={other}&variant={variant}"))
    await page.wait_for_lifecycle("networkAlmostIdle")
    return await dom.capture(page, viewport_expansion=-1)


def recorded(state: dom.PageState, element: dom.Element) -> Locator:
    """A locator as a step record keeps it: through JSON and the kernel's model."""
    return Locator.model_validate(dom.identify(state, element).to_json())


def the(state: dom.PageState, what: str) -> dom.Element:
    """Elements of the shop by what they are, whatever the variant did to them."""
    for el in state.elements.values():
        ident = dom.identify(state, el)
        if what == "search box" and el.attributes.get("name") == "q":
            return el
        if what == "sort" and el.tag == "select":
            return el
        if what == "subscribe" and el.attributes.get("id") == "subscribe":
            return el
        if what == "email" and el.attributes.get("name") == "email":
            return el
        if what.startswith("add ") and el.tag == "button" and ident.context.startswith(what[4:]):
            return el
    raise AssertionError(f"no {what} on the page")


async def test_a_locator_holds_what_the_element_is(page, site, other_site):
    state = await shop(page, site, other_site)
    kettle = recorded(state, the(state, "add Red Kettle"))
    assert (kettle.tag, kettle.role, kettle.name, kettle.text) == ("button", "button", "Add to cart", "Add to cart")
    assert kettle.context == "Red Kettle $30" and kettle.nth == 2 and kettle.frame_path == []
    assert kettle.xpath == "/html[1]/body[1]/ul[1]/li[2]/button[1]"
    assert kettle.css == "ul.products > li.card:nth-of-type(2) > button.add"
    assert await page.evaluate(f"document.querySelector({kettle.css!r}).closest('li').innerText.includes('Kettle')")

    box = recorded(state, the(state, "search box"))
    assert box.attributes == {"name": "q", "aria-label": "Search", "placeholder": "Search products", "type": "search"}
    assert box.role == "searchbox" and box.css == "#search-form > input.q"

    cart = recorded(state, next(el for el in state.elements.values() if el.attributes.get("id") == "cart-link"))
    assert cart.attributes["href"] == "#cart"

    subscribe = recorded(state, the(state, "subscribe"))
    assert subscribe.css == "#subscribe" and subscribe.attributes["id"] == "subscribe"
    [hop] = subscribe.frame_path  # a cross-origin frame is reached through its <iframe> in the page
    assert hop.url == "/locators/newsletter.html" and hop.nth == 1
    assert hop.attributes["id"] == "newsletter"
    assert hop.attributes["src"] == "/locators/newsletter.html", "no host or port: they differ between runs"
    assert hop.xpath == "/html[1]/body[1]/iframe[1]"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("what", ["add Red Kettle", "add Blue Mug", "search box", "sort", "subscribe", "email"])
async def test_refind_finds_the_same_control_on_a_changed_page(page, site, other_site, variant, what):
    before = await shop(page, site, other_site)
    locator = recorded(before, the(before, what))
    after = await shop(page, site, other_site, variant)
    match = dom.refind(after, locator)
    assert match.element is the(after, what), f"{variant}: found {match.element!r}; ranked {match.candidates[:3]}"
    assert match.score >= dom.THRESHOLD
    if len(match.candidates) > 1:
        assert match.score > match.candidates[1].score


@pytest.mark.parametrize("what", ["subscribe", "email"])
async def test_refind_reaches_into_an_out_of_process_frame(page, site, other_site, what):
    """A cross-site frame (localhost vs 127.0.0.1) is its own target with its own snapshot."""
    before = await shop(page, site, other_site, host="localhost")
    assert page.frame_sessions, "a cross-site iframe should be its own target under site isolation"
    locator = recorded(before, the(before, what))
    assert [hop.url for hop in locator.frame_path] == ["/locators/newsletter.html"]
    after = await shop(page, site, other_site, "banner,classes", host="localhost")
    match = dom.refind(after, locator)
    assert match.element is the(after, what) and match.element.session is not page.session


async def test_a_locator_naming_nothing_or_several_says_what_it_found(page, site, other_site):
    state = await shop(page, site, other_site)
    with pytest.raises(dom.LocatorAmbiguous) as caught:
        dom.refind(state, Locator(tag="button", name="Add to cart"))
    message = str(caught.value)
    assert "3 elements match button 'Add to cart' equally well" in message
    assert message.count("'Add to cart' (1.00)") == 3
    with pytest.raises(dom.LocatorNotFound) as caught:
        dom.refind(state, Locator(tag="button", name="Checkout", attributes={"id": "checkout"}))
    assert "no element matches button 'Checkout'" in str(caught.value) and "best: [" in str(caught.value)
    assert caught.value.candidates and caught.value.candidates[0].score < dom.THRESHOLD
    with pytest.raises(dom.LocatorNotFound):  # right element, wrong frame: not a match
        subscribe = recorded(state, the(state, "subscribe"))
        dom.refind(state, subscribe.model_copy(update={"frame_path": []}))


async def test_find_by_text_and_role(page, site, other_site):
    state = await shop(page, site, other_site)
    assert dom.find_by(state, role="searchbox").attributes["name"] == "q"
    assert dom.find_by(state, role="button", name="Subscribe").attributes["id"] == "subscribe"
    assert dom.find_by(state, text="cart (0)").attributes["id"] == "cart-link"
    with pytest.raises(dom.LocatorAmbiguous) as caught:
        dom.find_by(state, text="Search")  # the box's aria-label and the button's text
    assert "2 elements match text 'Search'" in str(caught.value)
    with pytest.raises(dom.LocatorNotFound) as caught:
        dom.find_by(state, role="button", name="Checkout")
    assert "no element matches role='button' name='Checkout' (5 with that role); closest: [" in str(caught.value)


async def test_select_maps_a_css_selector_to_the_offered_element(page, site, other_site):
    state = await shop(page, site, other_site)
    assert await dom.select(page, state, "li:nth-child(2) button.add") is the(state, "add Red Kettle")
    assert (await dom.select(page, state, "#cart-link span")).attributes["id"] == "cart-link"  # inside a link
    with pytest.raises(dom.LocatorAmbiguous) as caught:
        await dom.select(page, state, "button.add")
    assert "css 'button.add' matches 3 elements: [" in str(caught.value)
    with pytest.raises(dom.LocatorNotFound) as caught:
        await dom.select(page, state, "button.checkout")
    assert "matches no element" in str(caught.value)
    with pytest.raises(dom.LocatorNotFound) as caught:
        await dom.select(page, state, "h3")
    assert "none is a visible control" in str(caught.value)
    with pytest.raises(dom.LocatorInvalid) as caught:
        await dom.select(page, state, "button[[")
    assert "is not a valid selector" in str(caught.value)


async def test_refind_reads_one_snapshot_per_frame_and_nothing_else(page, site, other_site, monkeypatch):
    """The whole re-finding costs the capture's snapshots: identities and scores need no CDP call."""
    before = await shop(page, site, other_site)
    locator = recorded(before, the(before, "subscribe"))
    await page.goto(site.url(f"/locators/shop.html?other=http://127.0.0.1:{other_site.port}&variant=banner"))
    await page.wait_for_lifecycle("networkAlmostIdle")
    connection = page.session.connection
    sent: list[str] = []
    real = connection.send_raw

    async def counted(method, *args, **kwargs):
        sent.append(method)
        return await real(method, *args, **kwargs)

    monkeypatch.setattr(connection, "send_raw", counted)
    state = await dom.capture(page, viewport_expansion=-1)
    after_capture = len(sent)
    match = dom.refind(state, locator)
    assert len(sent) == after_capture, f"refind sent {sent[after_capture:]}"
    assert match.element.attributes["id"] == "subscribe"
    assert sent.count("DOMSnapshot.captureSnapshot") == 1 + len(page.frame_sessions)
    assert set(sent) <= {"DOMSnapshot.captureSnapshot", "DOM.getFrameOwner"}, sent


async def test_a_hostile_page_cannot_point_a_selector_at_a_decoy_or_flood_the_message(page, site):
    await page.goto(site.url("/locators/hostile.html"))
    state = await dom.capture(page, viewport_expansion=-1)
    assert (await dom.select(page, state, "#pay")).attributes["id"] == "pay"
    assert (await dom.select(page, state, "body > button:first-child")).attributes["id"] == "pay"
    with pytest.raises(dom.LocatorAmbiguous) as caught:
        await dom.select(page, state, "#many button")
    assert "matches 300 elements" in str(caught.value) and len(str(caught.value)) < 400
    with pytest.raises(dom.LocatorAmbiguous) as caught:
        dom.find_by(state, text="Buy")
    assert "300 elements match text 'Buy'" in str(caught.value) and len(str(caught.value)) < 400
    with pytest.raises(dom.LocatorAmbiguous) as caught:
        dom.refind(state, Locator(tag="button", name="Buy"))
    assert len(str(caught.value)) < 400
