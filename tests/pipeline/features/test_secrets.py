"""Credential sets at the prepare stage (``workers/pipeline/features/secrets.py``), through a local run
of the pipeline with the shared store's Redis: a set that exists is opened into the agent's inputs,
one deleted since the job was submitted fails it before any browser."""

from __future__ import annotations

import redis.asyncio as aioredis

from config import Settings, load_settings
from tests.pipeline.stages import BrowserGoneBrowsers, NoBrowsers, inputs_probe
from workers.agent import JobInputs
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.secrets.credentials import CredentialStore
from workers.jobs.secrets.models import CredentialSet
from workers.jobs.store.jobs import JobStore
from workers.pipeline import FEATURES, run_local
from workers.pipeline.records import LocalRecords, StoreRecords


async def test_a_credential_set_is_opened_into_the_agents_inputs_and_the_jobs_own_secrets_win(
        client: aioredis.Redis, settings: Settings) -> None:
    await CredentialStore(client, settings).put(CredentialSet(name="shop", secrets={
        "user": "ada@example.org", "password": "set-password"}))
    seen: list[JobInputs] = []
    spec = JobSpec(task="log in and read my orders", credentials="shop", secrets={"password": "own-password"})
    browsers = BrowserGoneBrowsers()
    result = await run_local(spec, settings=settings, browsers=browsers, redis=client,
                             features=(*FEATURES, inputs_probe(seen)))
    assert dict(seen[0].secrets) == {"user": "ada@example.org", "password": "own-password"}
    assert browsers.asked == 1, "prepared: the job went on to ask for its browser"
    assert result.category is FailureCategory.browser_crash
    recorded = result.model_dump_json()
    assert "set-password" not in recorded and "own-password" not in recorded


async def test_a_credential_set_deleted_after_submission_fails_the_job_before_the_browser(
        client: aioredis.Redis, settings: Settings) -> None:
    credentials = CredentialStore(client, settings)
    await credentials.put(CredentialSet(name="bank", secrets={"pin": "1234"}))
    assert await credentials.delete("bank")
    browsers = NoBrowsers()
    result = await run_local(JobSpec(task="read my balance", credentials="bank"), settings=settings,
                             browsers=browsers, redis=client)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.credentials_missing)
    assert result.error == "the credential set 'bank' does not exist (deleted after the job was submitted?)"
    assert browsers.asked == 0


async def test_a_set_the_worker_cannot_open_is_the_operators_to_fix(client: aioredis.Redis, settings: Settings) -> None:
    await CredentialStore(client, settings).put(CredentialSet(name="mail", secrets={"password": "pw-123456"}))
    browsers = NoBrowsers()
    result = await run_local(JobSpec(task="read my mail", credentials="mail"), settings=load_settings(),
                             browsers=browsers, redis=client)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.internal)
    assert "BROWSERD_SECRETS_KEY" in (result.error or "") and "pw-123456" not in result.model_dump_json()
    assert browsers.asked == 0


class TenantRecords(LocalRecords):
    """A local run of a tenant's job: its named objects are looked up as the tenant's, as a worker does
    from the job's record."""

    async def tenant(self, job_id: str) -> str | None:
        return "acme"


async def test_a_sets_domains_go_with_its_secrets_and_the_jobs_own_with_its_secret_domains(
        client: aioredis.Redis, settings: Settings) -> None:
    await CredentialStore(client, settings).put(CredentialSet(name="shop", secrets={
        "user": "ada@example.org", "password": "set-password"}, domains=["shop.example"]))
    seen: list[JobInputs] = []
    spec = JobSpec(task="log in", credentials="shop", secrets={"password": "own-password", "pin": "4242-own"},
                   secret_domains=["pay.example"])
    await run_local(spec, settings=settings, browsers=BrowserGoneBrowsers(), redis=client,
                    features=(*FEATURES, inputs_probe(seen)))
    assert {k: list(v) for k, v in seen[0].secret_domains.items()} == {
        "user": ["shop.example"], "password": ["pay.example"], "pin": ["pay.example"]}
    unbound: list[JobInputs] = []
    await run_local(JobSpec(task="log in", credentials="shop", secrets={"password": "own-password"}),
                    settings=settings, browsers=BrowserGoneBrowsers(), redis=client,
                    features=(*FEATURES, inputs_probe(unbound)))
    assert {k: list(v) for k, v in unbound[0].secret_domains.items()} == {"user": ["shop.example"]}  # its own: anywhere


async def test_a_tenants_job_opens_its_own_set_never_the_operators_or_anothers(
        client: aioredis.Redis, settings: Settings) -> None:
    await CredentialStore(client, settings).put(CredentialSet(name="shop", secrets={"password": "operator-pw"}))
    await CredentialStore(client, settings, tenant="beta").put(CredentialSet(name="bank", secrets={"pin": "beta-pin"}))
    await CredentialStore(client, settings, tenant="acme").put(CredentialSet(name="shop", secrets={"password": "acme-pw"}))
    seen: list[JobInputs] = []
    await run_local(JobSpec(task="log in", credentials="shop"), settings=settings, browsers=BrowserGoneBrowsers(),
                    redis=client, records=TenantRecords(), features=(*FEATURES, inputs_probe(seen)))
    assert dict(seen[0].secrets) == {"password": "acme-pw"}
    browsers = NoBrowsers()
    result = await run_local(JobSpec(task="read", credentials="bank"), settings=settings, browsers=browsers,
                             redis=client, records=TenantRecords())
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.credentials_missing)
    assert "beta-pin" not in result.model_dump_json() and browsers.asked == 0


async def test_a_workers_records_say_whose_job_it_is(client: aioredis.Redis) -> None:
    """What the features look named objects up under, on a worker: the job record's tenant, read
    with its spec (the operator's job: None)."""
    store = JobStore(client, result_ttl=3600)
    records = StoreRecords(store)
    tenants = (await store.create(JobSpec(task="a"), max_steps=5, tenant="acme")).job_id
    operators = (await store.create(JobSpec(task="b"), max_steps=5)).job_id
    for job_id, owner in ((tenants, "acme"), (operators, None)):
        assert (await records.spec(job_id)) is not None
        assert await records.tenant(job_id) == owner
        assert await records.tenant(job_id) == owner  # asked again: read from the record
    assert await records.tenant("0" * 32) is None
