"""``/v1/batches``: submit many jobs at once, follow their counters, cancel them, stream their results."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from config import Settings
from daemon.api.credentials import check_credentials, credential_store
from daemon.api.profiles import check_profiles, profile_store
from daemon.api.deps import ERRORS, Caller, Store, caller
from daemon.api.errors import ApiError, ErrorBody
from daemon.api.recipes import check_recipes, recipe_store
from workers.jobs.batches.models import BatchRecord
from workers.jobs.batches.store import BatchStore
from workers.jobs.lifecycle.cancelling import cancel_batch as cancel_batch_in
from workers.jobs.lifecycle.submission import submit_batch
from workers.jobs.specs.batch_body import MAX_BATCH
from workers.jobs.specs.streamed import CheckedBatch, StreamedBatch
from workers.jobs.tenants.ceilings import tenant_ceiling
from workers.jobs.tenants.models import TenantLimits
from workers.jobs.tenants.quotas import check_batch_size
from workers.jobs.tenants.principal import Principal

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS, tags=["batches"])

BATCH_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "A JSON array of job specs; or {\"jobs\": [...], \"defaults\": {...}, \"webhook_url\": ..., "
        "\"mode\": \"auto\", \"max_cost_usd\": 5}; or JSONL (one spec per line, optional first line {\"defaults\": {...}, "
        "\"webhook_url\": ..., \"mode\": ...}). mode auto: the first successful agent job is recorded as a recipe "
        "and the batch's later jobs whose task matches it replay it.",
        "content": {
            "application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/JobSpec"}}},
            "application/x-ndjson": {"schema": {"type": "string"}},
        },
    }
}


def _not_found(batch_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no batch with id {batch_id!r} (finished batches are kept BROWSERD_RESULT_TTL)")


async def _get(batches: BatchStore, batch_id: str, who: Principal) -> BatchRecord:
    """The batch, if the caller may see it: another tenant's answers 404 exactly like none."""
    record = await batches.get(batch_id)
    if record is None or not who.sees(record.tenant):
        raise _not_found(batch_id)
    return record


FEED_BYTES = 256 * 1024  # body bytes checked per hop to a thread


async def read_batch(request: Request, settings: Settings, who: Principal) -> CheckedBatch:
    """The body read as it arrives and every spec checked (``StreamedBatch``: JSONL line by line,
    never the whole body in memory). The checking is CPU work, so it runs in a thread a few hundred
    lines at a time, and a 100,000-line batch does not hold the event loop; a tenant's batch size
    quota is answered before a bad line is."""
    tenant, limits = who.tenant, who.limits or TenantLimits()
    size_check = None if tenant is None else (lambda jobs: check_batch_size(tenant, limits, jobs))
    reader = StreamedBatch(settings, tenant_ceiling(who, settings), size_check,
                           min(MAX_BATCH, limits.max_batch_size or MAX_BATCH))
    chunk = bytearray()
    async for part in request.stream():
        chunk += part
        if len(chunk) >= FEED_BYTES:
            await asyncio.to_thread(reader.feed, bytes(chunk))
            chunk.clear()
    if chunk:
        await asyncio.to_thread(reader.feed, bytes(chunk))
    return await asyncio.to_thread(reader.finish)


@router.post("/batches", status_code=201, response_model=BatchRecord, openapi_extra=BATCH_BODY,
             responses={503: {"model": ErrorBody, "description": "The broker is unreachable."}})
async def submit(request: Request, store: Store, who: Caller) -> BatchRecord:
    """Queue many jobs at once; every spec is checked first (a tenant's within its ceilings), and
    one bad item refuses the batch."""
    settings: Settings = request.app.state.settings
    checked = await read_batch(request, settings, who)
    specs, webhook_url = checked.specs, checked.webhook_url
    await check_credentials(specs, credential_store(request, store, who.tenant), batch=True)
    await check_profiles(specs, profile_store(request, store, who.tenant), batch=True)
    await check_recipes(specs, recipe_store(request, store, who.tenant), batch=True)
    return await submit_batch(store, specs, settings, webhook_url=webhook_url, tenant=who.tenant,
                              max_cost_usd=checked.max_cost_usd, events=request.app.state.sent_events)


@router.get("/batches", response_model=list[BatchRecord])
async def list_batches(store: Store, who: Caller, limit: Annotated[int, Query(ge=1, le=200)] = 50,
                       before: Annotated[float | None, Query(description="Created before (epoch seconds).")] = None,
                       tenant: Annotated[str | None, Query(description="admin only: one tenant's batches")] = None,
                       ) -> list[BatchRecord]:
    """Batches newest first (those whose record expired are gone); a tenant's own only."""
    return await BatchStore(store).recent(limit, before, who.owner_filter(tenant))


@router.get("/batches/{batch_id}", response_model=BatchRecord)
async def get_batch(batch_id: str, store: Store, who: Caller) -> BatchRecord:
    """Counters by state, progress, and whether the batch completed."""
    return await _get(BatchStore(store), batch_id, who)


@router.post("/batches/{batch_id}/cancel", status_code=202, response_model=BatchRecord)
async def cancel_batch(batch_id: str, store: Store, who: Caller) -> BatchRecord:
    """Cancel every unfinished job: queued ones at once, running ones before their next action."""
    batches = BatchStore(store)
    record = await _get(batches, batch_id, who)
    await cancel_batch_in(store, batch_id, record.tenant)
    return await _get(batches, batch_id, who)


@router.get("/batches/{batch_id}/results", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}},
                             "description": "One JSON object per job: id, status, final_answer, data, error."}})
async def batch_results(batch_id: str, request: Request, store: Store, who: Caller) -> StreamingResponse:
    """Every job's outcome as JSON lines, in submission order (unfinished jobs show their state);
    a result too large for its record is read back from the artifact store."""
    batches = BatchStore(store)
    await _get(batches, batch_id, who)
    return StreamingResponse(ndjson(batches.results(batch_id, request.app.state.artifacts)),
                             media_type="application/x-ndjson")


async def ndjson(lines: AsyncIterator[BaseModel]) -> AsyncIterator[bytes]:
    """Models as JSON lines, 200 to a chunk (a batch's or a crawl's results)."""
    chunk: list[str] = []
    async for line in lines:
        chunk.append(line.model_dump_json())
        if len(chunk) >= 200:
            yield ("\n".join(chunk) + "\n").encode()
            chunk = []
    if chunk:
        yield ("\n".join(chunk) + "\n").encode()

