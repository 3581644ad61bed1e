"""The URL policy, and its enforcement on every request a page makes (not only on go_to_url)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.support.jobs import run_job
from workers.agent import UrlPolicy
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus


@pytest.mark.parametrize("url, reason", [
    ("chrome://settings", "scheme chrome: is never allowed"),
    ("file:///etc/passwd", "scheme file: is never allowed"),
    ("javascript:alert(1)", "scheme javascript: is never allowed"),
    ("data:text/html,<b>x</b>", "scheme data: is never allowed"),
    ("view-source:http://example.com", "scheme view-source: is never allowed"),
    ("ftp://example.com/", "scheme ftp: is not allowed"),
    ("https://evil.test/x", "domain not allowed: evil.test is on the job's denied_domains (evil.test); open it by "
     "dropping --deny evil.test (job field denied_domains)"),
    ("https://api.evil.test/x", "domain not allowed: api.evil.test is on the job's denied_domains (evil.test); open "
     "it by dropping --deny evil.test (job field denied_domains)"),
    ("https://shop.example.com:8443/cart", "domain not allowed: shop.example.com is on the operator's "
     "BROWSERD_DENIED_DOMAINS (example.com:8443); no job can open it"),
    ("https://other.org/", "domain not allowed: other.org is not on the job's allowed_domains; open it with "
     "--allow other.org (job field allowed_domains)"),
    ("about:blank", None),
    ("https://example.com/a", None),
    ("https://www.example.com/a", None),
    ("http://127.0.0.1:8000/", None),
])
def test_policy(url, reason):
    policy = UrlPolicy.build(job_allowed=["example.com", "127.0.0.1", "*.evil.test"],
                             job_denied=["evil.test"], global_denied=["example.com:8443"])
    assert policy.refusal(url) == reason


def test_job_and_global_allow_lists_must_both_pass():
    policy = UrlPolicy.build(job_allowed=["a.example.com"], global_allowed=["example.com"])
    assert policy.refusal("https://a.example.com/") is None
    assert policy.refusal("https://b.example.com/") == ("domain not allowed: b.example.com is not on the job's "
                                                         "allowed_domains; open it with --allow b.example.com "
                                                         "(job field allowed_domains)")
    assert UrlPolicy.build(global_allowed=["example.com"]).refusal("https://x.org/") == (
        "domain not allowed: x.org is not on the operator's BROWSERD_ALLOWED_DOMAINS; no job can open it (the "
        "operator can add it there)")


async def test_page_fetch_and_iframe_to_a_denied_domain_never_reach_it(pool, site, denied_site):
    target = quote(denied_site.url("agent/secret.html"), safe="")
    page = site.url(f"agent/firewall.html?fetch=1&frame=1&target={target}")
    spec = JobSpec(denied_domains=["localhost"], script=[
        {"go_to_url": {"url": page}},
        {"wait": {"seconds": 0.5}},
        {"extract_fields": {"fields": {"fetch": "#fetch"}}},
    ])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.succeeded, result.error
    assert result.data["fetch"].startswith("fetch failed")
    assert denied_site.paths == []
    notes = " ".join(a.result or "" for s in result.steps for a in s.actions)
    assert "secret.html?via=fetch: domain not allowed" in notes
    assert "blocked Document to http://localhost" in notes and "secret.html?via=frame: domain not allowed" in notes


async def test_without_a_deny_list_the_same_page_reaches_the_other_domain(pool, site, denied_site):
    target = quote(denied_site.url("agent/secret.html"), safe="")
    spec = JobSpec(script=[
        {"go_to_url": {"url": site.url(f"agent/firewall.html?fetch=1&target={target}")}},
        {"wait": {"seconds": 0.5}},
        {"extract_fields": {"fields": {"fetch": "#fetch"}}},
    ])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.data == {"fetch": "fetch succeeded"}
    assert denied_site.paths == ["/agent/secret.html?via=fetch"]


async def test_start_url_on_a_denied_domain_fails_the_job_at_once(pool, denied_site):
    spec = JobSpec(start_url=denied_site.url("agent/secret.html"), allowed_domains=["127.0.0.1"],
                   script=[{"done": {"text": "never"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert result.steps == [] and denied_site.paths == []
