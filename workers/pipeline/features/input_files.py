"""Input files: what a job may upload into the pages' file inputs, loaded before its browser starts.

A job names its files in ``spec.input_files``: sent in the submission (base64, size-capped by the
spec) or by reference to an artifact of another job of the same tenant. Both are read here into
the agent's inputs (``JobInputs.files``, name -> bytes); the agent writes them into a folder of its
own that only ``upload_file`` hands to the browser (``workers.agent.actions.uploads``), so no other
file on the worker's disk can be uploaded.

A referenced artifact is read only when the job that kept it is the same tenant's (the operator's
jobs are one tenant) and is still recorded; otherwise, and when the file is gone or larger than
a download may be (``BROWSERD_DOWNLOAD_MAX_MB``), the job fails ``input_file_missing``, told alike
for every case so a tenant learns nothing of another's jobs.
"""

from __future__ import annotations

import asyncio

from workers.jobs.artifacts.names import ArtifactError
from workers.jobs.errors import InputFileMissing
from workers.jobs.model.spec import ArtifactRef
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun


class InputFiles(Feature):
    async def prepare(self, run: JobRun) -> None:
        files = run.spec.input_files
        if not files:
            return
        loaded: dict[str, bytes] = {}
        for file in files:
            if file.artifact is not None:
                loaded[file.name] = await self._artifact(run, file.artifact)
            else:
                loaded[file.name] = file.content()
        run.inputs.files = loaded

    async def _artifact(self, run: JobRun, ref: ArtifactRef) -> bytes:
        store = self.services.store
        if store is None:
            raise InputFileMissing(ref.job, ref.name, f"input file: artifacts of other jobs live in browserd's store, "
                                   f"which this run does not reach (job {ref.job!r}, artifact {ref.name!r})")
        mine, theirs = await store.get(run.job_id), await store.get(ref.job)
        if mine is None or theirs is None or mine.tenant != theirs.tenant:
            raise InputFileMissing(ref.job, ref.name)
        folder = self.services.artifacts.job(ref.job)
        cap = self.settings.download_max_mb * 1024 * 1024
        try:
            if await asyncio.to_thread(folder.size, ref.name) > cap:
                raise InputFileMissing(ref.job, ref.name, f"input file: artifact {ref.name!r} of job {ref.job!r} is "
                                       f"larger than a download may be ({self.settings.download_max_mb} MB)")
            return await asyncio.to_thread(folder.read, ref.name)
        except ArtifactError:
            raise InputFileMissing(ref.job, ref.name) from None
