"""Actions that move between pages and tabs."""

from __future__ import annotations

from urllib.parse import quote_plus

from workers.agent.actions.registry import action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError
from workers.jobs.model.actions import CloseTab, GoBack, GoToUrl, OpenTab, Search, SwitchTab, Wait

WAIT_SLICE = 0.25  # seconds between looks at the browser during a wait


@action("go_to_url", GoToUrl, "Open a URL in the current tab")
async def go_to_url(ctx: JobContext, p: GoToUrl) -> ActionResult:
    if await ctx.browser.goto(p.url) is not None:
        return ActionResult(f"{p.url} is a file, not a page: the tab stays on {await ctx.browser.page.url()}")
    try:
        document = await ctx.browser.document(ctx.config.actions.max_extract_chars)
    except ActionError as exc:  # the page is there; what it shows could not be read as a PDF
        return ActionResult(f"navigated to {p.url}: {exc}")
    if document is not None:
        return ActionResult(f"navigated to {p.url}: {document.summary()}")
    return ActionResult(f"navigated to {p.url}")


@action("search", Search, "Search the web for a query in the current tab")
async def search(ctx: JobContext, p: Search) -> ActionResult:
    url = ctx.config.actions.search_url.replace("{query}", quote_plus(p.query))
    await ctx.browser.goto(url)
    return ActionResult(f"searched for {p.query!r}")


@action("go_back", GoBack, "Go back to the previous page of the current tab")
async def go_back(ctx: JobContext, p: GoBack) -> ActionResult:
    page = ctx.browser.page
    ctx.browser.invalidate(page)
    if not await ctx.cancel.run(page.go_back(), "while going back"):
        raise ActionError("there is no previous page in this tab", action="go_back")
    return ActionResult(f"went back to {await page.url()}")


@action("wait", Wait, "Wait a number of seconds, e.g. for a page to finish loading")
async def wait(ctx: JobContext, p: Wait) -> ActionResult:
    # In slices, looking at the browser after each: one that died meanwhile ends the job now
    # (BrowserGone), not after the rest of a long wait.
    remaining = p.seconds
    while remaining > 0:
        await ctx.cancel.sleep(min(remaining, WAIT_SLICE))
        remaining -= WAIT_SLICE
        ctx.browser.check_alive()
    ctx.browser.invalidate()
    return ActionResult(f"waited {p.seconds:g} seconds")


@action("open_tab", OpenTab, "Open a URL in a new tab, which becomes the current tab")
async def open_tab(ctx: JobContext, p: OpenTab) -> ActionResult:
    page = await ctx.browser.open_tab(p.url)
    return ActionResult(f"opened tab {ctx.browser.tab_id(page)} with {p.url}")


@action("switch_tab", SwitchTab, "Make another open tab the current tab")
async def switch_tab(ctx: JobContext, p: SwitchTab) -> ActionResult:
    page = await ctx.browser.tab(p.tab_id)
    await ctx.browser.switch_to(page)
    return ActionResult(f"switched to tab {p.tab_id} ({await page.url()})")


@action("close_tab", CloseTab, "Close an open tab")
async def close_tab(ctx: JobContext, p: CloseTab) -> ActionResult:
    browser = ctx.browser
    page = await browser.tab(p.tab_id)
    await browser.lease.close_page(page)
    browser.invalidate()
    current = browser.page
    return ActionResult(f"closed tab {p.tab_id}; the current tab is {browser.tab_id(current)} ({await current.url()})")
