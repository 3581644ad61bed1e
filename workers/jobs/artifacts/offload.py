"""Large results: offloaded from the job record to the artifact store, and filled in again when read."""

from __future__ import annotations

import asyncio
import json
import logging

from workers.jobs.artifacts.names import RESULT_FILE, offloaded_name, run_name
from workers.jobs.artifacts.store import JobArtifacts
from workers.jobs.model.result import JobResult

log = logging.getLogger("browserd.artifacts")

HEAVY_FIELDS = ("final_answer", "data", "steps")  # what a large result moves out of its record


def offload(result: JobResult, folder: JobArtifacts, limit: int, run: int = 1, encoded: str | None = None) -> JobResult:
    """``result`` with its final answer, data and steps moved to ``result.json`` (run ``run``'s:
    ``run_name``) when, as JSON, they pass ``limit`` bytes: the record keeps the rest (status,
    error, totals, downloads, artifacts) and a link, ``result_artifact``. Steps go too: a planner's
    final answer is in them.

    ``encoded`` is the whole result's JSON when the caller made it already: the heavy part, written
    with ``json.dumps``'s spaces, takes at most twice those bytes (a space after each separator), so
    a result under half the limit stays as it is without being serialized again."""
    if encoded is not None and 2 * len(encoded.encode()) <= limit:
        return result
    heavy = result.model_dump(mode="json", include=set(HEAVY_FIELDS))
    payload = json.dumps(heavy, ensure_ascii=False).encode()
    if len(payload) <= limit:
        return result
    name = run_name(run, RESULT_FILE)
    link = folder.put(name, payload)
    log.info("job %s: result of %d bytes stored as %s", folder.job_id, link.size, name)
    return result.model_copy(update={"final_answer": None, "data": None, "steps": [], "result_artifact": link.url,
                                     "artifacts": sorted([*(a for a in result.artifacts if a.name != name), link],
                                                        key=lambda a: a.name)})


def inline(result: JobResult, folder: JobArtifacts) -> JobResult:
    """``result`` with an offloaded final answer, data and steps read back in (``result_artifact`` stays)."""
    if result.result_artifact is None:
        return result
    stored = json.loads(folder.read(offloaded_name(result.result_artifact)))
    return JobResult.model_validate({**result.model_dump(mode="json"), **stored})


async def ainline(result: JobResult, folder: JobArtifacts) -> JobResult:
    return await asyncio.to_thread(inline, result, folder)
