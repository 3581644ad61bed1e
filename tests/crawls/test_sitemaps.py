"""Sitemaps as sites serve them: urlsets, indexes, gzip, robots.txt Sitemap lines, and hostile ones."""

from __future__ import annotations

import gzip

import pytest
from pydantic import ValidationError

from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.crawls.sitemaps import MAX_BYTES, SitemapError, lastmod_time, parse_sitemap, robots_sitemaps
from workers.jobs.politeness.robots import RobotsFile

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> bytes:
    body = "".join(f"<url><loc> {loc} </loc><lastmod>2026-01-0{i % 9 + 1}</lastmod></url>" for i, loc in enumerate(locs))
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{body}</urlset>'.encode()


def test_a_urlset_lists_its_pages_with_lastmod() -> None:
    found = parse_sitemap(urlset("http://s.example/a", "http://s.example/b"))
    assert [(e.loc, e.lastmod) for e in found.pages] == [("http://s.example/a", "2026-01-01"),
                                                        ("http://s.example/b", "2026-01-02")]
    assert found.sitemaps == [] and not found.truncated


def test_an_index_lists_sitemaps_and_gzip_is_read_by_its_bytes() -> None:
    index = f"<sitemapindex {NS}><sitemap><loc>http://s.example/one.xml.gz</loc></sitemap>" \
            f"<sitemap><loc>http://s.example/two.xml</loc></sitemap></sitemapindex>"
    found = parse_sitemap(gzip.compress(index.encode()))
    assert [e.loc for e in found.sitemaps] == ["http://s.example/one.xml.gz", "http://s.example/two.xml"]
    assert found.pages == []


def test_robots_txt_names_sitemaps() -> None:
    body = "User-agent: *\nDisallow: /private/\nSitemap: http://s.example/sitemap.xml # main\nsitemap:http://s.example/b.xml\n"
    assert robots_sitemaps(body) == ["http://s.example/sitemap.xml", "http://s.example/b.xml"]


def test_hostile_sitemaps_are_refused_or_bounded() -> None:
    with pytest.raises(SitemapError, match="DTD"):
        parse_sitemap(b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><urlset><url><loc>&a;</loc></url></urlset>')
    with pytest.raises(SitemapError, match="not XML"):
        parse_sitemap(b"<html><body>not a sitemap")
    with pytest.raises(SitemapError, match="gzip"):
        parse_sitemap(b"\x1f\x8b\x08\x00garbage")
    bomb = gzip.compress(b"<urlset>" + b" " * (MAX_BYTES + 1000) + b"</urlset>")  # a small body that inflates
    assert parse_sitemap(bomb).truncated


def test_crawl_delay_is_read_per_user_agent() -> None:
    robots = RobotsFile(200, "User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n\nUser-agent: slowbot\nCrawl-delay: 9\n")
    assert robots.crawl_delay("browserd") == 2.0
    assert robots.crawl_delay("slowbot") == 9.0
    assert RobotsFile(200, "User-agent: *\nCrawl-delay: 999999\n").crawl_delay("x") == 3600.0
    assert RobotsFile(404).crawl_delay("x") == 0.0 and RobotsFile(200, "User-agent: *\n").crawl_delay("x") == 0.0


def test_a_fractional_crawl_delay_is_read_in_seconds_per_user_agent() -> None:
    body = ("User-agent: *\nCrawl-delay: 0.5  # half a second\nDisallow: /private/\n\n"
            "User-agent: slowbot\nCrawl-delay: 2.25\nDisallow: /x\n\nUser-agent: fastbot\nCrawl-delay: .1\n")
    robots = RobotsFile(200, body)
    assert robots.crawl_delay("browserd") == 0.5
    assert robots.crawl_delay("slowbot/1.0") == 2.25 and robots.crawl_delay("fastbot") == 0.1
    assert robots.refusal("http://x.test/private/a", "browserd") is not None  # the rules are read as before
    assert robots.refusal("http://x.test/x", "slowbot") is not None and robots.refusal("http://x.test/x", "b") is None
    # hostile or unreadable values: no delay, never a crash nor a negative or endless one
    for value in ("-1", "abc", "nan", "inf", "-inf", "1e400", "0x10", "", "1,5"):
        delay = RobotsFile(200, f"User-agent: *\nCrawl-delay: {value}\n").crawl_delay("x")
        assert 0.0 <= delay <= 3600.0, (value, delay)
    assert RobotsFile(200, "User-agent: *\nCrawl-delay: 1e400\n").crawl_delay("x") == 0.0
    assert RobotsFile(200, "User-agent: *\nCrawl-delay: 1e9\n").crawl_delay("x") == 3600.0
    assert RobotsFile(200, "User-agent: *\nCrawl-delay: 0.0004\n").crawl_delay("x") == 0.0  # under a millisecond


@pytest.mark.parametrize(("written", "instant"), [
    ("2026", "2026-01-01T00:00:00+00:00"), ("2026-11", "2026-11-01T00:00:00+00:00"),
    ("2026-11-01", "2026-11-01T00:00:00+00:00"), (" 2026-11-01T10:30Z ", "2026-11-01T10:30:00+00:00"),
    ("2026-11-01T10:30:00+02:00", "2026-11-01T08:30:00+00:00"), ("2026-11-01T10:30:00.5z", "2026-11-01T10:30:00.500000+00:00"),
    ("2026-11-01T10:30:00", "2026-11-01T10:30:00+00:00"),  # no zone: UTC
])
def test_a_lastmod_is_read_as_an_instant_in_utc(written: str, instant: str) -> None:
    when = lastmod_time(written)
    assert when is not None and when.isoformat() == instant


@pytest.mark.parametrize("written", [None, "", "yesterday", "2026-13-01", "2026-02-30", "2026-11-01T25:00",
                                     "9999-12-31T23:59:59-12:00", "0001-01-01T00:00+01:00", "1" * 10_000,
                                     "<script>", "2026-11-01\x00"])
def test_a_lastmod_that_is_no_date_is_no_lastmod(written: str | None) -> None:
    assert lastmod_time(written) is None


def test_sitemap_modified_since_takes_an_iso_date_or_datetime_in_utc() -> None:
    def since(value: object) -> object:
        return CrawlSpec.model_validate({"start_urls": ["http://s.example/"],
                                         "sitemap_modified_since": value}).sitemap_modified_since
    assert since("2026-10-15").isoformat() == "2026-10-15T00:00:00+00:00"
    assert since("2026-10-15T01:00:00+02:00").isoformat() == "2026-10-14T23:00:00+00:00"
    assert since(None) is None
    for bad in ("yesterday", 1700000000, "2026-02-30", [], "x" * 100):
        with pytest.raises(ValidationError) as caught:
            since(bad)
        assert caught.value.errors()[0]["loc"] == ("sitemap_modified_since",)
