"""Actions on indexed elements, with real mouse and keyboard input in the element's frame."""

from __future__ import annotations

from typing import Any

from workers.agent.actions.cdp_input import call_on_element, click_at, insert_text, press, send_keys
from workers.agent.actions.registry import action
from workers.agent.actions.schemas import ClickElement, GetDropdownOptions, InputText, SelectDropdownOption, SendKeys
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError

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

OPTIONS_JS = """function() {
  if (this.tagName !== 'SELECT') return null;
  return Array.from(this.options).map((o, i) => ({index: i, text: o.text.trim(), value: o.value}));
}"""

SELECT_JS = """function(text) {
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
    element = await browser.element(p.index, "click_element")
    x, y = await browser.locate(element, "click_element")
    known = browser.known_tabs()
    async with browser.watch() as watch:
        await click_at(browser.page.session, x, y)
        await watch.settle()
    browser.invalidate()
    result = f"clicked {describe(p.index, element)}"
    opened = await browser.adopt_new_tabs(known)
    if opened is not None:
        result += f"; it opened tab {browser.tab_id(opened)} ({await opened.url()}), now the current tab"
    return ActionResult(result)


@action("input_text", InputText, "Type text into the input field with this index, replacing its content")
async def input_text(ctx: JobContext, p: InputText) -> ActionResult:
    browser = ctx.browser
    element = await browser.element(p.index, "input_text")
    x, y = await browser.locate(element, "input_text")
    await click_at(browser.page.session, x, y)
    previous = await call_on_element(element, SELECT_CONTENT_JS)
    if p.text:
        await insert_text(element.session, p.text)
    elif previous:
        await press(element.session, "Delete")
    browser.invalidate()
    return ActionResult(f"typed {p.text!r} into {describe(p.index, element)}")


@action("get_dropdown_options", GetDropdownOptions, "List the options of the dropdown with this index")
async def get_dropdown_options(ctx: JobContext, p: GetDropdownOptions) -> ActionResult:
    element = await ctx.browser.element(p.index, "get_dropdown_options")
    options = await call_on_element(element, OPTIONS_JS)
    if options is None:
        raise ActionError(f"{describe(p.index, element)} is not a dropdown (<select>)", action="get_dropdown_options")
    lines = "\n".join(f"{o['index']}: text={o['text']!r}" for o in options)
    return ActionResult(f"options of {describe(p.index, element)}:\n{lines}\n"
                        "Use the exact text in select_dropdown_option.", include_in_memory=True)


@action("select_dropdown_option", SelectDropdownOption, "Select the option with this text in the dropdown with this index")
async def select_dropdown_option(ctx: JobContext, p: SelectDropdownOption) -> ActionResult:
    browser = ctx.browser
    element = await browser.element(p.index, "select_dropdown_option")
    await browser.locate(element, "select_dropdown_option")  # scrolled into view, as a person would see it
    async with browser.watch() as watch:
        outcome = await call_on_element(element, SELECT_JS, p.text)
        await watch.settle()
    browser.invalidate()
    if outcome.get("error") == "no option":
        raise ActionError(f"{describe(p.index, element)} has no option {p.text!r}; options: {outcome['options']}",
                          action="select_dropdown_option", index=p.index)
    if outcome.get("error"):
        raise ActionError(f"{describe(p.index, element)} is {outcome['error']}", action="select_dropdown_option")
    return ActionResult(f"selected {outcome['text']!r} in {describe(p.index, element)}")


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
