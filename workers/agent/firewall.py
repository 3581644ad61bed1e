"""Egress policy of a job, enforced on the agent's navigations and on everything its browser does.

A ``UrlPolicy`` says which URLs a job may reach: allow- and deny-lists of domains from the job and
from the global settings (a URL must pass both), and schemes that are never allowed. A
``NetworkPolicy`` (``cdp.egress``) closes private networks unless the settings or the job open them.

Enforcement is in two layers:

* ``JobEgress`` is admitted into the lease's gate on the egress proxy (``cdp.egress``). Every
  connection the job's browser context opens, from any page, frame, worker or socket, is judged
  there: the host name against the ``UrlPolicy``, the resolved address against the
  ``NetworkPolicy``. This is the layer that cannot be bypassed; a job does not start without it.
* ``Firewall`` puts ``Fetch`` interception on each page session and each out-of-process frame
  session. It is not needed for safety: it gives the agent clear reports (which resource type,
  which frame, ``url_blocked`` for a main-frame navigation) for what it sees. It also brings the
  navigations pages start by themselves to the job's ``NavigationGate`` (politeness: a delay,
  robots.txt), when the gate asks for them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import cdp
from cdp.egress import NetworkPolicy
from config.hosts import HostEntry, listed, parse_entry
from config.networks import IPAddress
from workers.agent.config import GlobalEgress
from workers.agent.errors import EgressUnavailable, URLBlocked
from workers.agent.pacing import NavigationGate, OpenGate

log = logging.getLogger("browserd.agent.firewall")

REFUSED_SCHEMES = frozenset({"chrome", "chrome-extension", "chrome-untrusted", "devtools", "file", "javascript",
                             "data", "view-source", "filesystem"})
NAVIGABLE_SCHEMES = frozenset({"http", "https"})
BLANK_PAGES = frozenset({"about:blank", "about:srcdoc"})


def _request_key(url: str) -> str:
    """``url`` as Chrome's request for it reads (no fragment; an empty path is ``/``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return parts._replace(path=parts.path or "/", fragment="").geturl()


@dataclass(frozen=True)
class UrlPolicy:
    """Allow- and deny-lists; an empty allow-list allows every domain the deny-lists do not name.

    The job's lists and the operator's (settings) are kept apart, so a refusal can say which one
    refused and what opens it (the job's ``--allow``, or nothing a job can do). Entries are read in
    any spelling (``config.hosts.parse_entry``) and matched in one (``config.hosts``)."""

    job_allowed: tuple[HostEntry, ...] = ()
    job_denied: tuple[HostEntry, ...] = ()
    global_allowed: tuple[HostEntry, ...] = ()
    global_denied: tuple[HostEntry, ...] = ()

    @classmethod
    def build(cls, *, job_allowed: Sequence[str] = (), job_denied: Sequence[str] = (),
              global_allowed: Sequence[str] = (), global_denied: Sequence[str] = ()) -> UrlPolicy:
        return cls(*(tuple(parse_entry(d) for d in lst) for lst in (job_allowed, job_denied, global_allowed,
                                                                      global_denied)))

    @property
    def restricts_domains(self) -> bool:
        return bool(self.job_allowed or self.job_denied or self.global_allowed or self.global_denied)

    def refusal(self, url: str) -> str | None:
        """Why ``url`` is refused, or None when it is allowed."""
        if url in BLANK_PAGES:
            return None
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return "malformed URL"
        scheme = parts.scheme.lower()
        if scheme in REFUSED_SCHEMES or scheme == "about":
            return f"scheme {scheme}: is never allowed"
        if scheme not in NAVIGABLE_SCHEMES:
            return f"scheme {scheme or '(none)'}: is not allowed"
        host = parts.hostname or ""
        if not host:
            return "URL has no host"
        return self.host_refusal(host, port or (443 if scheme == "https" else 80))

    def host_refusal(self, host: str, port: int | None) -> str | None:
        """Why the domain lists refuse ``host`` (any spelling) on ``port``, or None: the one place that
        words a domain refusal, naming the list that refused and what (if anything) opens it."""
        entry = next((e for e in self.global_denied if e.matches(host, port)), None)
        if entry is not None:
            return f"domain not allowed: {host} is on the operator's BROWSERD_DENIED_DOMAINS ({entry}); no job can open it"
        entry = next((e for e in self.job_denied if e.matches(host, port)), None)
        if entry is not None:
            return (f"domain not allowed: {host} is on the job's denied_domains ({entry}); open it by dropping "
                    f"--deny {entry} (job field denied_domains)")
        if self.global_allowed and not listed(self.global_allowed, host, port):
            return (f"domain not allowed: {host} is not on the operator's BROWSERD_ALLOWED_DOMAINS; no job can "
                    "open it (the operator can add it there)")
        if self.job_allowed and not listed(self.job_allowed, host, port):
            return (f"domain not allowed: {host} is not on the job's allowed_domains; open it with --allow {host} "
                    "(job field allowed_domains)")
        return None

    def check(self, url: str) -> None:
        """Raise ``URLBlocked`` for a refused URL."""
        reason = self.refusal(url)
        if reason is not None:
            raise URLBlocked(url, reason)


