"""Dropdowns: native ``<select>``, ARIA comboboxes and listboxes, and custom (div) menus.

A native select is set through the DOM (Chrome draws its popup outside the page, where input
events cannot reach it). Every other dropdown is worked as a person works it, with real input:
its options are found, opened with a click when none is showing, and the option is clicked.

Which elements are the options:
- ARIA: the ``role=option`` elements of the listbox the element is (``role=listbox``), controls or
  owns (``aria-controls``/``aria-owns``), or holds;
- otherwise (a custom menu of divs): the elements that appeared in the index when it opened.
Either way only options the index offers count (visible, enabled, not covered), so a hidden
decoy with the wanted text is never clicked. Option texts are page text: the model reads them
inside the untrusted block of the next state, like every action result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dom
from workers.agent.actions.cdp_input import call_on_element, click_at, node_ids, press
from workers.agent.context import JobContext
from workers.agent.errors import ActionError

NATIVE_OPTIONS_JS = """function() {
  if (this.tagName !== 'SELECT') return null;
  return Array.from(this.options).map((o, i) => ({index: i, text: o.text.trim(), value: o.value}));
}"""

NATIVE_SELECT_JS = """function(text) {
  if (this.tagName !== 'SELECT') return {error: 'not a dropdown (<select>)'};
  const opts = Array.from(this.options);
  const norm = s => s.trim().toLowerCase();
  let i = opts.findIndex(o => o.text.trim() === text.trim());
  if (i < 0) i = opts.findIndex(o => norm(o.text) === norm(text) || o.value === text);
  if (i < 0) return {error: 'no option', options: opts.map(o => o.text.trim())};
  this.focus();
  this.selectedIndex = i;
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  return {text: opts[i].text.trim(), value: this.value};
}"""

IS_NATIVE_JS = "function() { return this.tagName === 'SELECT'; }"

# The ARIA options of the element: in the listbox it is, controls, owns or holds (read only).
ARIA_OPTIONS_JS = """function() {
  const root = this, doc = root.ownerDocument;
  const ids = a => (root.getAttribute(a) || '').split(/\\s+/).filter(Boolean)
    .map(id => doc.getElementById(id)).filter(Boolean);
  const lists = [...ids('aria-controls'), ...ids('aria-owns')];
  if (root.getAttribute('role') === 'listbox') lists.unshift(root);
  const found = [];
  for (const list of lists.length ? lists : [root]) {
    if (list.getAttribute('role') === 'option') found.push(list);
    found.push(...list.querySelectorAll('[role="option"]'));
  }
  return Array.from(new Set(found));
}"""

SHOWN_JS = """function() {
  const v = ('value' in this && typeof this.value === 'string' && this.tagName !== 'BUTTON') ? this.value : '';
  return (v || this.innerText || this.getAttribute('aria-label') || '').trim().slice(0, 200);
}"""


@dataclass
class Option:
    """An option the index offers, by its text (as the model reads it) and its element."""

    text: str
    element: Any


def text_of(element: Any) -> str:
    return " ".join(str(element.text or element.name or "").split())


async def is_native(element: Any) -> bool:
    return bool(await call_on_element(element, IS_NATIVE_JS))


async def native_options(element: Any) -> list[str]:
    return [o["text"] for o in await call_on_element(element, NATIVE_OPTIONS_JS)]


async def native_select(element: Any, text: str) -> dict[str, Any]:
    return await call_on_element(element, NATIVE_SELECT_JS, text)


async def _aria_keys(element: Any) -> set[dom.NodeKey]:
    """The index keys (frame, backend node) of the element's ARIA options, shown or not."""
    return {dom.NodeKey(element.frame_id, node) for node in await node_ids(element, ARIA_OPTIONS_JS)}


async def shown(element: Any) -> str:
    """What the dropdown shows now (its value or text), to confirm a selection to the model."""
    return str(await call_on_element(element, SHOWN_JS) or "")


@dataclass(frozen=True)
class Offered:
    """A dropdown's options as the index offers them, and whether reading them opened it (then it
    is closed again unless one is picked)."""

    options: list[Option]
    opened: bool


async def options(ctx: JobContext, element: Any, action: str) -> Offered:
    """The options the index offers for ``element``, opening it with a click if none shows; and
    whether this call opened it. A click that closed an already open custom menu is repeated."""
    browser = ctx.browser
    keys = await _aria_keys(element)
    state = await browser.state()
    offered = [el for el in state.elements.values() if el.key in keys]
    if offered:
        return Offered(_named(offered), opened=False)
    for _ in range(2):
        before = {el.key for el in state.elements.values()}
        await _click(ctx, element, action)
        state = await browser.capture()
        after = {el.key for el in state.elements.values()}
        if element.key not in after:  # it navigated, or went away: no dropdown of ours
            return Offered([], opened=True)
        keys = await _aria_keys(element)  # many widgets render their options only when opened
        offered = [el for el in state.elements.values() if el.key in keys]
        if not keys:  # no ARIA: what appeared when it opened
            offered = [el for el in state.elements.values() if el.key not in before]
        if _named(offered):
            return Offered(_named(offered), opened=True)
        if not before - after:  # nothing closed either: not a menu that was open, so no second click
            break
    return Offered([], opened=True)


def _named(elements: list[Any]) -> list[Option]:
    """Options with a text (a menu's own container appears with them, and has none of its own)."""
    return [Option(text, el) for el in elements if (text := text_of(el))]


def pick(found: list[Option], text: str) -> Option | None:
    """The option with exactly this text, else the one equal ignoring case and spacing."""
    wanted = " ".join(text.split())
    exact = [o for o in found if o.text == wanted]
    loose = [o for o in found if o.text.casefold() == wanted.casefold()]
    return (exact or loose or [None])[0]


async def choose(ctx: JobContext, option: Option, action: str) -> None:
    """Click ``option`` with real input and wait for what it starts."""
    await _click(ctx, option.element, action)


async def close(ctx: JobContext, element: Any, found: list[Option]) -> None:
    """Close a menu this action opened: Escape, as a keyboard user would; a custom menu that ignores
    it is toggled shut with another click on the element."""
    browser = ctx.browser
    await press(browser.page.session, "Escape")
    browser.invalidate()
    state = await browser.capture()
    keys = {o.element.key for o in found}
    if any(el.key in keys for el in state.elements.values()):
        await _click(ctx, element, "close the dropdown")


async def _click(ctx: JobContext, element: Any, action: str) -> None:
    browser = ctx.browser
    point = await browser.locate(element, action)
    async with browser.watch() as watch:
        await click_at(browser.page.session, point.x, point.y)
        await watch.settle()
    browser.invalidate()


def listing(found: list[Option]) -> str:
    return "\n".join(f"{i}: text={o.text!r}" for i, o in enumerate(found))


def no_option(described: str, text: str, found: list[Option], action: str, index: int) -> ActionError:
    texts = [o.text for o in found]
    return ActionError(f"{described} has no option {text!r}; options: {texts}", action=action, index=index)
