"""What the element list says about a page: links listed once, and the text that introduces controls.

Each page is written into the fixture site's blank target page, then read the way ``browserd
inspect`` prints it (``elements_text``).
"""

from __future__ import annotations

import json
import re

import dom
from cdp import Page

REPEATS = """
<nav><a href="/home">Home</a> <a href="/news">News</a></nav>
<p>Read the <a href="/news">News</a> page before you buy.</p>
<div class="card"><a href="/mug"><img alt="" width="40" height="40"></a> <a href="/mug">Blue mug</a></div>
<div><a href="/news" aria-label="Latest news">News</a></div>
<ul><li><a href="#row1">Edit</a></li><li><a href="#row2">Edit</a></li></ul>
<button>Buy</button> <button>Buy</button>
<a href="/news">News</a>
"""

INTRO = """
<main>
  <div id="query">Switch to the tab that lists the seventh link.</div>
  <ul>{links}</ul>
  <p>Closing words of the article, after its links.</p>
</main>
"""


async def write(page: Page, site, body: str) -> dom.PageState:
    await page.goto(site.url("/dom/target.html"))
    await page.evaluate(f"document.body.innerHTML = {json.dumps(body)}; true")
    return await dom.capture(page)


def links(state: dom.PageState, text: str) -> list[dom.Element]:
    return [el for el in state.elements.values() if el.tag == "a" and el.text == text]


async def test_a_link_repeating_another_is_listed_once(page, site):
    state = await write(page, site, REPEATS)
    listed = state.elements_text()
    # the same words to the same address: one entry, the first, however the copies are named
    assert len(links(state, "News")) == 1
    assert len(re.findall(r"^\[\d+\]<a>News />$", listed, re.M)) == 1
    # inside a sentence the repeated link leaves its words, so the sentence still reads
    assert "Read the News page before you buy." in listed
    # an image link going where a worded link goes adds nothing; the worded one stays
    assert [el.attributes["href"] for el in state.elements.values() if el.tag == "a" and not el.text] == []
    assert len(links(state, "Blue mug")) == 1
    # in-page links and buttons with equal words may do different things: all kept
    assert len(links(state, "Edit")) == 2
    assert len([el for el in state.elements.values() if el.tag == "button" and el.text == "Buy"]) == 2


async def test_text_before_a_regions_first_control_is_kept(page, site):
    many = "".join(f'<li><a href="/l{n}">Link {n}</a></li>' for n in range(1, 9))
    state = await write(page, site, INTRO.format(links=many))
    listed = state.elements_text()
    # the region holds eight links, more than a form row: its body text is left to text() ...
    assert "Closing words" not in listed and "Closing words" in state.text()
    # ... but the instruction above its first control says what the controls are for
    assert listed.startswith("Switch to the tab that lists the seventh link.\n[")


SMALL_PAGE = """
<div id="wrap">
  <div id="query">Tick the box next to "blue" and press Send.</div>
  <div id="area"><label><input type="checkbox"> blue</label> <button>Send</button>
    <div id="result">Not sent yet</div></div>
</div>
<div id="toast"><span>Draft saved.</span></div>
<div id="status">
  <div><b>Last reward:</b> <span>-</span></div><div><b>Average:</b> <span>0.5</span></div>
  <div><b>Time left:</b> <span>10 / 10sec</span></div><div><b>Episodes done:</b> <span>3</span></div>
</div>
"""

FLAT_PAGE = """Name <input id="n"> Colour <select><option>blue</option><option>red</option></select> <button>Send</button>"""


async def test_a_small_pages_status_panel_is_left_to_text(page, site):
    """The body is a page region however few controls a page has: a control-free panel under it
    after the controls (status lines, a footer) explains none of them. Text inside the block
    holding the controls, the instruction above them and a one-line message after them stay."""
    state = await write(page, site, SMALL_PAGE)
    listed = state.elements_text()
    assert listed.startswith('Tick the box next to "blue" and press Send.\n')
    assert "Not sent yet" in listed and "blue" in listed and "Draft saved." in listed
    assert "Last reward" not in listed and "Time left" not in listed
    assert "Time left: 10 / 10sec" in state.text()


async def test_a_page_without_containers_keeps_its_labels(page, site):
    state = await write(page, site, FLAT_PAGE)
    listed = state.elements_text()
    assert "Name" in listed and "Colour" in listed


SPACING = """
<p>Enter "<b>Alan</b>" into the field, then press <i>Go</i>.</p>
<div>first block</div><div>second block</div>
<table><tr><td>cell one</td><td>cell two</td></tr></table>
<input placeholder="name"> <button>Pay <b>$</b>10</button>
"""


async def test_text_reads_with_the_spaces_the_page_shows(page, site):
    """Pieces of text that touch on screen are joined as they are painted: the model must read
    "Alan", not " Alan ", to type it; blocks, lines and cells stay apart."""
    state = await write(page, site, SPACING)
    text = state.elements_text()
    assert 'Enter "Alan" into the field, then press Go.' in text
    assert "first block" in text and "second block" in text and "first blocksecond" not in text
    assert "cell one" in text and "cell two" in text and "onecell" not in text
    assert "<button>Pay $10 />" in text


async def test_a_role_that_only_says_no_role_is_not_shown(page, site):
    tabs = '<ul role="tablist"><li role="tab"><a href="#t1" role="presentation">Tab #1</a></li>' \
           '<li role="tab"><a href="#t2" role="none">Tab #2</a></li></ul>'
    listed = (await write(page, site, tabs)).elements_text()
    assert "<a>Tab #1 />" in listed and "<a>Tab #2 />" in listed
    assert "presentation" not in listed and "role=none" not in listed
