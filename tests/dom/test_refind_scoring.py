"""The pure half of locators: identities' helpers and the scoring, with no browser."""

from __future__ import annotations

import pytest

from dom.identity import FrameStep, Identity, looks_generated, stable_attributes, url_path
from dom.refind import THRESHOLD, frame_score, score, similarity
from workers.jobs.model.locators import FrameHop, Locator


def ident(**fields) -> Identity:
    base = dict(frame_path=[], tag="button", role="button", name="Add to cart", text="Add to cart",
                attributes={"type": "button"}, context="Red Kettle $30",
                css="ul.products > li.card:nth-of-type(2) > button.add", xpath="/html[1]/body[1]/ul[1]/li[2]/button[1]",
                nth=2)
    return Identity(**{**base, **fields})


RECORDED = Locator.model_validate(ident().to_json())


@pytest.mark.parametrize("value, generated", [
    ("cart-link", False), ("search", False), ("main_nav", False), (":r1:", True), ("ember412", True),
    ("a3f9c2e1b7", True), ("react-select-2-input", True), ("x-123", True), ("9f86d081-884c", True), ("", True),
])
def test_generated_ids_are_told_apart(value, generated):
    assert looks_generated(value) is generated


def test_urls_keep_path_query_and_fragment_only():
    assert url_path("http://127.0.0.1:4711/shop/item.html?id=3#top") == "/shop/item.html?id=3#top"
    assert url_path("https://example.test") == "/"
    assert url_path("mailto:a@b.test") == "mailto:a@b.test"
    assert url_path("/relative/path") == "/relative/path"
    assert stable_attributes({"id": ":r5:", "name": "q", "class": "x", "href": "http://h:1/a?b=c", "type": ""}) == {
        "name": "q", "href": "/a?b=c"}


def test_similarity():
    assert similarity("Add to cart", "  add TO cart ") == 1.0
    assert similarity("Add to cart", "Add to basket") == pytest.approx(0.5)  # add, to of add, to, cart, basket
    assert similarity("Cart", "Cart (3)") == pytest.approx(0.5)  # one word of two (more than 0.9 * 4/8 contained)
    assert similarity("Subscribe", "Subscribe now!") == pytest.approx(0.9 * 9 / 14)
    assert similarity("Add", "") == 0.0 and similarity("Blue", "Red") == 0.0


def test_the_same_element_scores_one():
    assert score(RECORDED, ident()) == pytest.approx(1.0)


@pytest.mark.parametrize("change", [
    {"css": "ul.x9-a > li.x9-b:nth-of-type(2) > button.x9-c"},  # classes renamed
    {"xpath": "/html[1]/body[1]/ul[1]/li[3]/button[1]", "css": "ul.products > li.card:nth-of-type(3) > button.add"},
    {"name": "Add to basket", "text": "Add to basket"},  # copy changed
])
def test_what_an_element_is_outweighs_where_it_is(change):
    moved = score(RECORDED, ident(**change))
    assert THRESHOLD < moved < 1.0
    # the element that took its place but is something else (another product's button) scores lower
    impostor = score(RECORDED, ident(context="Blue Mug $8", **{k: v for k, v in change.items() if k not in ("css", "xpath")}))
    assert impostor < moved


def test_a_reordered_list_is_matched_by_what_not_where():
    moved = ident(xpath="/html[1]/body[1]/ul[1]/li[3]/button[1]", css="ul.products > li.card:nth-of-type(3) > button.add",
                  nth=3)
    in_its_place = ident(context="Blue Mug $8")  # same position, same text, another product
    assert score(RECORDED, moved) > score(RECORDED, in_its_place) + 0.1


def test_position_breaks_ties_only_when_the_locator_gives_one():
    second, third = ident(context=""), ident(context="", nth=3, xpath="/x[3]", css="b:nth-of-type(3)")
    plain = Locator(tag="button", name="Add to cart")  # hand-written: no nth, no path
    assert score(plain, second) == score(plain, third) == 1.0
    assert score(RECORDED.model_copy(update={"context": ""}), second) > score(
        RECORDED.model_copy(update={"context": ""}), third)


def test_stable_attributes_weigh_most():
    want = Locator(tag="input", attributes={"name": "q", "placeholder": "Search products"}, name="Search")
    renamed = ident(tag="input", role="searchbox", name="Find", text="", attributes={"name": "q",
                    "placeholder": "Search products"}, context="")
    other = ident(tag="input", role="searchbox", name="Search", text="", attributes={"name": "email"}, context="")
    assert score(want, renamed) > THRESHOLD > score(want, other)


def test_frames_must_agree():
    hop = FrameStep(url="/locators/newsletter.html", attributes={"id": "newsletter"}, xpath="/html[1]/body[1]/iframe[1]",
                    nth=1)
    want = [FrameHop(url="/locators/newsletter.html", attributes={"id": "newsletter"}, xpath="/x", nth=1)]
    assert frame_score(want, [hop]) == 1.0
    assert frame_score(want, []) == 0.0  # the top document is another frame
    moved = FrameStep(url="/other.html", attributes={}, xpath="/x", nth=2)
    assert frame_score(want, [moved]) == 0.8  # only the iframe's XPath agrees
    assert frame_score([FrameHop(url="/gone.html")], [moved]) == 0.0
    assert score(RECORDED, ident(frame_path=[hop])) == 0.0
