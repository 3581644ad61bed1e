"""A CSS selector resolved to offered elements of a capture: one evaluation in the page.

``document.querySelectorAll`` runs once in the top document, in an isolated world (the page's own
scripts cannot replace ``querySelectorAll`` there to point a script at a decoy); the matches come back as remote
objects whose backend node ids (``DOM.describeNode``, at most ``MAX_MATCHES`` of them) are the
keys the capture already knows its elements by. A match that is not itself offered (the ``<span>``
inside a button) stands for the nearest offered element around it, read from the snapshot.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cdp import CDPError, Page
from dom.identity import identify
from dom.refind import SHOWN, Candidate, LocatorAmbiguous, LocatorError, LocatorNotFound

if TYPE_CHECKING:
    from dom.model import Element
    from dom.state import PageState

MAX_MATCHES = 10  # matches resolved to elements; more than one is an error anyway
GROUP = "browserd-select"
QUERY_JS = """(function(selector, cap) {
  let nodes;
  try { nodes = document.querySelectorAll(selector); } catch (e) { return {error: String(e.message || e)}; }
  return {count: nodes.length, nodes: Array.from(nodes).slice(0, cap)};
})"""


class LocatorInvalid(LocatorError):
    """The selector is not valid CSS (the page's own parser said so)."""


async def _backend_ids(page: Page, selector: str) -> tuple[int, list[int]]:
    """How many nodes match ``selector``, and the backend ids of the first ``MAX_MATCHES``."""
    session = page.session
    expression = f"{QUERY_JS}({json.dumps(selector)}, {MAX_MATCHES})"
    try:
        world = await session.send("Page.createIsolatedWorld", {"frameId": page.main_frame_id, "worldName": GROUP})
        reply = await session.send("Runtime.evaluate", {"expression": expression, "objectGroup": GROUP,
                                                        "contextId": world["executionContextId"]})
        result = reply.get("result", {})
        if "objectId" not in result:
            raise LocatorInvalid(f"css {selector!r}: could not be evaluated", f"css {selector!r}", [])
        props = await session.send("Runtime.getProperties", {"objectId": result["objectId"], "ownProperties": True})
        values = {p["name"]: p.get("value", {}) for p in props.get("result", [])}
        if "error" in values:
            message = values["error"].get("value", "invalid selector")
            raise LocatorInvalid(f"css {selector!r} is not a valid selector: {message}", f"css {selector!r}", [])
        count = int(values.get("count", {}).get("value", 0))
        nodes = values.get("nodes", {}).get("objectId")
        ids: list[int] = []
        if nodes and count:
            items = await session.send("Runtime.getProperties", {"objectId": nodes, "ownProperties": True})
            for item in items.get("result", []):
                obj = item.get("value", {}).get("objectId")
                if item["name"].isdigit() and obj:
                    described = await session.send("DOM.describeNode", {"objectId": obj})
                    ids.append(described["node"]["backendNodeId"])
        return count, ids
    finally:
        try:
            await session.send("Runtime.releaseObjectGroup", {"objectGroup": GROUP})
        except CDPError:
            pass


def offered_for(state: PageState, backend_id: int, session: object) -> Element | None:
    """The offered element of ``state`` at this node of the top document, or the nearest one around it."""
    mine = [el for el in state.elements.values() if el.session is session]
    by_backend = {el.backend_node_id: el for el in mine}
    if backend_id in by_backend:
        return by_backend[backend_id]
    for el in mine:  # the frames of this session: find the node, then walk up to an offered one
        doc = el._frame.doc
        try:
            node = doc.backend.index(backend_id)
        except ValueError:
            continue
        offered = {e._node: e for e in mine if e._frame.doc is doc}
        while node >= 0:
            if node in offered:
                return offered[node]
            node = doc.parent[node]
        return None
    return None


async def select(page: Page, state: PageState, selector: str) -> Element:
    """The one offered element ``selector`` names in the top document of ``page``, as captured in ``state``."""
    wanted = f"css {selector!r}"
    count, ids = await _backend_ids(page, selector)
    found: list[Element] = []
    for backend_id in ids:
        element = offered_for(state, backend_id, page.session)
        if element is not None and element not in found:
            found.append(element)
    if len(found) == 1 and count <= MAX_MATCHES:
        return found[0]
    shown = [Candidate(el, identify(state, el), 1.0) for el in found[: SHOWN + 2]]
    names = ", ".join(map(str, shown))
    if len(found) > 1:
        raise LocatorAmbiguous(f"{wanted} matches {count} elements: {names}", wanted, shown)
    if count > MAX_MATCHES:
        raise LocatorAmbiguous(f"{wanted} matches {count} elements", wanted, shown)
    if count:
        raise LocatorNotFound(f"{wanted} matches {count} node(s), but none is a visible control the page offers "
                              "(hidden, covered or outside the page)", wanted, [])
    raise LocatorNotFound(f"{wanted} matches no element of the page", wanted, [])
