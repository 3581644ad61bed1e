"""Which ``Host`` headers the API answers: its defence against DNS rebinding.

A page on ``evil.example`` that re-points its own name at 127.0.0.1 makes the visitor's browser
talk to a tokenless loopback API as ``evil.example:8080``. For the browser that is the page's own
origin, so neither CORS nor SameSite cookies stop it; the ``Host`` header is the one thing that
tells the request apart. So the API (``/v1``, the console at ``/ui``, ``/mcp``) answers only the
names it is bound to, and those the operator lists in ``BROWSERD_ALLOWED_HOSTS``.

One definition for the API's guard (``daemon.api.hosts``) and the MCP transport's own check
(``daemon.mcp.http``); it lives in ``config`` because both read it and neither may import the
other. ``is_loopback`` is here too: ``serve``'s exposure check and this list judge loopback alike.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # settings validate BROWSERD_ALLOWED_HOSTS with parse_hosts below
    from config.settings import Settings

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
LOOPBACK_SPELLINGS = ("127.0.0.1", "localhost", "[::1]")
"""How local clients name a loopback-bound API (a browser, curl, the CLI's default BROWSERD_API_URL)."""
WILDCARDS = frozenset({"0.0.0.0", "[::]", ""})
DEFAULT_PORT = 80  # a Host header without a port names the scheme's default; uvicorn speaks plain HTTP


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the localhost names; a wildcard or any other name is not."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(name: str) -> str:
    """A host as a ``Host`` header spells it: lower case, no trailing dot, an IPv6 address in brackets."""
    name = name.strip().lower().rstrip(".")
    if ":" in name and not name.startswith("["):
        return f"[{name}]"
    return name


@dataclass(frozen=True)
class HostPort:
    """One ``host[:port]``; ``port`` None matches any port."""

    name: str
    port: int | None

    @classmethod
    def parse(cls, value: str, default_port: int | None) -> HostPort:
        """``example.com``, ``example.com:8080``, ``[::1]:8080``, ``::1``; ``ValueError`` on anything else."""
        text = value.strip().lower()
        if not text or any(c in text for c in "/@?#* \t"):
            raise ValueError(f"{value!r} is not a host or host:port")
        if text.startswith("["):
            name, sep, rest = text.partition("]")
            name, port_text = name + "]", rest.removeprefix(":") if sep else ""
            if rest and not rest.startswith(":"):
                raise ValueError(f"{value!r} is not a host or host:port")
        elif text.count(":") > 1:  # a bare IPv6 address
            name, port_text = text, ""
        else:
            name, _, port_text = text.partition(":")
        if port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
            raise ValueError(f"{value!r} has no valid port")
        return cls(host_name(name), int(port_text) if port_text else default_port)

    def matches(self, given: HostPort) -> bool:
        return self.name == given.name and (self.port is None or self.port == given.port)

    def __str__(self) -> str:
        return self.name if self.port is None else f"{self.name}:{self.port}"


def parse_hosts(values: list[str]) -> list[str]:
    """BROWSERD_ALLOWED_HOSTS, normalised; ``ValueError`` names a bad entry."""
    return [str(HostPort.parse(value, None)) for value in values]


@dataclass(frozen=True)
class AllowedHosts:
    """The ``Host`` values the API answers, and whether it checks them at all.

    Always checked when there is no token (a rebound page could otherwise drive the API); with a
    token, only when ``BROWSERD_ALLOWED_HOSTS`` is set (the token already keeps a rebound page out,
    and a proxy in front may pass names this process cannot know).
    """

    entries: tuple[HostPort, ...]
    enforced: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> AllowedHosts:
        """From the address ``serve`` binds (``api_host``/``api_port``, which ``serve`` sets to what it
        binds) and BROWSERD_ALLOWED_HOSTS. Port 0 (any free port) accepts the names on any port."""
        port = settings.api_port or None
        bound = host_name(settings.api_host)
        names = [] if bound in WILDCARDS else [bound]
        if bound in WILDCARDS or is_loopback(bound):  # a wildcard bind listens on loopback too
            names += [name for name in LOOPBACK_SPELLINGS if name not in names]
        entries = [HostPort(name, port) for name in names]
        entries += [HostPort.parse(value, None) for value in settings.allowed_hosts]
        return cls(tuple(entries), settings.api_token is None or bool(settings.allowed_hosts))

    def allows(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` header may be answered."""
        if not self.enforced:
            return True
        try:
            given = HostPort.parse(host or "", DEFAULT_PORT)
        except ValueError:
            return False
        return any(entry.matches(given) for entry in self.entries)

    @property
    def own(self) -> str:
        """A ``Host`` this list accepts: what in-process calls (the MCP tools) send."""
        return str(self.entries[0])

    def patterns(self) -> list[str]:
        """The entries as the MCP SDK's transport check spells them (``host:port``, ``host:*``)."""
        out = []
        for entry in self.entries:
            out += [entry.name, f"{entry.name}:*"] if entry.port is None else [str(entry)]
        return out

    def refusal(self, host: str | None) -> str:
        """What a refused client is told: which names are answered and the setting that adds one."""
        shown = (host or "")[:100]
        return (f"this API does not answer for Host {shown!r} (it answers {', '.join(map(str, self.entries))}): "
                "a page that points its own DNS name at this address (DNS rebinding) must not drive it. "
                "To reach the API by that name, add it to BROWSERD_ALLOWED_HOSTS")
