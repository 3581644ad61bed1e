"""A crawl's spec refuses at submission what its pages' jobs would refuse (no 500 from a page's job)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config import Settings
from daemon.cli.commands.crawl import spec_of
from daemon.cli.main import build_parser
from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.lifecycle.crawling import check_crawl
from workers.jobs.model.spec import MAX_LABELS


@pytest.mark.parametrize(("labels", "message"), [
    ({"": "x"}, "keys are 1-64 characters"),
    ({"k" * 65: "x"}, "keys are 1-64 characters"),
    ({"k": "v" * 257}, "values at most 256"),
    ({str(i): "v" for i in range(MAX_LABELS)}, f"at most {MAX_LABELS - 1} labels"),  # the crawl's id is one
])
def test_labels_a_page_job_would_refuse_are_refused_with_the_crawl(labels: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CrawlSpec(start_urls=["https://shop.example/"], labels=labels)


def test_the_most_labels_a_crawl_takes_still_make_a_page_job() -> None:
    spec = CrawlSpec(start_urls=["https://shop.example/"], labels={str(i): "v" for i in range(MAX_LABELS - 1)})
    check_crawl(spec, Settings(redis_url="redis://127.0.0.1:1/0"))  # no error: 19 + the crawl's id


def test_the_cli_crawl_flags_make_the_spec_and_refuse_a_bad_rule(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    args = parser.parse_args(["crawl", "https://shop.example/", "--trailing-slash", "strip", "--modified-since",
                              "2026-10-15", "--retry-blocked", "0", "--spec", '{"trailing_slash_sites": {"a.example": "add"}}'])
    spec = CrawlSpec.model_validate(spec_of(args))
    assert (spec.trailing_slash, spec.retry_blocked, spec.trailing_slash_sites) == ("strip", 0, {"a.example": "add"})
    assert spec.sitemap_modified_since is not None and spec.sitemap_modified_since.isoformat() == "2026-10-15T00:00:00+00:00"
    assert "retry_blocked" not in spec_of(parser.parse_args(["crawl", "https://shop.example/"]))  # the spec's default
    with pytest.raises(SystemExit):
        parser.parse_args(["crawl", "https://shop.example/", "--trailing-slash", "sideways"])
    assert "invalid choice" in capsys.readouterr().err
