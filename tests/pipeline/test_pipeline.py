"""The pipeline's stages (``workers/pipeline/pipeline.py``) with no browser: their order, the hooks
features plug into them, and the jobs that end before a lease.

The stages a job reaches only with a browser (attach, run and its steps, ``during``) are the e2e
tests' (tests/agent through ``tests/support/jobs.py::run_job``, tests/queue through a worker).
"""

from __future__ import annotations

import logging

import pytest

from config import load_settings
from tests.pipeline.stages import BrowserGoneBrowsers, LoggedRecords, NoBrowsers, NoneFree, recording
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.store.outcomes import ClaimOutcome
from workers.pipeline import FEATURES, Delivered, Feature, JobRun, LocalRecords, Pipeline, Services, run_local


def pipeline(records: LocalRecords, browsers: object, features: list[type[Feature]], **settings: object) -> Pipeline:
    services = Services(settings=load_settings(**settings), records=records)
    return Pipeline(records, browsers, services, features)  # type: ignore[arg-type]


async def test_the_stages_run_in_order_and_after_comes_once_the_result_is_recorded() -> None:
    log: list[str] = []
    records = LoggedRecords(log=log)
    job_id = records.add(JobSpec(task="read the price", start_url="http://shop.test/"))
    run = pipeline(records, BrowserGoneBrowsers(log), [recording("first", log), recording("second", log)])
    assert await run.deliver(job_id) == Delivered(ClaimOutcome.run, JobStatus.failed)
    assert log == [
        "claim",
        "first.prepare", "second.prepare",  # prepare: every feature, in registry order
        "first.hold", "second.hold", "lease",  # acquire: the holds, then the lease (which failed)
        "first.settle", "second.settle",  # settle: the result before it is recorded
        "record",
        "first.after", "second.after",  # after: each sees the result as recorded
        "second.release", "first.release",  # what the job held is let go last, in reverse
    ]
    result = records.results[job_id]
    assert (result.category, result.error) == (FailureCategory.browser_crash, "browser gone: no browser in the fast tier")


async def test_settle_hooks_compose_in_registry_order_and_after_sees_the_composed_result() -> None:
    log: list[str] = []
    records = LocalRecords()
    job_id = records.add(JobSpec(task="read the price"))
    features = [recording("limits", log, settle_note="limits"), recording("sessions", log, settle_note="sessions")]
    await pipeline(records, BrowserGoneBrowsers(), features).deliver(job_id)
    assert records.results[job_id].error == "browser gone: no browser in the fast tier | limits | sessions"
    assert log[-4:] == ["limits.after", "sessions.after", "sessions.release", "limits.release"], log


class FailingAfter(Feature):
    async def after(self, run: JobRun, result: JobResult) -> None:
        raise RuntimeError("the recipe store went away")


async def test_a_feature_failing_after_the_record_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    records = LocalRecords()
    job_id = records.add(JobSpec(task="read the price"))
    with caplog.at_level(logging.ERROR, logger="browserd.worker"):
        delivered = await pipeline(records, BrowserGoneBrowsers(), [FailingAfter, recording("next", log)]).deliver(job_id)
    assert delivered == Delivered(ClaimOutcome.run, JobStatus.failed)
    assert records.results[job_id].category is FailureCategory.browser_crash
    assert "next.after" in log, "the features after it still learn from the result"
    assert any("FailingAfter after the result failed" in r.getMessage() for r in caplog.records)


async def test_a_job_whose_record_vanished_fails_internal_before_any_feature_prepares() -> None:
    log: list[str] = []

    class Vanishing(LocalRecords):
        """The record expires between the claim and the read of its spec."""

        async def claim(self, job_id: str, **kwargs: object):  # type: ignore[no-untyped-def, override]
            claim = await super().claim(job_id, **kwargs)  # type: ignore[arg-type]
            del self.specs[job_id]
            return claim

    records = Vanishing()
    job_id = records.add(JobSpec(task="read the price"))
    browsers = NoBrowsers()
    delivered = await pipeline(records, browsers, [*FEATURES, recording("probe", log)]).deliver(job_id)
    assert delivered == Delivered(ClaimOutcome.run, JobStatus.failed)
    result = records.results[job_id]
    assert (result.category, result.error) == (FailureCategory.internal, "the job record vanished before it could run")
    assert browsers.asked == 0 and log == ["probe.settle", "probe.after"]


async def test_one_budget_per_run_made_at_the_claim_from_the_jobs_own_timeout_else_the_setting() -> None:
    seen: list[JobRun] = []

    class Budgets(Feature):
        async def prepare(self, run: JobRun) -> None:
            seen.append(run)

        async def settle(self, run: JobRun, result: JobResult) -> JobResult:
            assert run.budget is seen[-1].budget, "every stage reads the one budget"
            return result

    for spec in (JobSpec(task="read the price", timeout=42), JobSpec(task="read the price")):
        records = LocalRecords()
        await pipeline(records, BrowserGoneBrowsers(), [Budgets], job_timeout=77).deliver(records.add(spec))
    assert [run.budget.limit for run in seen] == [42, 77]


async def test_waiting_for_a_browser_ends_at_the_jobs_limit_as_a_timeout() -> None:
    records = LocalRecords()
    job_id = records.add(JobSpec(task="read the price", timeout=0.3))
    browsers = NoneFree()
    await pipeline(records, browsers, list(FEATURES)).deliver(job_id)
    result = records.results[job_id]
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.timeout)
    assert result.error == "no browser was free within the job's 0.3s limit" and browsers.asked == 1


@pytest.mark.parametrize("spec, category, says", [
    (JobSpec(task="log in and read the order", credentials="shop"), FailureCategory.credentials_missing,
     "the job types from credential set 'shop', but credential sets live in browserd's store"),
    (JobSpec(task="read the order", profile="shop-login"), FailureCategory.profile_missing,
     "the job uses auth profile 'shop-login', but auth profiles live in browserd's store"),
    (JobSpec(task="read the order", save_profile="shop-login"), FailureCategory.profile_missing,
     "the job uses auth profile 'shop-login', but auth profiles live in browserd's store"),
    (JobSpec(recipe="prices", params={"q": "mugs"}), FailureCategory.recipe_unavailable,
     "recipe 'prices': recipes live in browserd's store, which this run does not reach"),
], ids=["credentials", "profile", "save_profile", "recipe"])
async def test_a_local_run_without_a_store_fails_what_names_the_store_before_the_browser(
        spec: JobSpec, category: FailureCategory, says: str) -> None:
    browsers = NoBrowsers()
    result = await run_local(spec, settings=load_settings(), browsers=browsers)
    assert (result.status, result.category) == (JobStatus.failed, category)
    assert result.error is not None and result.error.startswith(says) and "BROWSERD_REDIS_URL" in result.error
    assert browsers.asked == 0
