"""Which site a URL belongs to: its **registrable domain**, the unit politeness limits count in.

``www.shop.example.co.uk`` and ``img.shop.example.co.uk`` are one site, ``shop.example.co.uk``,
found with the public suffix list that ``publicsuffixlist`` ships inside its package: nothing is
downloaded at run time, so a worker without internet (or a site that serves a poisoned list)
cannot change what counts as one site. Private suffixes count too (``a.github.io`` and
``b.github.io`` are different sites). An IP address, ``localhost`` and any other name with no
known suffix is its own domain.

A job's domain (the one its concurrency slot is taken on) is its ``start_url``'s, else the first
URL its script opens; a job with neither (an agent that starts on a blank page and picks its own
sites) takes no slot, and its navigations are still spaced by the delay.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from config.hosts import canonical_host, parse_address

NAVIGATING_ACTIONS = ("go_to_url", "open_tab")  # script actions whose ``url`` names the page they open

_PSL = PublicSuffixList()  # the bundled list (only_icann=False: private suffixes such as github.io count)


def registrable_domain(host: str) -> str:
    """The site ``host`` belongs to: its registrable domain, or the host itself (IP, localhost, a suffix)."""
    name = canonical_host(host)  # one spelling (config.hosts): EXAMPLE.com. and 2130706433 count once
    if parse_address(name) is not None:
        return name
    return _PSL.privatesuffix(name) or name


def url_domain(url: str) -> str | None:
    """The registrable domain of an http(s) URL's host; None for anything else (about:blank, data:)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return registrable_domain(parts.hostname)


def job_domain(start_url: str | None, script: list[dict[str, Any]] | None) -> str | None:
    """The domain a job is on: its start URL's, else the first page its script opens."""
    if start_url:
        return url_domain(start_url)
    for action in script or []:
        for name in NAVIGATING_ACTIONS:
            params = action.get(name)
            if isinstance(params, dict) and isinstance(params.get("url"), str):
                return url_domain(params["url"])
    return None
