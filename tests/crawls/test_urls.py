"""URL normalisation and crawl scope: two spellings of one page count once; a crawl stays on its site."""

from __future__ import annotations

import pytest

from workers.jobs.crawls.scope import Scope, check_pattern
from workers.jobs.crawls.urls import normalise


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
