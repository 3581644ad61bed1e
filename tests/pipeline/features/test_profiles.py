"""Auth profiles at the prepare stage (``workers/pipeline/features/profiles.py``), through a local run
of the pipeline with the shared store's Redis: the profile a job starts from is opened into the
agent's inputs, the one it saves to gets a way to store its end state, and a profile deleted since
the job was submitted fails it before any browser."""

from __future__ import annotations

import redis.asyncio as aioredis

from config import Settings
from tests.pipeline.stages import BrowserGoneBrowsers, NoBrowsers, inputs_probe
from workers.agent import JobInputs
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.profiles.models import Cookie, StorageState
from workers.jobs.profiles.store import ProfileStore
from workers.pipeline import FEATURES, run_local

SIGNED_IN = StorageState(cookies=[Cookie(name="session", value="s-3f9a", domain="shop.test", httpOnly=True)])


async def test_the_profile_a_job_starts_from_is_opened_into_the_agents_inputs(
        client: aioredis.Redis, settings: Settings) -> None:
    await ProfileStore(client, settings).put("shop-login", SIGNED_IN)
    seen: list[JobInputs] = []
    browsers = BrowserGoneBrowsers()
    result = await run_local(JobSpec(task="read my orders", profile="shop-login"), settings=settings,
                             browsers=browsers, redis=client, features=(*FEATURES, inputs_probe(seen)))
    profiles = seen[0].profiles
    assert profiles is not None and profiles.start == SIGNED_IN and profiles.save is None
    assert browsers.asked == 1 and result.category is FailureCategory.browser_crash
    assert "s-3f9a" not in result.model_dump_json()


async def test_a_job_that_saves_a_profile_gets_a_way_to_store_its_end_state(
        client: aioredis.Redis, settings: Settings) -> None:
    seen: list[JobInputs] = []
    await run_local(JobSpec(task="log in", save_profile="mail-login"), settings=settings,
                    browsers=BrowserGoneBrowsers(), redis=client, features=(*FEATURES, inputs_probe(seen)))
    profiles = seen[0].profiles
    assert profiles is not None and profiles.start is None and profiles.save is not None
    assert await profiles.save(SIGNED_IN) == 1
    assert await ProfileStore(client, settings).state("mail-login") == SIGNED_IN


async def test_a_profile_deleted_after_submission_fails_the_job_before_the_browser(
        client: aioredis.Redis, settings: Settings) -> None:
    store = ProfileStore(client, settings)
    await store.put("bank-login", SIGNED_IN)
    assert await store.delete("bank-login")
    browsers = NoBrowsers()
    result = await run_local(JobSpec(task="read my balance", profile="bank-login"), settings=settings,
                             browsers=browsers, redis=client)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.profile_missing)
    assert result.error == ("the job starts from auth profile 'bank-login', which does not exist "
                            "(deleted after the job was submitted?)")
    assert browsers.asked == 0
