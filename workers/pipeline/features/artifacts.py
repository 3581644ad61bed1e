"""Artifacts: the job's folder in the artifact store (``BROWSERD_ARTIFACTS_URL``), where the agent
keeps what ``spec.artifacts`` asks for: step screenshots, the final page, logs, downloads
(``workers.agent.artifacts`` takes them; ``workers.jobs.artifacts`` is the store).

A redelivered job's folder starts empty: what a lost attempt left would pose as this one's.
"""

from __future__ import annotations

import asyncio
import logging

from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")


class Artifacts(Feature):
    async def prepare(self, run: JobRun) -> None:
        folder = self.services.artifacts.job(run.job_id)
        if run.attempt > 1:
            try:
                await asyncio.to_thread(folder.delete)
            except Exception as exc:
                log.warning("job %s: artifacts of an earlier attempt not cleared: %s: %s", run.job_id,
                            type(exc).__name__, exc)
        run.inputs.artifacts = folder
