"""``/v1/jobs/{id}/artifacts``: list a job's artifacts and stream one (see ``workers.jobs.artifacts``)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool

from daemon.api.deps import ERRORS, Caller, Store, caller
from daemon.api.errors import ApiError, invalid
from workers.jobs.artifacts.names import NoSuchArtifact, UnsafeName, content_type, serving_headers
from workers.jobs.artifacts.store import ArtifactStore, JobArtifacts
from workers.jobs.model.result import ArtifactLink

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS)


def artifact_store(request: Request) -> ArtifactStore:
    return request.app.state.artifacts


async def job_folder(request: Request, store: Store, job_id: str, who: Caller) -> JobArtifacts:
    """The folder of a job that exists and is the caller's (a 404 otherwise: its artifacts expired
    with it, or they are another tenant's)."""
    record = await store.get(job_id)
    if record is None or not who.sees(record.tenant):
        settings = request.app.state.settings
        raise ApiError(404, "not_found", f"no job with id {job_id!r} (finished jobs and their artifacts are kept "
                       f"{settings.result_ttl}s, BROWSERD_RESULT_TTL)")
    return artifact_store(request).job(job_id)


@router.get("/jobs/{job_id}/artifacts", response_model=list[ArtifactLink])
async def list_artifacts(job_id: str, request: Request, store: Store, who: Caller) -> list[ArtifactLink]:
    """The job's artifacts: name, size, content type and the URL path serving each."""
    folder = await job_folder(request, store, job_id, who)
    return await asyncio.to_thread(folder.list)


@router.get("/jobs/{job_id}/artifacts/{name}", response_class=StreamingResponse,
            responses={200: {"content": {"application/octet-stream": {}}, "description": "The file."}})
async def get_artifact(job_id: str, name: str, request: Request, store: Store, who: Caller) -> StreamingResponse:
    """One artifact, streamed. Names are plain file names of the job's folder (no '/', no '..')."""
    folder = await job_folder(request, store, job_id, who)
    try:
        size = await asyncio.to_thread(folder.size, name)
    except UnsafeName as exc:
        raise invalid("name", exc.reason) from None
    except NoSuchArtifact as exc:
        raise ApiError(404, "not_found", str(exc)) from None
    return StreamingResponse(iterate_in_threadpool(folder.chunks(name)), media_type=content_type(name),
                             headers=serving_headers(name, size))
