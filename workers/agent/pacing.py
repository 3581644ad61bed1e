"""The hook the agent calls before each navigation it makes: where politeness waits or refuses.

The agent does not know where limits live (Redis, shared by every worker) or how robots.txt is
fetched; the pipeline's politeness feature hands the job a ``NavigationGate`` that does. It is called before every
navigation the agent itself starts (the start URL, ``go_to_url``, ``search``, ``open_tab``)
before Chrome is asked to navigate, so a wait never eats into the navigation's own timeout.

A navigation a page starts by itself (a clicked link, a submitted form, a script setting
``location``, a redirect) is gated by the ``Firewall``: when the gate ``intercepts``, main-frame
document requests are paused with ``Fetch`` until the gate lets them go (or fail them as
blocked). Not the egress proxy: it sees HTTPS only as tunnels and cannot tell a page from an
image. A navigation the agent already gated is not gated twice (``Firewall.expect``).

The same interception shows the gate each main-frame document's answer (``after_response``): a
site answering 429 or 503 (with its ``Retry-After``) is one politeness slows down.
"""

from __future__ import annotations

from typing import Protocol


class NavigationGate(Protocol):
    @property
    def intercepts(self) -> bool:
        """Whether navigations pages start by themselves must be paused and brought here too."""
        ...

    async def before_navigation(self, url: str) -> None:
        """Return once ``url`` may be opened (after waiting out the domain's delay); raise
        ``URLBlocked`` when it may not be opened at all (robots.txt)."""
        ...

    async def after_response(self, url: str, status: int, retry_after: str | None) -> None:
        """A main-frame document of the job answered ``status`` (``retry_after``: its Retry-After
        header); seen only while the gate ``intercepts``."""
        ...


class OpenGate:
    """No politeness: every navigation goes at once."""

    intercepts = False

    async def before_navigation(self, url: str) -> None:
        return None

    async def after_response(self, url: str, status: int, retry_after: str | None) -> None:
        return None
