"""Sitemaps as sites serve them: urlsets, indexes, gzip, robots.txt Sitemap lines, and hostile ones."""

from __future__ import annotations

import gzip

import pytest

from workers.jobs.crawls.sitemaps import MAX_BYTES, SitemapError, parse_sitemap, robots_sitemaps
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
