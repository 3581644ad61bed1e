"""``/v1/crawls``: start a crawl, list them, follow its progress, cancel it, resume it, stream its pages' results.

A crawl is its tenant's (the key that started it): its page jobs carry the tenant, so its quotas,
fair dispatch and ceilings apply to every page; another tenant's crawl answers 404 like none."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from daemon.api.batches import ndjson
from daemon.api.deps import ERRORS, Caller, Store, caller
from daemon.api.errors import ApiError, ErrorBody
from daemon.api.recipes import recipe_store
from workers.jobs.crawls.models import CrawlRecord, CrawlSpec
from workers.jobs.crawls.store import CrawlStore
from workers.jobs.errors import CrawlNotCancelled
from workers.jobs.lifecycle.crawling import cancel_crawl as cancel_it
from workers.jobs.lifecycle.crawling import resume_crawl as resume_it, start_crawl as start_it
from workers.jobs.tenants.principal import Principal

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS, tags=["crawls"])


async def _get(crawls: CrawlStore, crawl_id: str, who: Principal) -> CrawlRecord:
    """The crawl, if the caller may see it: another tenant's answers 404 exactly like none."""
    record = await crawls.get(crawl_id)
    if record is None or not who.sees(record.tenant):
        raise ApiError(404, "not_found", f"no crawl with id {crawl_id!r} (finished crawls are kept BROWSERD_RESULT_TTL)")
    return record


@router.post("/crawls", status_code=201, response_model=CrawlRecord,
             responses={429: {"model": ErrorBody, "description": "Over one of the tenant's quotas (its name in `quota`)."},
                        503: {"model": ErrorBody, "description": "The broker is unreachable."}})
async def start_crawl(spec: CrawlSpec, request: Request, store: Store, who: Caller) -> CrawlRecord:
    """Start a crawl: its start URLs (and the sitemaps' pages) are queued; each page's links in scope
    are queued as it ends, each URL at most once, until max_depth, max_pages or max_duration. A
    tenant's pages are its jobs, each within its ceilings and quotas; a recipe is the tenant's own."""
    return await start_it(store, spec, request.app.state.settings, who, recipe_store(request, store, who.tenant))


@router.get("/crawls", response_model=list[CrawlRecord])
async def list_crawls(store: Store, who: Caller, limit: Annotated[int, Query(ge=1, le=200)] = 50,
                      before: Annotated[float | None, Query(description="Started before (epoch seconds).")] = None,
                      tenant: Annotated[str | None, Query(description="admin only: one tenant's crawls")] = None,
                      ) -> list[CrawlRecord]:
    """Crawls newest first (those whose record expired are gone); a tenant's own only."""
    return await CrawlStore(store).recent(limit, before, who.owner_filter(tenant))


@router.get("/crawls/{crawl_id}", response_model=CrawlRecord)
async def get_crawl(crawl_id: str, store: Store, who: Caller) -> CrawlRecord:
    """Progress: pages discovered, queued, visited, failed, and links skipped by reason."""
    return await _get(CrawlStore(store), crawl_id, who)


@router.post("/crawls/{crawl_id}/cancel", status_code=202, response_model=CrawlRecord)
async def cancel_crawl(crawl_id: str, store: Store, who: Caller) -> CrawlRecord:
    """Stop the crawl: no page is queued any more, queued pages never start, running ones stop. What
    it had still to visit (its queued pages, the links its running pages find) is kept: resume goes on from there."""
    crawls = CrawlStore(store)
    record = await _get(crawls, crawl_id, who)
    await cancel_it(store, crawl_id, record.batch_id, record.tenant)
    return await _get(crawls, crawl_id, who)


@router.post("/crawls/{crawl_id}/resume", status_code=202, response_model=CrawlRecord,
             responses={409: {"model": ErrorBody, "description": "The crawl was not cancelled (it completed, or runs)."},
                        429: {"model": ErrorBody, "description": "Over one of the tenant's quotas (its name in `quota`)."}})
async def resume_crawl(crawl_id: str, request: Request, store: Store, who: Caller) -> CrawlRecord:
    """Resume a cancelled crawl from where it stopped: every page it found and had not visited is
    queued again, once; pages visited are not visited again. Its tenant's ceilings and quotas apply
    as at its start; its max_duration counts again from now."""
    crawls = CrawlStore(store)
    await _get(crawls, crawl_id, who)
    try:
        await resume_it(store, crawl_id, request.app.state.settings)
    except CrawlNotCancelled as exc:
        raise ApiError(409, "conflict", str(exc)) from None
    return await _get(crawls, crawl_id, who)


@router.get("/crawls/{crawl_id}/results", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}},
                             "description": "One JSON object per page: url, depth, parent, status, data, "
                             "final_answer, error, category."}})
async def crawl_results(crawl_id: str, request: Request, store: Store, who: Caller,
                        offset: Annotated[int, Query(ge=0, description="Lines to skip.")] = 0,
                        limit: Annotated[int | None, Query(ge=1, description="Lines at most (default: all).")] = None,
                        ) -> StreamingResponse:
    """Every page queued so far as JSON lines, in the order they were queued (unfinished ones show their
    state); ``offset`` and ``limit`` read one window of them (the crawl's ``queued`` counts them all)."""
    crawls = CrawlStore(store)
    record = await _get(crawls, crawl_id, who)
    lines = crawls.results(crawl_id, record.batch_id, request.app.state.artifacts, offset, limit)
    return StreamingResponse(ndjson(lines), media_type="application/x-ndjson")
