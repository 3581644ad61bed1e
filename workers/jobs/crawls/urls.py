"""One spelling per page (``normalise``), and why a found URL is not visited (``SKIP``).

A crawl visits each page once, so two spellings of one page must count once: the scheme and host
are lower-cased, default ports dropped, the fragment dropped (it never reaches the server), the
query's parameters sorted and the tracking parameters (``utm_*``, ``gclid``, ... or the crawl's own
list) dropped, and an empty path is ``/``. Pure: no I/O, and light enough for the client to load.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DEFAULT_TRACKING = (
    "utm_*", "gclid", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "_gl",
    "yclid", "igshid", "ref_src",
)
"""Query parameters that name how a visitor arrived, not what the page shows (``*``: a prefix)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def _tracked(name: str, tracking: Iterable[str]) -> bool:
    lowered = name.lower()
    return any(lowered.startswith(t[:-1]) if t.endswith("*") else lowered == t for t in tracking)


def normalise(url: str, tracking: Iterable[str] = DEFAULT_TRACKING) -> str | None:
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
    return urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), ""))


@dataclass(frozen=True)
class Skip:
    """Why a discovered URL is not visited (the reasons a crawl's progress counts)."""

    scope: str = "scope"  # another site, a denied domain, or not matched by include / matched by exclude
    depth: str = "depth"  # deeper than max_depth
    robots: str = "robots"  # the site's robots.txt disallows it
    dedup: str = "dedup"  # visited (or queued) already under this spelling
    budget: str = "budget"  # max_pages reached, max_duration over, or the crawl was cancelled
    quota: str = "quota"  # the crawl's tenant was over its queued or daily jobs quota (not marked seen)
    follow: str = "follow"  # the crawl's follow model scored it below follow_min_score (not marked seen)


SKIP = Skip()
