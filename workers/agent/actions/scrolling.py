"""Scrolling the page, or the scrollable container of an indexed element."""

from __future__ import annotations

import json
from typing import Any

from workers.agent.actions.cdp_input import call_on_element
from workers.agent.actions.registry import action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError
from workers.jobs.model.actions import (
    NextPage,
    PreviousPage,
    ScrollTarget,
    ScrollToBottom,
    ScrollToPercent,
    ScrollToText,
    ScrollToTop,
)

# `this` is an element (scroll its nearest scrollable container) or undefined (scroll the page).
SCROLL_JS = """function(mode, value) {
  let box = null;
  for (let el = this && this.nodeType === 1 ? this : null; el; el = el.parentElement) {
    const s = getComputedStyle(el);
    if (el !== document.body && el !== document.documentElement
        && /(auto|scroll|overlay)/.test(s.overflowY) && el.scrollHeight > el.clientHeight) { box = el; break; }
  }
  const root = box || document.scrollingElement || document.documentElement;
  const view = box ? box.clientHeight : window.innerHeight;
  const max = Math.max(0, root.scrollHeight - view);
  let y = root.scrollTop;
  if (mode === 'top') y = 0;
  else if (mode === 'bottom') y = max;
  else if (mode === 'percent') y = max * value / 100;
  else if (mode === 'next') y = y + view;
  else if (mode === 'previous') y = y - view;
  root.scrollTo({top: Math.max(0, Math.min(max, y)), behavior: 'instant'});
  return {y: Math.round(root.scrollTop), max: Math.round(max), container: !!box};
}"""

FIND_TEXT_JS = """(function(text, nth) {
  const needle = text.toLowerCase();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let seen = 0;
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!el || !walker.currentNode.textContent.toLowerCase().includes(needle)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (++seen === nth) { el.scrollIntoView({block: 'center', behavior: 'instant'}); return true; }
  }
  return false;
})"""


async def _scroll(ctx: JobContext, p: ScrollTarget, mode: str, value: float = 0) -> dict[str, Any]:
    browser = ctx.browser
    browser.invalidate()
    if p.ways():
        element = await browser.target(p, f"scroll ({mode})")
        return {**await call_on_element(element, SCROLL_JS, mode, value), "index": element.index}
    return await browser.page.evaluate(f"({SCROLL_JS}).call(undefined, {json.dumps(mode)}, {json.dumps(value)})")


def _where(p: ScrollTarget, pos: dict[str, Any]) -> str:
    what = f"the container of [{pos['index']}]" if pos.get("index") is not None and pos.get("container") else "the page"
    return f"{what} (now at {pos['y']} of {pos['max']} px)"


@action("scroll_to_percent", ScrollToPercent, "Scroll to a vertical position, 0 (top) to 100 (bottom)")
async def scroll_to_percent(ctx: JobContext, p: ScrollToPercent) -> ActionResult:
    pos = await _scroll(ctx, p, "percent", p.y_percent)
    return ActionResult(f"scrolled to {p.y_percent:g}% of {_where(p, pos)}")


def _register_screen_scroll(name: str, params: type[ScrollTarget], mode: str, description: str, done: str) -> None:
    async def scroll(ctx: JobContext, p: ScrollTarget) -> ActionResult:
        return ActionResult(f"{done} {_where(p, await _scroll(ctx, p, mode))}")

    action(name, params, description)(scroll)


for _name, _params, _mode, _description, _done in (
    ("scroll_to_top", ScrollToTop, "top", "Scroll to the top", "scrolled to the top of"),
    ("scroll_to_bottom", ScrollToBottom, "bottom", "Scroll to the bottom", "scrolled to the bottom of"),
    ("previous_page", PreviousPage, "previous", "Scroll up by one screen", "scrolled up one screen in"),
    ("next_page", NextPage, "next", "Scroll down by one screen", "scrolled down one screen in"),
):
    _register_screen_scroll(_name, _params, _mode, _description, _done)


@action("scroll_to_text", ScrollToText, "Scroll to the nth occurrence of a text on the page")
async def scroll_to_text(ctx: JobContext, p: ScrollToText) -> ActionResult:
    ctx.browser.invalidate()
    found = await ctx.browser.page.evaluate(f"{FIND_TEXT_JS}({json.dumps(p.text)}, {p.nth})")
    if not found:
        raise ActionError(f"text {p.text!r} not found on the page" + (f" {p.nth} times" if p.nth > 1 else ""),
                          action="scroll_to_text")
    return ActionResult(f"scrolled to {p.text!r}")
