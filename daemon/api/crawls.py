"""``/v1/crawls``: start a crawl, follow its progress, cancel it, stream its pages' results.

Operator-only until crawls are owned by a tenant (``deps.admin_only``: 404 to a tenant's key)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from config import Settings
from daemon.api.batches import ndjson
from daemon.api.deps import ERRORS, Store, admin_only
from daemon.api.errors import ApiError, ErrorBody
from workers.jobs.crawls.models import CrawlRecord, CrawlSpec
from workers.jobs.crawls.store import CrawlStore
from workers.jobs.lifecycle.cancelling import cancel_batch
from workers.jobs.lifecycle.crawling import check_crawl, submit_crawl
from workers.jobs.specs.checks import check_webhook_url

router = APIRouter(prefix="/v1", dependencies=[Depends(admin_only)], responses=ERRORS, tags=["crawls"])


async def _get(crawls: CrawlStore, crawl_id: str) -> CrawlRecord:
    record = await crawls.get(crawl_id)
    if record is None:
        raise ApiError(404, "not_found", f"no crawl with id {crawl_id!r} (finished crawls are kept BROWSERD_RESULT_TTL)")
    return record


@router.post("/crawls", status_code=201, response_model=CrawlRecord,
             responses={503: {"model": ErrorBody, "description": "The broker is unreachable."}})
async def start_crawl(spec: CrawlSpec, request: Request, store: Store) -> CrawlRecord:
    """Start a crawl: its start URLs (and the sitemaps' pages) are queued; each page's links in scope
    are queued as it ends, each URL at most once, until max_depth, max_pages or max_duration."""
    settings: Settings = request.app.state.settings
    check_crawl(spec, settings)
    if spec.webhook_url is not None:
        check_webhook_url(str(spec.webhook_url), settings)
    return await submit_crawl(store, spec, settings)


@router.get("/crawls/{crawl_id}", response_model=CrawlRecord)
async def get_crawl(crawl_id: str, store: Store) -> CrawlRecord:
    """Progress: pages discovered, queued, visited, failed, and links skipped by reason."""
    return await _get(CrawlStore(store), crawl_id)


@router.post("/crawls/{crawl_id}/cancel", status_code=202, response_model=CrawlRecord)
async def cancel_crawl(crawl_id: str, store: Store) -> CrawlRecord:
    """Stop the crawl: no page is queued any more, queued pages never start, running ones stop."""
    crawls = CrawlStore(store)
    record = await _get(crawls, crawl_id)
    await cancel_batch(store, record.batch_id)
    return await _get(crawls, crawl_id)


@router.get("/crawls/{crawl_id}/results", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}},
                             "description": "One JSON object per page: url, depth, parent, status, data, "
                             "final_answer, error, category."}})
async def crawl_results(crawl_id: str, request: Request, store: Store) -> StreamingResponse:
    """Every page queued so far as JSON lines, in the order they were queued (unfinished ones show their state)."""
    crawls = CrawlStore(store)
    record = await _get(crawls, crawl_id)
    lines = crawls.results(crawl_id, record.batch_id, request.app.state.artifacts)
    return StreamingResponse(ndjson(lines), media_type="application/x-ndjson")
