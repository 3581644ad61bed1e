"""Links that repeat another link: listed once.

Pages often offer the same destination twice in view: a navigation bar and its copy in a drawer,
a card's image and its title, a name linked in a sidebar and again in the prose. A second link
with the same words to the same address gives the agent no new action, and a link without words
that goes where a worded link goes is the same action with less said about it. Only real
navigation counts as the same action: an in-page ``#fragment`` or a ``javascript:`` link is
usually a script's button, and two of them with equal words may do different things. A link
that holds other offered elements (a card around buttons) is always kept, so nothing is orphaned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urljoin

from dom.model import Element

NOT_NAVIGATION = ("#", "javascript:")


def destination(el: Element) -> str | None:
    """Where a click on a plain ``<a href>`` goes, as an absolute URL; None for anything else."""
    if el.tag != "a":
        return None
    href = el.attributes.get("href", "").strip()
    if not href or href.lower().startswith(NOT_NAVIGATION):
        return None
    return urljoin(el._frame.doc.base_url, href)


def repeated_links(elements: Iterable[Element], holds_offered: Callable[[Element], bool]) -> set[int]:
    """``id()`` of the links to leave out, given offered elements in document order.
    ``holds_offered`` says whether an element has offered elements inside it (never left out)."""
    listed: list[tuple[Element, str]] = []
    for el in elements:
        where = destination(el)
        if where is not None and not holds_offered(el):
            listed.append((el, where))
    worded = {where for el, where in listed if words(el)}
    seen: set[tuple[str, str]] = set()
    out: set[int] = set()
    for el, where in listed:
        key = (where, words(el))
        if key in seen or (not key[1] and where in worded):
            out.add(id(el))
        seen.add(key)
    return out


def words(el: Element) -> str:
    """What the list shows a link as: its visible text, else its name (aria-label, title, alt)."""
    return el.text or el.name
