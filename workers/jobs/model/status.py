"""The words a job's state is told in: its status, why it failed, its priority, its kept session.

Enums (``StrEnum``), so they are compared by identity in the code and travel as their plain string
values in JSON, Redis and metric labels. Pure: no Redis, Celery or agent.
"""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    retrying = "retrying"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset({JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled})
"""States a job never leaves; the store's Lua scripts get the same set (``store.scripts`` writes it
into their ``is_final``)."""


class FailureCategory(StrEnum):
    """Why a job failed; bounded, so it can be a metrics label."""

    max_steps = "max_steps"
    max_failures = "max_failures"
    llm_auth = "llm_auth"
    llm_error = "llm_error"
    llm_bad_request = "llm_bad_request"
    llm_timeout = "llm_timeout"  # a step's model call was unanswered at the step's limit, max_failures times
    llm_truncated = "llm_truncated"  # the answers were cut at max_tokens, max_failures times
    llm_budget = "llm_budget"  # the job spent its LLM tokens or seconds (max_tokens_total, max_llm_seconds)
    url_blocked = "url_blocked"
    dns_error = "dns_error"  # a host name that does not resolve: a typo, or a name only another network knows
    browser_crash = "browser_crash"
    timeout = "timeout"
    worker_lost = "worker_lost"
    invalid_output = "invalid_output"
    action_error = "action_error"
    resource_limit = "resource_limit"
    internal = "internal"
    incomplete = "incomplete"  # the agent gave up or ran out of steps; its partial findings are in the result
    login_required = "login_required"  # the site asks to sign in and the task gives no credentials
    refused = "refused"  # the task is harmful or disallowed
    blocked_by_site = "blocked_by_site"  # a captcha or bot wall stopped the agent
    unverified = "unverified"  # the models said done, but what the run recorded does not show it (never a success)
    human_timeout = "human_timeout"  # it asked a human (request_human) and nobody handed it back in time
    stuck = "stuck"  # the agent repeated the same actions on an unchanged page after it was told it was looping
    proxy_error = "proxy_error"  # the job's own proxy was unreachable, refused its credentials or spoke nonsense
    # what the job names does not exist (any more): the tenant's mistake, not browserd's
    profile_missing = "profile_missing"  # the auth profile it starts from
    credentials_missing = "credentials_missing"  # the credential set it types from
    recipe_unavailable = "recipe_unavailable"  # the recipe it replays: deleted, marked broken, or changed
    input_file_missing = "input_file_missing"  # an input file's artifact: expired, gone, or another tenant's
    budget_exceeded = "budget_exceeded"  # its LLM calls cost max_cost_usd: stopped before the next one
    secret_domain_refused = "secret_domain_refused"  # a bound secret was to be typed on a page off its domains


class Outcome(StrEnum):
    """How an agent says a task ended: ``complete``, or why not (each reason is a failure category)."""

    complete = "complete"
    incomplete = "incomplete"
    login_required = "login_required"
    refused = "refused"
    blocked_by_site = "blocked_by_site"

    @property
    def category(self) -> FailureCategory | None:
        """The job's failure category, or None when the task is complete."""
        return None if self is Outcome.complete else FailureCategory(self.value)


class LlmOutcome(StrEnum):
    """How one request to a model ended (each retry is a request of its own): the agent's telemetry
    reports it, the ``outcome`` label of ``browserd_llm_requests`` counts it."""

    ok = "ok"
    error = "error"
    timeout = "timeout"
    rate_limited = "rate_limited"
    auth = "auth"
    bad_request = "bad_request"
    cancelled = "cancelled"


class Priority(StrEnum):
    high = "high"
    normal = "normal"
    low = "low"


class SessionState(StrEnum):
    """Where a job's kept session (``options.keep_session``) stands."""

    kept = "kept"  # the worker holds the browser context and history, waiting for a follow-up
    closed = "closed"  # the idle time passed, the job was cancelled, or the browser could not be kept
