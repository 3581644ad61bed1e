"""Which error is which failure: the one table that decides the category a job fails with.

Every part of a job's run raises typed errors (the pipeline's waits and features, the agent's
loop and actions, the browser layer) and none of them decides what the job's record says: this
module does, for all of them, in one place. ``CATEGORIES`` maps an error class to its category
(looked up along the class's MRO, so a subclass not listed takes its base's); ``failure`` applies
it, plus the three rules that look past the error itself:

* a lease the pool stopped (the job's pages passed their memory limit) is why the job failed,
  whatever error surfaced first (``resource_limit``);
* a job whose own upstream proxy failed failed because of it, whichever step noticed
  (``proxy_error``);
* a job that reached ``max_failures`` fails with its last failed step's category when that says
  more (``llm_timeout``: the model never answered within the step's limit; ``llm_truncated``: its
  answers were cut at max_tokens).

Anything not in the table is a bug in browserd: ``internal``, logged with its traceback. A user's
mistake (a profile, credential set or recipe that does not exist) has a category of its own, so
metrics and alerts never count a tenant's typo as browserd's fault.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import cdp
from workers.agent.errors import (
    ActionError,
    Cancelled,
    EgressUnavailable,
    HostUnresolved,
    HumanTimeout,
    InvalidOutput,
    JobTimeout,
    LLMAuthError,
    LLMBadRequestError,
    LLMBudgetSpent,
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
    Stuck,
    TaskNotDone,
    Unverified,
    URLBlocked,
)
from workers.agent.profiles import ProfileUnavailable
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
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.politeness.slots import SlotWaitCancelled, SlotWaitExpired
from workers.jobs.profiles.models import ProfileMissing
from workers.jobs.secrets.sealing import SecretsUnavailable

log = logging.getLogger("browserd.failures")

CANCELLED: tuple[type[BaseException], ...] = (Cancelled, SlotWaitCancelled)
"""Errors that end a job as ``cancelled`` (its owner asked), with no category."""

CATEGORIES: dict[type[BaseException], FailureCategory] = {
    # the job's own limits
    JobTimeout: FailureCategory.timeout,
    StepTimeout: FailureCategory.timeout,
    PausedTooLong: FailureCategory.timeout,
    HumanTimeout: FailureCategory.human_timeout,
    SlotWaitExpired: FailureCategory.timeout,
    BrowserWaitExpired: FailureCategory.timeout,
    RunBackstop: FailureCategory.timeout,
    HardLimitReached: FailureCategory.timeout,
    MaxStepsReached: FailureCategory.max_steps,
    MaxFailuresReached: FailureCategory.max_failures,
    Stuck: FailureCategory.stuck,  # a loop the agent was told about and went on with
    LLMOutputError: FailureCategory.max_failures,
    LLMTimeout: FailureCategory.llm_timeout,  # as the cause of MaxFailuresReached (below)
    LLMTruncated: FailureCategory.llm_truncated,  # likewise
    # the model endpoint
    LLMAuthError: FailureCategory.llm_auth,
    LLMForbiddenError: FailureCategory.llm_auth,  # 403: the key may not use this model (docs/jobs.md)
    LLMBadRequestError: FailureCategory.llm_bad_request,
    LLMError: FailureCategory.llm_error,
    LLMProviderError: FailureCategory.llm_error,
    LLMBudgetSpent: FailureCategory.llm_budget,  # the job's own LLM budget (tokens, seconds)
    # the page and the policy
    URLBlocked: FailureCategory.url_blocked,
    SecretDomainRefused: FailureCategory.secret_domain_refused,  # nothing was typed; the job ends
    HostUnresolved: FailureCategory.dns_error,
    ActionError: FailureCategory.action_error,
    InvalidOutput: FailureCategory.invalid_output,
    Unverified: FailureCategory.unverified,  # a claimed success the run does not show
    ResultTooLarge: FailureCategory.invalid_output,
    SchemaCheckExpired: FailureCategory.invalid_output,  # the data could not be shown valid in time
    ProxyFailed: FailureCategory.proxy_error,
    PageRequeued: FailureCategory.blocked_by_site,  # the site refused it; another job visits the page again
    # the browser
    ResourceLimit: FailureCategory.resource_limit,
    cdp.ResourceLimitExceeded: FailureCategory.resource_limit,
    cdp.BrowserGone: FailureCategory.browser_crash,
    cdp.TargetCrashed: FailureCategory.browser_crash,
    # what the job names and the tenant must fix
    ProfileMissing: FailureCategory.profile_missing,
    CredentialsMissing: FailureCategory.credentials_missing,
    RecipeUnavailable: FailureCategory.recipe_unavailable,
    InputFileMissing: FailureCategory.input_file_missing,
    # browserd's own configuration or state: the operator's to fix
    ProfileUnavailable: FailureCategory.internal,
    SecretsUnavailable: FailureCategory.internal,
    EgressUnavailable: FailureCategory.internal,
    JobVanished: FailureCategory.internal,
}


TELLING_CAUSES = frozenset({FailureCategory.llm_timeout, FailureCategory.llm_truncated})
"""Categories of a step failure that say why ``max_failures`` was reached better than
``max_failures`` does: a job whose last failed step was one of them fails with it."""


def category_of(exc: BaseException) -> FailureCategory | None:
    """The table's category for ``exc`` (its most specific listed class), None when unlisted."""
    if isinstance(exc, TaskNotDone):  # the models' own word on why the task is not done
        return exc.outcome.category
    if isinstance(exc, MaxFailuresReached) and exc.cause is not None:
        cause = category_of(exc.cause)
        if cause in TELLING_CAUSES:
            return cause
    for kind in type(exc).__mro__:
        if kind in CATEGORIES:
            return CATEGORIES[kind]
    return None


def failure(exc: BaseException, *, lease: cdp.Lease | None = None, started: datetime | None = None) -> JobResult:
    """The result of a run that ``exc`` ended (in ``lease``, when it had one)."""
    now = datetime.now(UTC)
    if isinstance(exc, CANCELLED):
        return JobResult(status=JobStatus.cancelled, error=str(exc), started_at=started, finished_at=now)
    stopped = lease.stopped if lease is not None else None
    if isinstance(stopped, cdp.ResourceLimitExceeded):
        category, message = FailureCategory.resource_limit, str(ResourceLimit(str(stopped)))
    elif stopped is not None:  # the pool stopped the lease for its browser's sake (a lost network service)
        category, message = category_of(stopped), str(stopped)
    else:
        category, message = category_of(exc), str(exc)
    if category is None:
        log.error("job failed on an unexpected error", exc_info=exc)
        category, message = FailureCategory.internal, f"internal error: {type(exc).__name__}: {exc}"
    return JobResult(status=JobStatus.failed, category=category, error=message, started_at=started, finished_at=now)


def blame_proxy(result: JobResult, lease: cdp.Lease | None) -> JobResult:
    """A job that failed after its own proxy failed failed because of it (whatever step noticed)."""
    gate = lease.egress if lease is not None else None
    trouble = gate.upstream_failure if gate is not None else None
    if result.status != JobStatus.failed or trouble is None or result.category == FailureCategory.proxy_error:
        return result
    return result.model_copy(update={"category": FailureCategory.proxy_error, "error": str(ProxyFailed(trouble))})


SESSION_ENDERS = frozenset({FailureCategory.browser_crash, FailureCategory.resource_limit, FailureCategory.internal})
"""A run that failed so leaves no browser worth keeping for a follow-up."""
