"""The console's crawl pages (the app in process, a real redis-server, no worker: pages stay queued):
the Crawls list (newest first, state and counters; a tenant's own only, the admin's all with the
tenant named), a crawl's page (progress counters refreshed by htmx, links skipped by reason, its
results lines a page at a time, cancel with the CSRF token), a crawl schedule's runs linked to
their crawls; another tenant's crawl id and a malformed one are 404 pages, and text a crawled site
controls (final URLs, parents, sitemap errors) is escaped."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from bench.tenancy import deployed
from config import load_settings
from tests.frontends.tenancy import ADMIN, tenant
from workers.jobs.crawls.store import CrawlStore, FoundURL
from workers.jobs.lifecycle.crawling import grow
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys

SHOP = {"start_urls": ["https://shop.example/"], "max_pages": 200, "allowed_domains": ["shop.example"]}
HOSTILE = '"><script>alert("crawled")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def stack() -> Iterator[tuple[TestClient, str]]:
    with deployed() as (c, url):  # RedBeat pointed at its Redis: crawl schedules can be made
        yield c, url


def started(api: TestClient, headers: dict[str, str], **spec: Any) -> dict[str, Any]:
    answer = api.post("/v1/crawls", json={**SHOP, **spec}, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def sign_in(c: TestClient, token: str) -> str:
    """A fresh console session with ``token``; the CSRF token of its pages."""
    c.cookies.clear()
    answer = c.post("/ui/login", data={"token": token, "next": "/ui/"})
    assert answer.status_code == 303, answer.text
    return re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/ui/submit").text).group(1)


def key_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def on_store(redis_url: str, work: Any) -> Any:
    async def go() -> Any:
        redis = connect(redis_url)
        try:
            return await work(CrawlStore(JobStore(redis, result_ttl=3600, keys=Keys())))
        finally:
            await redis.aclose()
    return asyncio.run(go())


def test_a_tenant_sees_its_own_crawls_and_the_admin_all(stack: tuple[TestClient, str]) -> None:
    api, _ = stack
    a, b = tenant(api, "acme"), tenant(api, "beta")
    theirs = started(api, a, start_urls=["https://shop.example/acme-only"])
    operator = started(api, {}, start_urls=["https://shop.example/operator-only"])
    mine = started(api, b, start_urls=["https://shop.example/beta-only"])
    csrf = sign_in(api, key_of(b))
    listing = api.get("/ui/crawls")
    assert listing.status_code == 200 and mine["id"] in listing.text and "beta-only" in listing.text
    assert "/ui/crawls" in api.get("/ui/").text  # the nav links it
    for other in (theirs, operator):
        assert other["id"] not in listing.text
        for path in (f"/ui/crawls/{other['id']}", f"/ui/crawls/{other['id']}/summary",
                     f"/ui/crawls/{other['id']}/results", f"/ui/crawls/{other['id']}?offset=50"):
            page = api.get(path)
            assert page.status_code == 404, (path, page.status_code)
            assert "acme" not in page.text and "only" not in page.text.replace(other["id"], ""), path
        refused = api.post(f"/ui/crawls/{other['id']}/cancel", data={"csrf": csrf})
        assert refused.status_code == 404
    assert api.get(f"/v1/crawls/{theirs['id']}").json()["state"] == "running"  # A's untouched
    own = api.get(f"/ui/crawls/{mine['id']}")
    assert own.status_code == 200 and "beta-only" in own.text and 'id="crawl-tenant"' not in own.text
    # the admin sees all three, newest first, each with its tenant
    sign_in(api, ADMIN)
    listing = api.get("/ui/crawls").text
    ids = re.findall(r'data-crawl="([0-9a-f]{32})"', listing)
    assert ids == [mine["id"], operator["id"], theirs["id"]]
    assert "acme" in listing and "beta" in listing and "(operator)" in listing
    assert 'id="crawl-tenant">acme<' in api.get(f"/ui/crawls/{theirs['id']}").text


def test_a_crawl_page_shows_progress_skips_lines_and_cancels(stack: tuple[TestClient, str]) -> None:
    api, redis_url = stack
    crawl = started(api, {})
    cid = crawl["id"]
    found = [FoundURL(f"https://shop.example/p{i}", 1, "https://shop.example/") for i in range(60)]
    on_store(redis_url, lambda crawls: grow(crawls, cid, found, load_settings(
        redis_url=redis_url, allowed_networks="127.0.0.1/32")))

    async def skipped(crawls: CrawlStore) -> None:
        await crawls.count_skips(cid, {"robots": 3, "dedup": 7})
    on_store(redis_url, skipped)
    csrf = sign_in(api, ADMIN)
    page = api.get(f"/ui/crawls/{cid}")
    assert page.status_code == 200
    text = page.text
    assert f'hx-get="/ui/crawls/{cid}/summary"' in text and 'hx-trigger="every 2s"' in text
    assert re.search(r'data-counter="queued">61<', text) and re.search(r'data-counter="discovered">61<', text)
    assert 'data-skipped="robots">3<' in text and 'data-skipped="dedup">7<' in text
    assert len(re.findall(r"<tr data-job=", text)) == 50 and 'id="lines-next"' in text
    assert 'id="lines-previous"' not in text
    second = api.get(f"/ui/crawls/{cid}?offset=50").text
    assert len(re.findall(r"<tr data-job=", second)) == 11 and 'id="lines-previous"' in second
    assert 'id="lines-next"' not in second and "https://shop.example/p59" in second
    assert api.get(f"/ui/crawls/{cid}?offset=-1").status_code == 422
    assert api.get(f"/ui/crawls/{cid}?offset=5000").status_code == 200  # past the end: no lines, no error
    assert len(api.get(f"/ui/crawls/{cid}/results").text.splitlines()) == 61
    summary = api.get(f"/ui/crawls/{cid}/summary")
    assert summary.status_code == 200 and 'id="crawl-summary"' in summary.text and "<html" not in summary.text
    # cancel: without the CSRF token refused, with it the crawl's batch is cancelled
    assert api.post(f"/ui/crawls/{cid}/cancel", data={}).status_code in (403, 422)
    assert api.get(f"/v1/crawls/{cid}").json()["state"] == "running"
    done = api.post(f"/ui/crawls/{cid}/cancel", data={"csrf": csrf})
    assert done.status_code == 303 and done.headers["location"] == f"/ui/crawls/{cid}"
    after = api.get(f"/v1/crawls/{cid}").json()
    assert after["state"] in ("cancelling", "completed") and after["counts"]["cancelled"] == 61
    assert 'id="cancel-crawl"' not in api.get(f"/ui/crawls/{cid}").text


@pytest.mark.parametrize("bad", ["nope", "0" * 32, "..%2Fbatches", "A" * 32, "%3Cscript%3E"])
def test_a_bad_or_unknown_crawl_id_is_a_404_page(stack: tuple[TestClient, str], bad: str) -> None:
    api, _ = stack
    csrf = sign_in(api, ADMIN)
    for path in (f"/ui/crawls/{bad}", f"/ui/crawls/{bad}/summary", f"/ui/crawls/{bad}/results"):
        page = api.get(path)
        assert page.status_code == 404, (path, page.status_code)
        assert "<script>" not in page.text
    assert api.post(f"/ui/crawls/{bad}/cancel", data={"csrf": csrf}).status_code == 404
    opened = api.get(f"/ui/crawls/open?id={bad}")
    assert opened.status_code == 303 and "<" not in opened.headers["location"]


def test_text_the_site_controls_is_escaped(stack: tuple[TestClient, str]) -> None:
    api, redis_url = stack
    crawl = started(api, {})
    cid = crawl["id"]

    async def hostile(crawls: CrawlStore) -> None:
        job_id = next(iter(await crawls.redis.hgetall(crawls.keys.crawl_pages(cid))))
        await crawls.note_page(cid, job_id, final_url="https://shop.example/" + HOSTILE, canonical=HOSTILE)
        await crawls.note_sitemaps(cid, 2, [f"https://shop.example/sitemap.xml: {HOSTILE}"])
    on_store(redis_url, hostile)
    on_store(redis_url, lambda crawls: grow(crawls, cid, [FoundURL("https://shop.example/x", 1, HOSTILE)],
                                            load_settings(redis_url=redis_url, allowed_networks="127.0.0.1/32")))
    sign_in(api, ADMIN)
    for path in (f"/ui/crawls/{cid}", f"/ui/crawls/{cid}/summary", "/ui/crawls"):
        text = api.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text, path
    page = api.get(f"/ui/crawls/{cid}").text
    assert "&lt;script&gt;alert(" in page  # shown, escaped (the final URL, the parent, the sitemap error)


def test_a_crawl_schedules_runs_link_their_crawls(stack: tuple[TestClient, str]) -> None:
    api, _ = stack
    a = tenant(api, "acme")
    schedule = api.post("/v1/schedules", json={"every": 3600, "crawl": SHOP}, headers=a)
    assert schedule.status_code == 201, schedule.text
    sid = schedule.json()["id"]
    csrf = sign_in(api, key_of(a))
    ran = api.post(f"/ui/schedules/{sid}/run", data={"csrf": csrf})
    assert ran.status_code == 303 and ran.headers["location"].startswith("/ui/crawls/"), ran.headers
    cid = ran.headers["location"].rsplit("/", 1)[1]
    assert api.get(f"/v1/crawls/{cid}", headers=a).json()["tenant"] == "acme"
    page = api.get(f"/ui/schedules/{sid}").text
    assert f'class="run-crawl" href="/ui/crawls/{cid}"' in page
    assert api.get(f"/ui/crawls/{cid}").status_code == 200
    sign_in(api, key_of(tenant(api, "beta")))
    assert api.get(f"/ui/crawls/{cid}").status_code == 404


def test_a_crawls_traps_are_shown_escaped(stack: tuple[TestClient, str]) -> None:
    """The patterns that reached max_pages_per_pattern, with their skipped links: a site controls
    its URLs, so the patterns are shown escaped."""
    api, redis_url = stack
    cid = started(api, {}, max_pages_per_pattern=1)["id"]
    found = [FoundURL(f"https://shop.example/{HOSTILE}/{n}", 1, "https://shop.example/") for n in range(3)]
    on_store(redis_url, lambda crawls: grow(crawls, cid, found, load_settings(redis_url=redis_url)))
    record = api.get(f"/v1/crawls/{cid}").json()
    assert record["skipped"]["trap"] == 2 and record["traps"][0]["skipped"] == 2, record
    sign_in(api, ADMIN)
    for path in (f"/ui/crawls/{cid}", f"/ui/crawls/{cid}/summary"):
        text = api.get(path).text
        assert "Crawler traps" in text and 'data-skipped="trap">2<' in text, path
        assert "<script>alert" not in text and "&lt;script&gt;alert(" in text and "/{n}</td>" in text, path


def test_a_crawl_is_started_from_the_console_and_resumed_after_its_cancel(stack: tuple[TestClient, str]) -> None:
    """The Crawls page's start form makes the crawl POST /v1/crawls would (the session's tenant's,
    checked the same way); a cancelled crawl keeps its frontier and its page resumes it."""
    api, _ = stack
    a, b = tenant(api, "acme"), tenant(api, "beta")
    csrf = sign_in(api, key_of(a))
    assert 'id="start-crawl"' in api.get("/ui/crawls").text
    form = {"csrf": csrf, "start_urls": "https://shop.example/\nhttps://shop.example/sale", "max_depth": "2",
            "max_pages": "40", "spec": '{"allowed_domains": ["shop.example"], "include": ["/"]}'}
    assert api.post("/ui/crawls", data={k: v for k, v in form.items() if k != "csrf"}).status_code in (403, 422)
    made = api.post("/ui/crawls", data=form)
    assert made.status_code == 303 and made.headers["location"].startswith("/ui/crawls/"), made.text
    cid = made.headers["location"].rsplit("/", 1)[1]
    record = api.get(f"/v1/crawls/{cid}", headers=a).json()
    assert record["tenant"] == "acme" and record["queued"] == 2, record
    assert (record["spec"]["max_depth"], record["spec"]["max_pages"], record["spec"]["include"]) == (2, 40, ["/"])
    assert api.get(f"/v1/crawls/{cid}", headers=b).status_code == 404  # another tenant's: unknown
    # bad input: a clear 422 page naming the field, nothing started
    for bad, named in (({"max_depth": "two"}, "max_depth"), ({"spec": "{"}, "spec: not JSON"),
                       ({"spec": "[1]"}, "spec:"), ({"start_urls": "ftp://x.example/"}, "start_urls"),
                       ({"max_pages": "0"}, "max_pages"), ({"spec": '{"recipe": "not-acmes"}'}, "recipe"),
                       ({"spec": '{"allowed_networks": ["0.0.0.0/0"]}'}, "allowed_networks"),
                       ({"start_urls": HOSTILE}, "start_urls")):
        page = api.post("/ui/crawls", data={**form, **bad})
        assert page.status_code == 422 and named in page.text, (bad, page.status_code, page.text[-400:])
        assert "<script>alert" not in page.text  # what the form was given is escaped
    assert len(api.get("/v1/crawls", headers=a).json()) == 1
    # cancel keeps the frontier (no worker: both pages were queued), the page resumes it
    assert api.post(f"/ui/crawls/{cid}/cancel", data={"csrf": csrf}).status_code == 303
    stopped = api.get(f"/v1/crawls/{cid}", headers=a).json()
    assert stopped["frontier"] == 2 and stopped["state"] == "completed", stopped
    page = api.get(f"/ui/crawls/{cid}").text
    assert 'id="resume-crawl"' in page and 'id="cancel-crawl"' not in page
    sign_in(api, key_of(b))
    assert api.post(f"/ui/crawls/{cid}/resume", data={"csrf": csrf}).status_code in (403, 404)
    csrf = sign_in(api, key_of(a))
    resumed = api.post(f"/ui/crawls/{cid}/resume", data={"csrf": csrf})
    assert resumed.status_code == 303 and resumed.headers["location"] == f"/ui/crawls/{cid}"
    again = api.get(f"/v1/crawls/{cid}", headers=a).json()
    assert again["state"] == "running" and again["frontier"] == 0 and again["resumed"] == 2, again
    twice = api.post(f"/ui/crawls/{cid}/resume", data={"csrf": csrf})
    assert twice.status_code == 409 and "not cancelled" in twice.text
