"""Which pages a crawl may visit (``Scope``), with RE2 include/exclude patterns.

RE2 matches in linear time: a pattern a user submits cannot make a worker backtrack for ever on a
hostile URL. Server side only (the client does not load ``re2``): ``check_pattern`` runs at
submission (``lifecycle.crawling.check_crawl``).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import re2

from config.messages import re2_reason
from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.politeness.domains import registrable_domain, url_domain


class Scope:
    """Which normalised URLs a crawl may visit: its sites' registrable domains (the start URLs' and
    sitemaps', unless ``allowed_domains`` name others), never a denied domain, and, when given, only
    URLs an include pattern matches and none an exclude pattern matches (RE2, searched anywhere)."""

    def __init__(self, sites: Iterable[str], *, include: Iterable[str] = (), exclude: Iterable[str] = (),
                 allowed_domains: Iterable[str] = (), denied_domains: Iterable[str] = ()) -> None:
        self.sites = {registrable_domain(s) for s in sites}
        self.allowed = list(allowed_domains)
        self.denied = list(denied_domains)
        self.include = [re2.compile(p) for p in include]
        self.exclude = [re2.compile(p) for p in exclude]

    def admits(self, url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        domain = url_domain(url)
        if domain is None or any(_under(host, d) for d in self.denied):
            return False
        if self.allowed:
            if not any(_under(host, d) for d in self.allowed):
                return False
        elif domain not in self.sites:
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)


def _under(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def check_pattern(pattern: str) -> str:
    """An include/exclude pattern RE2 compiles (ValueError otherwise: a 422 naming the field)."""
    try:
        re2.compile(pattern)
    except re2.error as exc:
        raise ValueError(f"not an RE2 pattern: {re2_reason(exc)}") from None
    return pattern


def scope_of(spec: CrawlSpec) -> Scope:
    """The pages a crawl may visit: its start sites' and sitemaps' registrable domains by default."""
    hosts = [urlsplit(u).hostname or "" for u in [*spec.seeds(), *(str(s) for s in spec.sitemaps)]]
    return Scope(hosts, include=spec.include, exclude=spec.exclude, allowed_domains=spec.allowed_domains,
                 denied_domains=spec.denied_domains)
