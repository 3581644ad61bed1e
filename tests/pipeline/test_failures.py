"""The failure table (``workers/agent/failures.py``): which error ends a job as which category.

Each row below is an error as the part that raises it builds it, and the category a user then reads
on the job; the table must list exactly these classes, so a class added to it comes with its row
here. (The two rules that look at the lease, ``resource_limit`` for a stopped lease and
``proxy_error`` for a failed upstream proxy, need a browser: tests/agent/test_hostile_pages.py and
tests/agent/test_browser_settings.py.)
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

import cdp
from workers.agent.errors import (
    HostUnresolved,
    ActionError,
    Cancelled,
    EgressUnavailable,
    ElementGone,
    ElementNotFound,
    InvalidOutput,
    JobTimeout,
    LLMAuthError,
    LLMBadRequestError,
    LLMBudgetSpent,
    HumanTimeout,
    LLMError,
    LLMForbiddenError,
    LLMOutputError,
    LLMProviderError,
    LLMTimeout,
    LLMTruncated,
    MaxFailuresReached,
    MaxStepsReached,
    PausedTooLong,
    ProxyFailed,
    ResourceLimit,
    SecretDomainRefused,
    StepTimeout,
    TaskNotDone,
    Stuck,
    Unverified,
    URLBlocked,
)
from workers.agent.failures import CATEGORIES, category_of, failure
from workers.agent.profiles import ProfileUnavailable
from workers.agent.replay import ReplayMismatch
from workers.jobs.errors import (
    BrowserWaitExpired,
    CredentialsMissing,
    HardLimitReached,
    InputFileMissing,
    JobVanished,
    PageRequeued,
    RecipeUnavailable,
    ResultTooLarge,
    RunBackstop,
    SchemaCheckExpired,
)
from workers.jobs.model.status import FailureCategory as C
from workers.jobs.model.status import JobStatus, Outcome
from workers.jobs.politeness.slots import SlotWaitCancelled, SlotWaitExpired
from workers.jobs.profiles.models import ProfileMissing
from workers.jobs.recipes.models import RecipeStep
from workers.jobs.secrets.sealing import SecretsUnavailable

MIB = 1024 * 1024

LISTED: list[tuple[BaseException, C]] = [
    # the job's own limits
    (JobTimeout(120), C.timeout),
    (StepTimeout(4, 30), C.timeout),
    (PausedTooLong(600), C.timeout),
    (SlotWaitExpired("shop.test", 2, 30.0), C.timeout),
    (BrowserWaitExpired(60), C.timeout),
    (RunBackstop(60), C.timeout),
    (HardLimitReached(90), C.timeout),
    (MaxStepsReached(12), C.max_steps),
    (MaxFailuresReached(3, "element 4 no longer exists"), C.max_failures),
    (LLMOutputError("the answer holds no JSON object", raw="sure!"), C.max_failures),
    (LLMTimeout(2, 300, role="navigator", model="qwen"), C.llm_timeout),
    (LLMTruncated("planner", 2048, raw='{"observation": "the pa'), C.llm_truncated),
    # the model endpoint
    (LLMAuthError("invalid api key", role="navigator", model="gpt-4o", status=401), C.llm_auth),
    (LLMForbiddenError("model not allowed for this key", role="planner", model="o3", status=403), C.llm_auth),
    (LLMBadRequestError("unknown model", model="gpt-9", status=404), C.llm_bad_request),
    (LLMError("rate limited", model="gpt-4o", status=429), C.llm_error),
    (LLMProviderError("acme.Chat", "no such class"), C.llm_error),
    (LLMBudgetSpent("the job's LLM token budget is spent: 20100 tokens used of 20000 (options.max_tokens_total)",
                    role="planner"), C.llm_budget),
    # the page and the policy
    (URLBlocked("http://169.254.169.254/latest", "a metadata address"), C.url_blocked),
    (HostUnresolved("http://shop.invalid/", "cannot resolve shop.invalid: Name or service not known"), C.dns_error),
    (ActionError("no option 'XXL' in the size list", action="select_dropdown_option", index=7), C.action_error),
    (InvalidOutput(["$.price: 'cheap' is not of type 'number'"]), C.invalid_output),
    (Unverified("the answer's figures 250 are on no page the agent saw", 3), C.unverified),
    (Stuck(5), C.stuck),
    (HumanTimeout("solve the captcha", 300), C.human_timeout),
    (ResultTooLarge(2_000_000, 1_000_000), C.invalid_output),
    (SchemaCheckExpired(10), C.invalid_output),
    (ProxyFailed("127.0.0.1:3128 refused the connection"), C.proxy_error),
    (PageRequeued("the site refused this page's visit and job 0 visits it again"), C.blocked_by_site),
    (SecretDomainRefused("password", "http://evil.localhost/", ["shop.localhost"]), C.secret_domain_refused),
    # the browser
    (ResourceLimit("the page used 900 MiB"), C.resource_limit),
    (cdp.ResourceLimitExceeded("ctx-1", 900 * MIB, 512 * MIB, measure="renderer"), C.resource_limit),
    (cdp.BrowserGone("the websocket closed", method="Page.navigate"), C.browser_crash),
    (cdp.TargetCrashed("T-1", method="Runtime.evaluate"), C.browser_crash),
    # what the job names and the tenant must fix
    (ProfileMissing("shop-login"), C.profile_missing),
    (CredentialsMissing("shop"), C.credentials_missing),
    (RecipeUnavailable("recipe 'prices' no longer exists (deleted after the job was queued)"), C.recipe_unavailable),
    (InputFileMissing("0" * 32, "download-report.csv"), C.input_file_missing),
    # browserd's own configuration or state
    (ProfileUnavailable("the job names a profile but this run has no profile store"), C.internal),
    (SecretsUnavailable("BROWSERD_SECRETS_KEY is not set"), C.internal),
    (EgressUnavailable(), C.internal),
    (JobVanished("0" * 32), C.internal),
]


@pytest.mark.parametrize("cause, category", [
    (LLMTimeout(3, 300, role="navigator", model="qwen"), C.llm_timeout),
    (LLMTruncated("navigator", 2048), C.llm_truncated),
    (LLMOutputError("the answer holds no JSON object"), C.max_failures),
    (StepTimeout(3, 300), C.max_failures),
    (ActionError("element 4 no longer exists"), C.max_failures),
])
def test_max_failures_takes_the_category_of_a_telling_last_failure(cause, category) -> None:
    """A job whose steps kept failing because the model never answered in time, or its answers were
    cut at max_tokens, says so; other runs of failures stay ``max_failures``."""
    result = failure(MaxFailuresReached(3, str(cause), cause))
    assert result.category == category
    assert result.error.startswith("3 consecutive failures; last: ") and str(cause) in result.error


def test_the_table_lists_exactly_the_classes_tested_here() -> None:
    assert [type(exc) for exc, _ in LISTED if type(exc) not in CATEGORIES] == []
    assert set(CATEGORIES) - {type(exc) for exc, _ in LISTED} == set()


@pytest.mark.parametrize("exc, category", LISTED, ids=[type(exc).__name__ for exc, _ in LISTED])
def test_each_listed_error_fails_its_job_with_its_category_and_its_own_words(exc: BaseException, category: C) -> None:
    started = datetime.now(UTC)
    result = failure(exc, started=started)
    assert (result.status, result.category, result.error) == (JobStatus.failed, category, str(exc))
    assert result.started_at == started and result.finished_at is not None and result.finished_at >= started


@pytest.mark.parametrize("exc, category", [
    (ElementGone(4, action="click_element"), C.action_error),
    (ElementNotFound("no element matches '#buy'", action="click"), C.action_error),
    (ReplayMismatch("prices", 3, RecipeStep(action="click_element", params={"index": 4}), "no element matches",
                    "element"), C.action_error),
    (LLMForbiddenError("forbidden", status=403), C.llm_auth),
], ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value))
def test_a_subclass_not_listed_takes_its_nearest_listed_base(exc: BaseException, category: C) -> None:
    assert category_of(exc) is category


def test_a_subclass_listed_itself_wins_over_its_base() -> None:
    assert (category_of(LLMAuthError("no")), category_of(LLMError("no"))) == (C.llm_auth, C.llm_error)


@pytest.mark.parametrize("outcome", [o for o in Outcome if o is not Outcome.complete])
def test_a_task_not_done_fails_with_its_outcomes_category(outcome: Outcome) -> None:
    result = failure(TaskNotDone(outcome, "the task is not done", said="The shop wants a login first."))
    assert result.category is outcome.category and result.category.value == outcome.value
    assert result.error == "the task is not done: The shop wants a login first."


@pytest.mark.parametrize("exc", [Cancelled("while paused"), SlotWaitCancelled("shop.test")],
                         ids=["Cancelled", "SlotWaitCancelled"])
def test_a_cancel_is_cancelled_with_no_category(exc: BaseException) -> None:
    result = failure(exc)
    assert (result.status, result.category, result.error) == (JobStatus.cancelled, None, str(exc))


def test_an_error_the_table_does_not_know_is_internal_says_so_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    try:
        {}["price"]
    except KeyError as exc:
        with caplog.at_level(logging.ERROR, logger="browserd.failures"):
            result = failure(exc)
    assert (result.status, result.category) == (JobStatus.failed, C.internal)
    assert result.error == "internal error: KeyError: 'price'"
    logged = [r for r in caplog.records if r.name == "browserd.failures"]
    assert len(logged) == 1 and logged[0].levelno == logging.ERROR and logged[0].exc_info is not None


def test_a_listed_internal_error_is_named_as_it_is_and_not_logged_as_a_bug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="browserd.failures"):
        result = failure(JobVanished("0" * 32))
    assert (result.category, result.error) == (C.internal, "the job record vanished before it could run")
    assert [r for r in caplog.records if r.name == "browserd.failures"] == []
