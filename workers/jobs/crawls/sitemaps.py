"""Sitemaps as the protocol (sitemaps.org) writes them: a ``<urlset>`` of pages, or a
``<sitemapindex>`` of more sitemaps; either may be gzip-compressed; robots.txt names them with
``Sitemap:`` lines. Pure: the fetching is the worker's (through the job's egress gate).

A sitemap is read with bounds, because it comes from the site: at most ``MAX_BYTES`` once
decompressed (the protocol's own 50 MB limit; a gzip bomb stops there), at most ``MAX_URLS``
entries, and a DTD is refused (no entity can expand).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from xml.etree.ElementTree import ParseError, XMLPullParser

from workers.jobs.errors import JobsError

MAX_BYTES = 50 * 1024 * 1024  # decompressed bytes read at most (sitemaps.org: 50 MB)
MAX_URLS = 50_000  # entries read at most from one sitemap (sitemaps.org: 50,000)
GZIP_MAGIC = b"\x1f\x8b"
MAX_LASTMOD = 64  # characters of a lastmod read at most (a W3C datetime is about 30)
YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


class SitemapError(JobsError, ValueError):
    """A sitemap that cannot be read (not XML, a DTD, a broken gzip stream)."""


@dataclass(frozen=True)
class SitemapEntry:
    loc: str
    lastmod: str | None = None


@dataclass
class Sitemap:
    """What one sitemap lists: pages (a urlset) or further sitemaps (an index)."""

    pages: list[SitemapEntry] = field(default_factory=list)
    sitemaps: list[SitemapEntry] = field(default_factory=list)
    truncated: bool = False  # more than MAX_URLS entries or MAX_BYTES bytes: the rest was not read


def decompressed(body: bytes) -> bytes:
    """The XML of a sitemap body, gunzipped if it is gzip (by its magic bytes, not its name), at most MAX_BYTES."""
    if not body.startswith(GZIP_MAGIC):
        return body[:MAX_BYTES]
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(body)) as stream:
            return stream.read(MAX_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise SitemapError(f"broken gzip stream: {exc}") from None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_sitemap(body: bytes) -> Sitemap:
    """The entries of a sitemap or sitemap index (gzip or not); ``SitemapError`` if it is not one."""
    xml = decompressed(body)
    if b"<!DOCTYPE" in xml[:4096].upper() or b"<!ENTITY" in xml.upper():
        raise SitemapError("a sitemap with a DTD is refused")
    out = Sitemap(truncated=len(xml) >= MAX_BYTES)
    parser = XMLPullParser(events=("end",))
    try:
        parser.feed(xml)
        parser.close()
    except ParseError as exc:
        if not out.truncated:
            raise SitemapError(f"not XML: {exc}") from None
    for _, element in parser.read_events():
        kind = _local(element.tag)
        if kind not in ("url", "sitemap"):
            continue
        values = {_local(child.tag): (child.text or "").strip() for child in element}
        if values.get("loc"):
            entry = SitemapEntry(values["loc"], values.get("lastmod") or None)
            (out.pages if kind == "url" else out.sitemaps).append(entry)
        if len(out.pages) + len(out.sitemaps) >= MAX_URLS:
            out.truncated = True
            break
    return out


def lastmod_time(text: str | None) -> datetime | None:
    """A sitemap's ``lastmod`` (a W3C datetime: ``2026``, ``2026-11``, ``2026-11-01``,
    ``2026-11-01T10:30:00+02:00``, ``...Z``, fractions too) as an instant in UTC; a date is its
    first moment, a time with no zone is UTC. None for anything else (the site wrote nonsense:
    the page is then taken as having no lastmod)."""
    value = (text or "").strip()
    if not value or len(value) > MAX_LASTMOD:
        return None
    short = YEAR_MONTH.fullmatch(value)
    try:
        when = (datetime(int(short[1]), int(short[2] or 1), 1) if short
                else datetime.fromisoformat(value.replace("z", "Z")))
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):  # not a date, or past year 9999 once in UTC
        return None


def robots_sitemaps(robots_body: str) -> list[str]:
    """The ``Sitemap:`` lines of a robots.txt (they apply to every user agent, RFC 9309 §2.3.3)."""
    found = []
    for line in robots_body.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "sitemap" and value.strip():
            found.append(value.split("#", 1)[0].strip())
    return found
