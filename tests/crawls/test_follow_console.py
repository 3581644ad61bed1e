"""The console's crawl page shows a crawl's follow text (escaped: the submitter wrote it, a tenant
may see it), its threshold, its fallbacks (``follow_errors``) and its links skipped ``follow``
(the app in process, a real redis-server, no worker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from bench.tenancy import deployed
from tests.frontends.tenancy import ADMIN
from tests.frontends.test_console_crawls import HOSTILE, SHOP, on_store, sign_in
from workers.jobs.crawls.store import CrawlStore


@pytest.fixture
def stack() -> Iterator[tuple[TestClient, str]]:
    with deployed() as (c, url):
        yield c, url


def test_a_crawls_follow_text_fallbacks_and_skips_are_shown_escaped(stack: tuple[TestClient, str]) -> None:
    api, redis_url = stack
    made = api.post("/v1/crawls", json={**SHOP, "follow": f"product pages {HOSTILE}", "follow_min_score": 7})
    assert made.status_code == 201, made.text
    cid = made.json()["id"]

    async def followed(crawls: CrawlStore) -> None:
        await crawls.count_skips(cid, {"follow": 4})
        await crawls.note_follow_error(cid)
    on_store(redis_url, followed)
    record = api.get(f"/v1/crawls/{cid}").json()
    assert record["skipped"]["follow"] == 4 and record["follow_errors"] == 1
    sign_in(api, ADMIN)
    summary = api.get(f"/ui/crawls/{cid}/summary").text
    assert 'data-skipped="follow">4<' in summary and 'id="crawl-follow"' in summary
    assert "score 7 or more; follow calls failed: 1," in summary
    assert "<script>alert" not in summary and "&lt;script&gt;alert(" in summary
    plain = api.post("/v1/crawls", json=SHOP).json()["id"]
    assert 'id="crawl-follow"' not in api.get(f"/ui/crawls/{plain}/summary").text  # no follow: not shown