@dataclass(frozen=True)
class JobEgress:
    """A job's rule on its gate (``cdp.egress.EgressRule``): domains by name, networks by address."""

    urls: UrlPolicy
    networks: NetworkPolicy

    def host_refusal(self, host: str, port: int) -> str | None:
        return self.urls.host_refusal(host, port)

    def address_refusal(self, address: IPAddress) -> str | None:
        return self.networks.address_refusal(address)


@dataclass
class BlockedRequest:
    url: str
    reason: str
    resource_type: str
    target_id: str
    main_frame: bool


RESOURCE_TYPES = {"images": "Image", "media": "Media", "fonts": "Font"}
"""``JobSpec.block_resources`` kinds -> Chrome's resource types (``Network.ResourceType``)."""


@dataclass
class Firewall:
    """Enforces one policy on every page of one job (call ``protect`` for each page it sees).

    ``skip`` holds resource types never loaded (``block_resources``, to save bandwidth): failed
    in the page like a blocked request, but not reported to the model (nothing was refused)."""

    policy: UrlPolicy
    gate: NavigationGate = field(default_factory=OpenGate)
    skip: frozenset[str] = frozenset()
    blocked: list[BlockedRequest] = field(default_factory=list)
    _guarded: set[str] = field(default_factory=set)
    _expected: set[str] = field(default_factory=set)  # navigations the agent has gated already
    _reported: int = 0

    async def protect(self, page: cdp.Page) -> None:
        """Intercept the page's requests and those of its out-of-process frames, now and later."""
        if page.target_id in self._guarded or not (self.policy.restricts_domains or self.skip or self.gate.intercepts):
            return
        self._guarded.add(page.target_id)
        await self._guard(page, page.session)
        for session in list(page.frame_sessions.values()):
            await self._guard(page, session)

    async def _guard(self, page: cdp.Page, session: cdp.CDPSession) -> None:
        session.on("Fetch.requestPaused", lambda p: self._paused(page, session, p))
        session.on("Target.attachedToTarget", lambda p: self._child_attached(page, p))
        # Only documents when only the gate asks: images and scripts then go uninterrupted. The gate
        # also sees each document's answer (its status: a 429 or 503 slows the site down).
        pattern = {"urlPattern": "*", "requestStage": "Request"}
        if not (self.policy.restricts_domains or self.skip):
            pattern["resourceType"] = "Document"
        patterns = [pattern]
        if self.gate.intercepts:
            patterns.append({"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"})
        with contextlib.suppress(cdp.CDPException):
            await session.send("Fetch.enable", {"patterns": patterns})

    def _child_attached(self, page: cdp.Page, params: dict[str, Any]) -> Any:
        child = page.frame_sessions.get(params.get("targetInfo", {}).get("targetId", ""))
        if child is None:
            return None
        return self._guard(page, child)

    async def _paused(self, page: cdp.Page, session: cdp.CDPSession, params: dict[str, Any]) -> None:
        url = params["request"]["url"]
        main = params.get("resourceType") == "Document" and params.get("frameId") == page.main_frame_id
        if "responseStatusCode" in params or "responseErrorReason" in params:  # the response stage
            await self._answered(session, params, main)
            return
        reason = self.policy.refusal(url)
        if reason is None and main:
            reason = await self._gated(url)
        try:
            if params.get("resourceType") in self.skip:
                await session.send("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"})
                return
            if reason is None:
                await session.send("Fetch.continueRequest", {"requestId": params["requestId"]})
                return
            self.blocked.append(BlockedRequest(url, reason, params.get("resourceType", ""), page.target_id, main))
            log.info("blocked %s request to %s: %s", params.get("resourceType"), url, reason)
            await session.send("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"})
        except cdp.CDPException:
            pass  # the frame went away with its request

    async def _answered(self, session: cdp.CDPSession, params: dict[str, Any], main: bool) -> None:
        """A document's answer: the gate hears a main frame's status, then the answer goes on as it came."""
        status = params.get("responseStatusCode")
        try:
            if main and isinstance(status, int):
                retry_after = next((h.get("value") for h in params.get("responseHeaders") or []
                                    if str(h.get("name", "")).lower() == "retry-after"), None)
                await self.gate.after_response(params["request"]["url"], status, retry_after)
        finally:
            with contextlib.suppress(cdp.CDPException):  # the frame went away with its request
                await session.send("Fetch.continueResponse", {"requestId": params["requestId"]})

    def expect(self, url: str) -> None:
        """The agent gated a navigation to ``url`` itself: let its request through ungated, once."""
        if self.gate.intercepts:
            self._expected.add(_request_key(url))

    async def _gated(self, url: str) -> str | None:
        """Bring a main-frame navigation to the gate (unless the agent did); why it refused, or None."""
        key = _request_key(url)
        if not self.gate.intercepts or key in self._expected:
            self._expected.discard(key)
            return None
        try:
            await self.gate.before_navigation(url)
        except URLBlocked as exc:
            return exc.reason
        return None

    def new_blocks(self) -> list[BlockedRequest]:
        """Requests blocked since the last call (the action layer reports them to the model)."""
        fresh = self.blocked[self._reported :]
        self._reported = len(self.blocked)
        return fresh

    def check(self, url: str) -> None:
        self.policy.check(url)


