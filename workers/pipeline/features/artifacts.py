"""Artifacts: the job's folder in the artifact store (``BROWSERD_ARTIFACTS_URL``), where the agent
keeps what ``spec.artifacts`` asks for: step screenshots, the final page, logs, downloads
(``workers.agent.artifacts`` takes them; ``workers.jobs.artifacts`` is the store).

A redelivered job's folder starts empty: what a lost attempt left would pose as this one's.

A tenant's job's folder is measured once each run is recorded (its result offloaded too), and its
size becomes the job's share of the tenant's ``max_artifact_bytes`` (``tenants.quotas``); the
reconciler gives it back when it deletes the folder of an expired job.
"""

from __future__ import annotations

import asyncio
import logging

from workers.jobs.model.result import JobResult
from workers.jobs.tenants.quotas import Quotas
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

    async def after(self, run: JobRun, result: JobResult) -> None:
        store, tenant, folder = self.services.store, run.inputs.tenant, run.inputs.artifacts
        if store is None or tenant is None or folder is None:
            return
        try:
            size = sum(link.size for link in await asyncio.to_thread(folder.list))
            await Quotas(store.redis, store.keys).set_artifact_bytes(tenant, run.job_id, size)
        except Exception as exc:  # the job's result stands; its bytes are counted at its next run or not at all
            log.warning("job %s: artifact bytes not counted: %s: %s", run.job_id, type(exc).__name__, exc)
