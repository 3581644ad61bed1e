"""One spelling per page (``normalise``), its shape (``pattern``), and why a found URL is not visited (``SKIP``).

A crawl visits each page once, so two spellings of one page must count once: the scheme and host
are lower-cased, default ports dropped, the fragment dropped (it never reaches the server), the
query's parameters sorted and the tracking parameters (``utm_*``, ``gclid``, ... or the crawl's own
list) dropped, and an empty path is ``/``. A trailing slash is kept as written unless the crawl's
rule for the site (``SlashRules``) says ``/a/`` and ``/a`` are one page: ``strip`` spells it ``/a``,
``add`` spells it ``/a/``. Pure: no I/O, and light enough for the client to load.

A crawler trap (a calendar linking the next month for ever, a session id in every path, endless
query permutations) makes endless URLs of one *shape*: ``pattern`` is that shape (the host and the
path with its numbers, ids and dates replaced, the query's keys without their values), and a crawl
queues at most ``max_pages_per_pattern`` pages of one pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from config.hosts import HostEntry, parse_entry

DEFAULT_TRACKING = (
    "utm_*", "gclid", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "_gl",
    "yclid", "igshid", "ref_src",
)
"""Query parameters that name how a visitor arrived, not what the page shows (``*``: a prefix)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


class TrailingSlash(StrEnum):
    """How a crawl spells a path's trailing slash (sites differ: for one ``/a/`` and ``/a`` are the
    same page, for another two)."""

    keep = "keep"  # as the link writes it: /a/ and /a are two pages
    strip = "strip"  # one page, spelt /a (the root / stays /)
    add = "add"  # one page, spelt /a/ (a last segment with a dot, a file such as /feed.xml, stays as it is)
    # strip and add spell /a/// as /a and /a/: one trailing slash or many, it is the same page


@dataclass(frozen=True)
class SlashRules:
    """The crawl's trailing-slash rule: ``default`` everywhere, unless a ``sites`` entry names the
    URL's host (or a domain above it, with its port when the entry has one); the most specific
    entry (the longest) wins."""

    default: TrailingSlash = TrailingSlash.keep
    sites: tuple[tuple[HostEntry, TrailingSlash], ...] = field(default=())

    @classmethod
    def of(cls, default: TrailingSlash, sites: dict[str, TrailingSlash]) -> SlashRules:
        """The rules of a spec (``sites``' keys as ``config.hosts.parse_entry`` reads them)."""
        entries = sorted(((parse_entry(host), rule) for host, rule in sites.items()), key=lambda e: -len(str(e[0])))
        return cls(TrailingSlash(default), tuple(entries))

    def rule(self, host: str, port: int | None) -> TrailingSlash:
        return next((rule for entry, rule in self.sites if entry.matches(host, port)), self.default)


KEEP_SLASHES = SlashRules()


def slashed(path: str, rule: TrailingSlash) -> str:
    """``path`` spelt by ``rule`` (never an empty path: the root is ``/`` whatever the rule)."""
    if rule is TrailingSlash.strip:
        return path.rstrip("/") or "/"
    if rule is TrailingSlash.add:
        base = path.rstrip("/")
        return base + "/" if path.endswith("/") or "." not in base.rsplit("/", 1)[-1] else path
    return path or "/"


def _tracked(name: str, tracking: Iterable[str]) -> bool:
    lowered = name.lower()
    return any(lowered.startswith(t[:-1]) if t.endswith("*") else lowered == t for t in tracking)


def normalise(url: str, tracking: Iterable[str] = DEFAULT_TRACKING, slashes: SlashRules = KEEP_SLASHES) -> str | None:
    """The one spelling of an http(s) URL; None for anything else (mailto:, javascript:, bad URLs)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    tracking = tuple(tracking)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _tracked(k, tracking))
    rule = slashes.rule(host, DEFAULT_PORTS[scheme] if port is None else port) if slashes.sites else slashes.default
    path = slashed(parts.path or "/", rule)
    return urlunsplit((scheme, netloc, path, urlencode(query), ""))


MAX_PATTERN = 300  # characters of a pattern kept (a longer one is cut: its URLs share the cap of its start)
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}-\d{1,2}-\d{4}")
_ID = re.compile(r"^(?=[^/]*\d)[0-9a-f]{8,}$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$|"
                 r"^(?=[^/]*\d)(?=[^/]*[a-z])[a-z0-9_-]{16,}$", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


def _segment(segment: str) -> str:
    """One path segment's shape: an id (hex, a UUID, a long token of letters and digits) is ``{id}``,
    a date ``{date}``, any other run of digits ``{n}``."""
    if _ID.match(segment):
        return "{id}"
    return _DIGITS.sub("{n}", _DATE.sub("{date}", segment))


def pattern(url: str) -> str:
    """The shape of a normalised URL, which a crawler trap repeats: its host, its path with digit runs,
    hex or token ids and dates replaced, its query's keys sorted without their values (``;`` path
    parameters, where session ids hide, count as the query's). ``http://h/calendar/2026/1?day=3`` and
    ``http://h/calendar/1999/12?day=30`` are both ``h/calendar/{n}/{n}?day``."""
    parts = urlsplit(url)
    path, _, params = parts.path.partition(";")
    keys = sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}
                  | {p.partition("=")[0] for p in params.split(";") if p})
    shape = "/".join(_segment(s) for s in path.split("/"))
    return f"{parts.netloc}{shape}{'?' + '&'.join(keys) if keys else ''}"[:MAX_PATTERN]


@dataclass(frozen=True)
class Skip:
    """Why a discovered URL is not visited (the reasons a crawl's progress counts)."""

    scope: str = "scope"  # another site, a denied domain, or not matched by include / matched by exclude
    depth: str = "depth"  # deeper than max_depth
    robots: str = "robots"  # the site's robots.txt disallows it
    dedup: str = "dedup"  # visited (or queued) already under this spelling
    budget: str = "budget"  # max_pages reached, max_duration over, or the crawl was cancelled
    lastmod: str = "lastmod"  # a sitemap page its sitemap says last changed before sitemap_modified_since
    quota: str = "quota"  # the crawl's tenant was over its queued or daily jobs quota (not marked seen)
    trap: str = "trap"  # its pattern had max_pages_per_pattern pages queued already (a crawler trap)
    follow: str = "follow"  # the crawl's follow model scored it below follow_min_score (not marked seen)


SKIP = Skip()