def admit_egress(lease: cdp.Lease, rule: GlobalEgress, *, allowed_domains: Sequence[str] = (),
                 denied_domains: Sequence[str] = (), allowed_networks: Sequence[str] = (),
                 upstream: cdp.UpstreamProxy | None = None, fallback: cdp.Fallback | None = None,
                 tenant: bool = False) -> UrlPolicy:
    """Put the lease's gate under one job's (or session's) rule: the settings' domain lists (``rule``)
    with its own, and private networks closed unless the settings or ``allowed_networks`` open them.
    A ``tenant``'s job or session opens only its own ``allowed_networks`` (checked at submission
    inside its tenant's ceiling and the operator's): the operator's ``BROWSERD_ALLOWED_NETWORKS`` and
    ``BROWSERD_ALLOW_PRIVATE_NETWORKS`` are its upper bound, never opened for it.
    A lease without a gate cannot enforce that rule on workers and sockets, so it is refused.
    ``upstream`` is the job's own proxy, which the gate dials through (the rule still judges each destination);
    ``fallback`` gives another when it fails (a proxy pool)."""
    policy = UrlPolicy.build(job_allowed=allowed_domains, job_denied=denied_domains,
                             global_allowed=rule.allowed_domains, global_denied=rule.denied_domains)
    if lease.egress is None:
        raise EgressUnavailable()
    if tenant:
        networks = NetworkPolicy.build(False, allowed_networks)
    else:
        networks = NetworkPolicy.build(rule.allow_private_networks, [*rule.allowed_networks, *allowed_networks])
    lease.egress.admit(JobEgress(policy, networks), upstream, fallback)
    return policy
