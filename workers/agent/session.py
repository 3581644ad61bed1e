"""An interactive session's browser: the agent's own browser, firewall and actions, driven one
command at a time by an external agent instead of the navigator.

Nothing here is a second implementation: ``navigate``, ``click``, ``type``, ``select`` and
``scroll`` run the registered actions (``go_to_url``, ``click_element``, ``input_text``,
``select_dropdown_option``, ``previous_page``/``next_page``/``scroll_to_text``) through the same
runner the navigator and scripts use, so their results and errors read the same; ``state`` is the
navigator's page view (``navigator.page_view``) inside the untrusted-content wrapper. The context
is put under the same egress rule as a job (``job.admit_egress``).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import cdp
import dom
from workers.agent.actions import parse_action, run_action
from workers.agent.browser import AgentBrowser
from workers.agent.cancel import CancelToken
from workers.agent.config import AgentConfig
from workers.agent.context import JobContext
from workers.agent.errors import AgentError, URLBlocked
from workers.agent.firewall import Firewall, admit_egress
from workers.agent.navigator import ListedTab, page_view
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.browsing import Viewport
from workers.jobs.sessions.models import Command, ReplyCode, SessionRecord, SessionReply, check_args

SCREENSHOT_QUALITY = 70
STATE_TEXT_MAX = 60_000  # characters of readable page text one get_state returns

Handler = Callable[["SessionBrowser", dict[str, Any]], Awaitable[SessionReply]]


class SessionBrowser:
    def __init__(self, ctx: JobContext, viewport: Viewport | None = None) -> None:
        self.ctx = ctx
        self.viewport = viewport
        self._sized: set[str] = set()  # tabs already rendered at the viewport's size

    @property
    def browser(self) -> AgentBrowser:
        return self.ctx.browser

    @classmethod
    async def open(cls, lease: cdp.Lease, config: AgentConfig, *, session_id: str, access: SessionRecord) -> SessionBrowser:
        """The lease under the session's egress rule (its domain lists and networks, ``access``), its
        downloads refused, its dialogs dismissed, its tabs ``access.viewport`` in size."""
        policy = admit_egress(lease, config.egress, allowed_domains=access.allowed_domains,
                              denied_domains=access.denied_domains, allowed_networks=access.allowed_networks,
                              tenant=access.tenant is not None)
        cancel = CancelToken()
        browser = AgentBrowser(lease, Firewall(policy), cancel, viewport_expansion=config.defaults.viewport_expansion,
                               downloads=cdp.DownloadLimits(folder=None))
        await browser.start()
        # The context's spec: what an action may read of "its job" (the config, no secrets, no model).
        spec = JobSpec(task=f"interactive session {session_id}", allowed_networks=access.allowed_networks,
                       allowed_domains=access.allowed_domains, denied_domains=access.denied_domains)
        return cls(JobContext(spec=spec, config=config, browser=browser, cancel=cancel), access.viewport)

    async def run(self, name: Command, args: dict[str, Any]) -> SessionReply:
        """One command; its failure comes back as a reply with a code (a dead browser propagates)."""
        try:
            checked = check_args(name, args)
        except ValueError as exc:
            return failure(ReplyCode.invalid, f"{name}: {exc}")
        try:
            await self._fit()
            return await COMMANDS[name](self, checked)
        except URLBlocked as exc:
            return failure(ReplyCode.url_blocked, str(exc))
        except AgentError as exc:
            return failure(ReplyCode.action_failed, str(exc))
        except (cdp.BrowserGone, cdp.TargetCrashed, cdp.ResourceLimitExceeded):
            raise
        except (cdp.CDPException, cdp.EvaluationError) as exc:
            self.browser.check_alive()
            return failure(ReplyCode.action_failed, f"{name} failed: {exc}")

    async def _fit(self) -> None:
        """Give the current tab the session's viewport (a tab the page opened gets it at the next command)."""
        page = self.browser.page
        if self.viewport is not None and page.target_id not in self._sized:
            await page.set_viewport(self.viewport.width, self.viewport.height)
            self._sized.add(page.target_id)
            self.browser.invalidate(page)

    async def act(self, action: dict[str, Any]) -> SessionReply:
        """Run one of the agent's actions; its error, when it fails, is the action's own."""
        bound = parse_action(action)
        outcome = await run_action(self.ctx, bound.action, bound.params)
        url = await self.browser.page.url()
        if outcome.error is not None:
            code = ReplyCode.url_blocked if isinstance(outcome.error, URLBlocked) else ReplyCode.action_failed
            return failure(code, str(outcome.error), url)
        return SessionReply(result=outcome.record.result or "", url=url)

    async def tabs(self) -> list[dict[str, Any]]:
        current = self.browser.tab_id(self.browser.page)
        tabs = []
        for tab in await self.browser.tabs():
            info = await tab.page.info()
            tabs.append({"id": tab.id, "url": info["url"], "title": info["title"], "current": tab.id == current})
        return tabs


def failure(code: ReplyCode, error: str, url: str | None = None) -> SessionReply:
    return SessionReply(ok=False, code=code, error=error, url=url)


async def _navigate(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    return await s.act({"go_to_url": {"url": a["url"]}})


async def _click(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    return await s.act({"click_element": {"index": a["index"]}})


async def _type(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    return await s.act({"input_text": {"index": a["index"], "text": a["text"]}})


async def _select(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    return await s.act({"select_dropdown_option": {"index": a["index"], "text": a["option"]}})


async def _scroll(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    if "text" in a:
        return await s.act({"scroll_to_text": {"text": a["text"]}})
    return await s.act({"next_page" if a["direction"] == "down" else "previous_page": {}})


async def _state(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    """The navigator's view of the page: what the page did by itself since the last command, the
    tabs and the element index, wrapped as untrusted; the readable text too when asked."""
    notes = (await s.browser.page_events()).notes
    state = await s.browser.capture()
    tabs = await s.tabs()
    current = next(t["id"] for t in tabs if t["current"])
    view = page_view(state, [ListedTab(t["id"], t["url"], t["title"]) for t in tabs], current, notes)
    data = {"url": state.url, "title": state.title, "tabs": tabs, "elements": len(state.elements),
            "state": dom.wrap(view)}
    if a.get("text"):
        text = state.text()
        data["text"] = dom.wrap_text(text if len(text) <= STATE_TEXT_MAX else text[:STATE_TEXT_MAX] + "\n[cut]")
    return SessionReply(result=f"{len(state.elements)} elements on {state.url}", url=state.url, data=data)


async def _screenshot(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    jpeg = await s.browser.page.screenshot(jpeg_quality=SCREENSHOT_QUALITY)
    return SessionReply(result=f"a {len(jpeg)}-byte JPEG of the current tab", url=await s.browser.page.url(),
                        data={"jpeg": base64.b64encode(jpeg).decode()})


async def _tabs(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    tabs = await s.tabs()
    return SessionReply(result=f"{len(tabs)} tabs", url=await s.browser.page.url(), data={"tabs": tabs})


async def _close(s: SessionBrowser, a: dict[str, Any]) -> SessionReply:
    return SessionReply(result="the session is closed")


COMMANDS: dict[Command, Handler] = {
    "navigate": _navigate, "state": _state, "click": _click, "type": _type, "select": _select, "scroll": _scroll,
    "screenshot": _screenshot, "tabs": _tabs, "close": _close,
}

__all__ = ["COMMANDS", "SessionBrowser", "failure"]
