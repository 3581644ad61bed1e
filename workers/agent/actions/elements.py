"""Actions on indexed elements, with real mouse and keyboard input in the element's frame."""

from __future__ import annotations

from typing import Any

import workers.agent.actions.dropdowns as dropdowns
from workers.agent.actions.cdp_input import (
    call_on_element,
    click_at,
    frame_url,
    holds_focus,
    insert_text,
    press,
    send_keys,
)
from workers.agent.actions.registry import action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError
from workers.jobs.model.actions import ClickElement, GetDropdownOptions, InputText, SelectDropdownOption, SendKeys

LABEL_ATTRIBUTES = ("aria-label", "placeholder", "title", "alt", "value", "name")

SELECT_CONTENT_JS = """function() {
  if (document.activeElement !== this) this.focus();
  if (typeof this.select === 'function') { this.select(); return 'value' in this ? String(this.value) : ''; }
  if (this.isContentEditable) {
    const range = document.createRange(); range.selectNodeContents(this);
    const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
    return this.innerText;
  }
  return null;
}"""


def label(element: Any) -> str:
    """A short human name for an element, for results the model reads."""
    text = element.text or element.name or ""
    if not text.strip():
        text = next((element.attributes[a] for a in LABEL_ATTRIBUTES if element.attributes.get(a)), "")
    text = " ".join(str(text).split())
    return text[:57] + "..." if len(text) > 60 else text


def describe(index: int, element: Any) -> str:
    name = label(element)
    return f"[{index}] {name!r}" if name else f"[{index}] <{element.tag}>"


@action("click_element", ClickElement, "Click the element with this index")
async def click_element(ctx: JobContext, p: ClickElement) -> ActionResult:
    browser = ctx.browser
    element = await browser.target(p, "click_element")
    point = await browser.locate(element, "click_element")
    known = browser.known_tabs()
    async with browser.watch() as watch:
        await click_at(browser.page.session, point.x, point.y)
        await watch.settle()
    browser.invalidate()
    result = f"clicked {describe(element.index, element)}"
    opened = await browser.adopt_new_tabs(known)
    if opened is not None:
        result += f"; it opened tab {browser.tab_id(opened)} ({await opened.url()}), now the current tab"
    return ActionResult(result)


@action("input_text", InputText, "Type text into the input field with this index, replacing its content")
async def input_text(ctx: JobContext, p: InputText) -> ActionResult:
    browser = ctx.browser
    element = await browser.target(p, "input_text")
    point = await browser.locate(element, "input_text")
    await click_at(browser.page.session, point.x, point.y)
    previous = await call_on_element(element, SELECT_CONTENT_JS)
    if p.text:
        await insert_text(element.session, await _filled(ctx, p.text, element))  # the record keeps the placeholder
    elif previous:
        await press(element.session, "Delete")
    browser.invalidate()
    return ActionResult(f"typed {p.text!r} into {describe(element.index, element)}")


async def _filled(ctx: JobContext, text: str, element: Any) -> str:
    """The text to type, secrets filled in; a secret bound to domains only into a frame on them
    (its URL read from the browser now, after the click) that holds the focus."""
    if not ctx.secrets.bound(text):
        return ctx.secrets.fill(text, "input_text")
    filled = ctx.secrets.fill(text, "input_text", await frame_url(element))
    if not await holds_focus(element):
        raise ActionError(f"{describe(element.index, element)} lost the focus before the secret was typed (the page "
                          "moved it); nothing was typed", action="input_text", index=element.index)
    return filled


@action("get_dropdown_options", GetDropdownOptions, "List the options of the dropdown with this index")
async def get_dropdown_options(ctx: JobContext, p: GetDropdownOptions) -> ActionResult:
    """A native select's options are read; another dropdown is opened (real click), read and closed."""
    element = await ctx.browser.target(p, "get_dropdown_options")
    if await dropdowns.is_native(element):
        texts = await dropdowns.native_options(element)
        lines = "\n".join(f"{i}: text={t!r}" for i, t in enumerate(texts))
    else:
        offered = await dropdowns.options(ctx, element, "get_dropdown_options")
        found, opened = offered.options, offered.opened
        if opened and found:
            await dropdowns.close(ctx, element, found)
        if not found:
            raise ActionError(f"{describe(element.index, element)} shows no options after a click on it (not a dropdown, or it did not open)",
                              action="get_dropdown_options")
        lines = dropdowns.listing(found)
    return ActionResult(f"options of {describe(element.index, element)}:\n{lines}\n"
                        "Use the exact text in select_dropdown_option.")


@action("select_dropdown_option", SelectDropdownOption, "Select the option with this text in the dropdown with this index")
async def select_dropdown_option(ctx: JobContext, p: SelectDropdownOption) -> ActionResult:
    browser = ctx.browser
    element = await browser.target(p, "select_dropdown_option")
    if await dropdowns.is_native(element):
        return await _select_native(ctx, p, element)
    offered = await dropdowns.options(ctx, element, "select_dropdown_option")
    found, opened = offered.options, offered.opened
    option = dropdowns.pick(found, p.text)
    if option is None:
        if opened and found:
            await dropdowns.close(ctx, element, found)
        if not found:
            raise ActionError(f"{describe(element.index, element)} shows no options after a click on it (not a dropdown, or it did not open)",
                              action="select_dropdown_option", index=element.index)
        raise dropdowns.no_option(describe(element.index, element), p.text, found, "select_dropdown_option", element.index)
    await dropdowns.choose(ctx, option, "select_dropdown_option")
    now = await dropdowns.shown(element)
    return ActionResult(f"selected {option.text!r} in {describe(element.index, element)}" + (f"; it shows {now!r}" if now else ""))


async def _select_native(ctx: JobContext, p: SelectDropdownOption, element: Any) -> ActionResult:
    """A native select: Chrome's popup is outside the page, so the option is set through the DOM."""
    browser = ctx.browser
    await browser.locate(element, "select_dropdown_option")  # scrolled into view, as a person would see it
    async with browser.watch() as watch:
        outcome = await dropdowns.native_select(element, p.text)
        await watch.settle()
    browser.invalidate()
    if outcome.get("error") == "no option":
        raise ActionError(f"{describe(element.index, element)} has no option {p.text!r}; options: {outcome['options']}",
                          action="select_dropdown_option", index=element.index)
    if outcome.get("error"):
        raise ActionError(f"{describe(element.index, element)} is {outcome['error']}", action="select_dropdown_option")
    return ActionResult(f"selected {outcome['text']!r} in {describe(element.index, element)}")


@action("send_keys", SendKeys, "Press keys (Enter, Escape, Tab, Control+a, ...) in the focused element")
async def send_keys_action(ctx: JobContext, p: SendKeys) -> ActionResult:
    browser = ctx.browser
    known = browser.known_tabs()
    async with browser.watch() as watch:
        result = await send_keys(browser.page.session, p.keys)
        await watch.settle()
    browser.invalidate()
    opened = await browser.adopt_new_tabs(known)
    if opened is not None:
        result += f"; it opened tab {browser.tab_id(opened)}, now the current tab"
    return ActionResult(result)
