"""Input files at the prepare stage (``workers/pipeline/features/input_files.py``), with the shared
store's Redis and an artifact store on disk, as a worker has them: a file sent with the job is
decoded; an artifact of another job of the same tenant is read; another tenant's, an expired
job's, a missing file or a run without the store is refused alike (``input_file_missing``)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from config import Settings, load_settings
from workers.agent import JobInputs
from workers.agent.failures import failure
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.budget import TimeBudget
from workers.jobs.errors import InputFileMissing
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory
from workers.jobs.store.jobs import JobStore
from workers.pipeline.feature import Services
from workers.pipeline.features.input_files import InputFiles
from workers.pipeline.records import StoreRecords
from workers.pipeline.run import JobRun

REPORT = b"name,price\nkettle,39.90\n"


def settings_on(tmp_path: Path) -> Settings:
    return load_settings(artifacts_url=f"file://{tmp_path}/artifacts")


async def prepared(services: Services, job_id: str, spec: JobSpec) -> dict[str, bytes]:
    run = JobRun(job_id, 1, spec, TimeBudget(60), JobInputs(spec=spec, config=services.agent))
    await InputFiles(services).prepare(run)
    return dict(run.inputs.files)


def upload_of(job: str, name: str = "download-report.csv") -> JobSpec:
    return JobSpec(task="upload the report", input_files=[
        {"name": "report.csv", "artifact": {"job": job, "name": name}},
        {"name": "note.txt", "content_base64": base64.b64encode(b"see attached").decode()}])


async def test_an_artifact_of_the_same_tenant_is_read_and_anothers_is_refused(client: aioredis.Redis, tmp_path):
    settings = settings_on(tmp_path)
    store = JobStore(client, result_ttl=3600)
    services = Services(settings=settings, records=StoreRecords(store), redis=client, store=store)
    kept = (await store.create(JobSpec(task="download the report"), max_steps=5, tenant="shop")).job_id
    ArtifactStore.from_settings(settings).job(kept).put("download-report.csv", REPORT)

    mine = upload_of(kept)
    mine_id = (await store.create(mine, max_steps=5, tenant="shop")).job_id
    assert await prepared(services, mine_id, mine) == {"report.csv": REPORT, "note.txt": b"see attached"}

    theirs = upload_of(kept)
    theirs_id = (await store.create(theirs, max_steps=5, tenant="bank")).job_id
    with pytest.raises(InputFileMissing) as refused:
        await prepared(services, theirs_id, theirs)
    operators = (await store.create(upload_of(kept), max_steps=5)).job_id  # the operator's jobs are a tenant too
    with pytest.raises(InputFileMissing) as operator_refused:
        await prepared(services, operators, upload_of(kept))
    gone = upload_of("f" * 32)  # an expired (or never existing) job: told alike
    with pytest.raises(InputFileMissing) as expired:
        await prepared(services, mine_id, gone)
    missing = upload_of(kept, "download-other.csv")
    with pytest.raises(InputFileMissing) as no_file:
        await prepared(services, mine_id, missing)
    said = {str(e.value).replace("f" * 32, kept).replace("download-other.csv", "download-report.csv")
            for e in (refused, operator_refused, expired, no_file)}
    assert said == {f"input file: job {kept!r} has no artifact 'download-report.csv' of yours (expired, deleted, "
                    "or another tenant's job)"}
    assert failure(refused.value).category == FailureCategory.input_file_missing


async def test_an_artifact_larger_than_a_download_may_be_is_refused(client: aioredis.Redis, tmp_path):
    settings = load_settings(artifacts_url=f"file://{tmp_path}/artifacts", download_max_mb=1)
    store = JobStore(client, result_ttl=3600)
    services = Services(settings=settings, records=StoreRecords(store), redis=client, store=store)
    kept = (await store.create(JobSpec(task="download"), max_steps=5)).job_id
    ArtifactStore.from_settings(settings).job(kept).put("download-report.csv", b"x" * (1024 * 1024 + 1))
    spec = upload_of(kept)
    job = (await store.create(spec, max_steps=5)).job_id
    with pytest.raises(InputFileMissing, match="larger than a download may be"):
        await prepared(services, job, spec)


async def test_a_run_without_the_store_refuses_artifacts(client: aioredis.Redis, tmp_path):
    settings = settings_on(tmp_path)
    services = Services(settings=settings, records=StoreRecords(JobStore(client, result_ttl=60)), redis=client)
    with pytest.raises(InputFileMissing, match="which this run does not reach"):
        await prepared(services, "a" * 32, upload_of("b" * 32))
