"""A job's browser settings applied to every tab it sees: user agent, locale, time zone, viewport,
geolocation and extra headers (``JobSpec``'s per-job browser settings).

Chrome has no context-wide override for these, so each tab is set up when the job first sees it
(``AgentBrowser.tabs``), before the job navigates it; the geolocation permission is granted once
for the whole context. A tab a page opens by itself loads its first document before browserd
attaches to it, so that first request goes out with the browser's own values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cdp
from workers.jobs.model.spec import JobSpec


@dataclass
class PageSettings:
    """What each tab of a job is told; ``from_spec`` is None when the job sets nothing."""

    user_agent: str | None = None
    locale: str | None = None
    timezone: str | None = None
    viewport: dict[str, int] | None = None
    geolocation: dict[str, float] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    _applied: set[str] = field(default_factory=set)

    @classmethod
    def from_spec(cls, spec: JobSpec) -> PageSettings | None:
        settings = cls(user_agent=spec.user_agent, locale=spec.locale, timezone=spec.timezone,
                       viewport=spec.viewport.model_dump() if spec.viewport else None,
                       geolocation=spec.geolocation.model_dump() if spec.geolocation else None,
                       headers=dict(spec.extra_http_headers))
        return settings if settings.any else None

    @property
    def any(self) -> bool:
        return bool(self.user_agent or self.locale or self.timezone or self.viewport or self.geolocation
                    or self.headers)

    async def prepare(self, lease: cdp.Lease) -> None:
        """Context-wide parts: the geolocation permission, and the browser's own user agent when only
        the locale changes (Chrome sets Accept-Language together with a user agent)."""
        root = lease.browser.connection.root
        if self.geolocation is not None:
            await root.send("Browser.grantPermissions",
                            {"permissions": ["geolocation"], "browserContextId": lease.context_id})
        if self.locale and not self.user_agent:
            self.user_agent = (await lease.browser.version())["userAgent"]

    async def apply(self, page: cdp.Page) -> None:
        """Set up one tab (once)."""
        if page.target_id in self._applied:
            return
        self._applied.add(page.target_id)
        for method, params in self._commands():
            await page.session.send(method, params)

    def _commands(self) -> list[tuple[str, dict[str, Any]]]:
        commands: list[tuple[str, dict[str, Any]]] = []
        if self.user_agent:
            params: dict[str, Any] = {"userAgent": self.user_agent}
            if self.locale:
                params["acceptLanguage"] = self.locale
            commands.append(("Emulation.setUserAgentOverride", params))
        if self.locale:
            commands.append(("Emulation.setLocaleOverride", {"locale": self.locale}))
        if self.timezone:
            commands.append(("Emulation.setTimezoneOverride", {"timezoneId": self.timezone}))
        if self.viewport:
            commands.append(("Emulation.setDeviceMetricsOverride",
                             {**self.viewport, "deviceScaleFactor": 0, "mobile": False}))
        if self.geolocation:
            commands.append(("Emulation.setGeolocationOverride", dict(self.geolocation)))
        if self.headers:
            commands += [("Network.enable", {}), ("Network.setExtraHTTPHeaders", {"headers": self.headers})]
        return commands
