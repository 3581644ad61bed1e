"""Result limits and offloading: a result fits the record, or goes to the artifact store, or is refused.

Final answer, data and steps above ``BROWSERD_ARTIFACT_INLINE_BYTES`` go to the artifact store
(the run's own ``result.json``), so the Redis record stays small and ``GET /v1/jobs/{id}`` reads
them back; if the store cannot take them, the record keeps them. A result above
``BROWSERD_MAX_RESULT_BYTES`` is refused whole: the job fails ``invalid_output`` naming the limit.
"""

from __future__ import annotations

import asyncio
import logging

from workers.agent.failures import failure
from workers.jobs.artifacts.offload import offload
from workers.jobs.errors import ResultTooLarge
from workers.jobs.model.result import EncodedResult, JobResult
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")


class ResultLimits(Feature):
    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        encoded = EncodedResult.of(result)  # measured here, stored as it is if nothing moves
        size, limit = len(encoded.json), self.settings.max_result_bytes
        if size > limit:
            return failure(ResultTooLarge(size, limit), started=result.started_at)
        try:
            kept = await asyncio.to_thread(offload, result, self.services.artifacts.job(run.job_id),
                                           self.settings.artifact_inline_bytes, run.number, encoded.json)
        except Exception as exc:
            log.warning("job %s: large result kept in the record (artifact store: %s: %s)", run.job_id,
                        type(exc).__name__, exc)
            kept = result
        if kept is result:
            run.put(encoded)
        return kept
