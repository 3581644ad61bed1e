"""URL normalisation and crawl scope: two spellings of one page count once; a crawl stays on its site."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.crawls.scope import Scope, check_pattern
from workers.jobs.crawls.urls import TrailingSlash, normalise


@pytest.mark.parametrize(("given", "expected"), [
    ("HTTP://Example.COM", "http://example.com/"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("https://example.com:8443/a", "https://example.com:8443/a"),
    ("http://example.com/a#section-2", "http://example.com/a"),
    ("http://example.com/a?b=2&a=1", "http://example.com/a?a=1&b=2"),
    ("http://example.com/a?utm_source=x&id=3&utm_medium=y&gclid=1&fbclid=2", "http://example.com/a?id=3"),
    ("http://example.com/a?UTM_Campaign=x", "http://example.com/a"),
    ("http://example.com./Path/Case", "http://example.com/Path/Case"),  # the path keeps its case
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
])
def test_spellings_of_one_page_normalise_to_one(given: str, expected: str) -> None:
    assert normalise(given) == expected


@pytest.mark.parametrize("given", ["mailto:a@b.example", "javascript:void(0)", "ftp://example.com/x",
                                   "http://", "http://example.com:99999/", "not a url"])
def test_what_is_not_a_web_page_has_no_spelling(given: str) -> None:
    assert normalise(given) is None


def test_the_tracking_list_is_the_crawls_own() -> None:
    assert normalise("http://e.example/?sid=4&utm_source=x", tracking=["sid"]) == "http://e.example/?utm_source=x"


def test_scope_is_the_registrable_domain_by_default() -> None:
    scope = Scope(["www.shop.example.co.uk"])
    assert scope.admits("https://img.shop.example.co.uk/a") and scope.admits("http://example.co.uk/")
    assert not scope.admits("https://other.co.uk/a")
    assert not scope.admits("mailto:x@shop.example.co.uk")


def test_scope_include_exclude_and_domains() -> None:
    scope = Scope(["127.0.0.1"], include=[r"/(docs|blog)/"], exclude=[r"\?print="])
    assert scope.admits("http://127.0.0.1:8000/docs/a")
    assert not scope.admits("http://127.0.0.1:8000/shop/a")
    assert not scope.admits("http://127.0.0.1:8000/docs/a?print=1")
    allowed = Scope(["a.example"], allowed_domains=["b.example"], denied_domains=["x.b.example"])
    assert allowed.admits("http://b.example/") and allowed.admits("http://y.b.example/")
    assert not allowed.admits("http://a.example/") and not allowed.admits("http://x.b.example/")


def test_a_pattern_re2_cannot_compile_is_refused() -> None:
    assert check_pattern(r"/docs/\d+") == r"/docs/\d+"
    with pytest.raises(ValueError, match="RE2"):
        check_pattern(r"(a)\1")  # a backreference: RE2 has none (no catastrophic backtracking)


def slash_spec(**fields: object) -> CrawlSpec:
    return CrawlSpec.model_validate({"start_urls": ["http://shop.example/"], **fields})


def test_trailing_slashes_are_kept_as_written_by_default() -> None:
    spec = slash_spec()
    assert spec.trailing_slash is TrailingSlash.keep
    assert spec.normalise("http://shop.example/a/") == "http://shop.example/a/" == normalise("http://shop.example/a/")
    assert spec.normalise("http://shop.example/a") == "http://shop.example/a"


@pytest.mark.parametrize(("rule", "given", "expected"), [
    ("strip", "http://shop.example/a/", "http://shop.example/a"),
    ("strip", "http://shop.example/a", "http://shop.example/a"),
    ("strip", "http://shop.example/a///?b=1#x", "http://shop.example/a?b=1"),
    ("strip", "http://shop.example/", "http://shop.example/"),  # the root is never stripped
    ("strip", "http://shop.example//", "http://shop.example/"),
    ("strip", "http://shop.example", "http://shop.example/"),
    ("add", "http://shop.example/a", "http://shop.example/a/"),
    ("add", "http://shop.example/a/", "http://shop.example/a/"),
    ("add", "http://shop.example/a///", "http://shop.example/a/"),
    ("add", "http://shop.example/a.b/", "http://shop.example/a.b/"),
    ("add", "http://shop.example/a?b=1", "http://shop.example/a/?b=1"),
    ("add", "http://shop.example/feed.xml", "http://shop.example/feed.xml"),  # a file name stays as it is
    ("add", "http://shop.example/v1.2/docs", "http://shop.example/v1.2/docs/"),
    ("add", "http://shop.example", "http://shop.example/"),
])
def test_a_trailing_slash_rule_spells_a_and_a_slash_as_one_page(rule: str, given: str, expected: str) -> None:
    assert slash_spec(trailing_slash=rule).normalise(given) == expected


def test_a_sites_own_rule_wins_over_the_crawls_and_the_most_specific_site_wins() -> None:
    spec = slash_spec(trailing_slash="strip", trailing_slash_sites={
        "Docs.Example.": "add", "api.docs.example": "keep", "127.0.0.1:8080": "add"})
    assert spec.trailing_slash_sites == {"docs.example": "add", "api.docs.example": "keep", "127.0.0.1:8080": "add"}
    assert spec.normalise("http://shop.example/a/") == "http://shop.example/a"
    assert spec.normalise("https://docs.example/a") == "https://docs.example/a/"
    assert spec.normalise("https://www.docs.example/a") == "https://www.docs.example/a/"  # a subdomain too
    assert spec.normalise("https://api.docs.example/a") == "https://api.docs.example/a"
    assert spec.normalise("https://api.docs.example/a/") == "https://api.docs.example/a/"
    assert spec.normalise("http://127.0.0.1:8080/a") == "http://127.0.0.1:8080/a/"
    assert spec.normalise("http://127.0.0.1:9090/a/") == "http://127.0.0.1:9090/a"  # another port: the default
    spec = slash_spec(trailing_slash_sites={"shop.example:443": "strip"})
    assert spec.normalise("https://shop.example/a/") == "https://shop.example/a"  # the scheme's default port
    assert spec.normalise("http://shop.example/a/") == "http://shop.example/a/"


@pytest.mark.parametrize("fields", [
    {"trailing_slash": "sideways"}, {"trailing_slash": None}, {"trailing_slash_sites": {"shop.example": "drop"}},
    {"trailing_slash_sites": {"http://shop.example/": "strip"}}, {"trailing_slash_sites": {"": "strip"}},
    {"trailing_slash_sites": {"a b": "strip"}}, {"trailing_slash_sites": ["shop.example"]},
    {"trailing_slash_sites": {f"s{n}.example": "strip" for n in range(101)}},
])
def test_a_bad_trailing_slash_rule_is_refused_naming_its_field(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as caught:
        slash_spec(**fields)
    assert caught.value.errors()[0]["loc"][0] == next(iter(fields))
