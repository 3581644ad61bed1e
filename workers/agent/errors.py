"""Typed failures of an agent job.

Each error knows whether it ends the job at once (``fatal``) or only counts towards
``max_failures`` so that the model can try something else. Which category a job that one of them
ended fails with is decided in one place, ``workers.agent.failures``.
"""

from __future__ import annotations

from collections.abc import Sequence

from workers.jobs.model.status import Outcome


class AgentError(Exception):
    """Base of every agent failure (its category: ``workers.agent.failures``)."""

    fatal: bool = True


class Cancelled(AgentError):
    """The job was cancelled by its owner; the result's status is ``cancelled``."""

    def __init__(self, where: str = "") -> None:
        self.where = where
        super().__init__(f"cancelled{' ' + where if where else ''}")


class LLMError(AgentError):
    """The model endpoint failed after the retries (5xx, rate limit, connection, timeout)."""


    def __init__(self, message: str, *, role: str = "", model: str = "", status: int | None = None) -> None:
        self.role, self.model, self.status = role, model, status
        who = f"{role} model {model!r}" if role else f"model {model!r}"
        code = f" (HTTP {status})" if status else ""
        super().__init__(f"{who}{code}: {message}")


class LLMAuthError(LLMError):
    """401: the API key was refused. Retrying cannot help."""



class LLMForbiddenError(LLMError):
    """403: the key may not use this model or endpoint."""



class LLMBadRequestError(LLMError):
    """400/404/422: the endpoint refused the request itself (unknown model, context too long)."""



class LLMBudgetSpent(AgentError):
    """The job spent its LLM budget (``options.max_tokens_total``, ``options.max_llm_seconds`` or their
    settings): it ends at once, its steps kept (``workers.agent.allowance``)."""

    def __init__(self, message: str, *, role: str = "") -> None:
        super().__init__(message)
        self.role = role


class LLMProviderError(AgentError):
    """``BROWSERD_LLM_PROVIDER`` names no usable chat model class, or the class refuses a setting."""


    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"BROWSERD_LLM_PROVIDER={path!r}: {reason}")


class LLMOutputError(AgentError):
    """The model answered but not in a shape we can act on; counts towards max_failures.

    ``reply`` is the ``workers.agent.llm.LLMReply`` the answer came in, once the call layer has
    attached it: an unusable answer was still served and paid for, so its tokens are charged."""

    fatal = False

    def __init__(self, message: str, *, raw: str = "") -> None:
        self.raw = raw
        self.reply: object | None = None
        super().__init__(message)


class LLMTruncated(LLMOutputError):
    """The answer stopped at the role's ``max_tokens``: it is cut, so unusable; the model is told to
    answer shorter and the step counts towards max_failures."""

    def __init__(self, role: str, cap: int | None, *, raw: str = "") -> None:
        self.role, self.cap = role, cap
        limit = f" ({cap})" if cap else ""
        super().__init__(f"the {role} answer was cut at max_tokens{limit}: answer shorter", raw=raw)


class URLBlocked(AgentError):
    """A URL the job's policy refuses; the model reads ``blocked: URL: why``. The URL comes first
    because the reason ends with what would open it (a flag, a job field, a setting)."""

    def __init__(self, url: str, reason: str) -> None:
        self.url, self.reason = url, reason
        super().__init__(f"blocked: {url}: {reason}")


class HostUnresolved(AgentError):
    """A URL whose host name does not resolve (a typo, a name only another network knows): the
    job's ``dns_error``, not a refusal by the policy."""

    def __init__(self, url: str, reason: str) -> None:
        self.url, self.reason = url, reason
        super().__init__(f"{reason}: {url}")


class SecretDomainRefused(AgentError):
    """A secret bound to domains (a credential set's ``domains``, a job's ``secret_domains``) was about
    to be typed into a frame elsewhere: nothing was typed, and the job ends (``secret_domain_refused``)."""

    def __init__(self, name: str, url: str | None, domains: Sequence[str]) -> None:
        self.name, self.url, self.domains = name, url, list(domains)
        where = url[:200] if url else "a frame with no address"
        super().__init__(f"secret {name!r} may be typed only on {', '.join(domains)}; refused on {where}")


class ActionError(AgentError):
    """One action could not be done; the message is what the model reads next step."""

    fatal = False

    def __init__(self, message: str, *, action: str = "", index: int | None = None) -> None:
        self.action, self.index = action, index
        super().__init__(message)


class ElementGone(ActionError):
    """The index the model chose is not on the page any more."""

    def __init__(self, index: int, *, action: str = "") -> None:
        super().__init__(f"element {index} no longer exists", action=action, index=index)


class ElementNotFound(ActionError):
    """A script's locator (selector, text, role and name, recorded locator) named no element, or
    several: the message names what it found (``dom.LocatorError``'s candidates)."""

    def __init__(self, message: str, *, action: str = "", ambiguous: bool = False) -> None:
        self.ambiguous = ambiguous
        super().__init__(message, action=action)


class ResourceLimit(AgentError):
    """The job's pages passed the per-context memory limit and were stopped by the pool."""



class StepTimeout(AgentError):
    """One step took longer than its limit; counts towards max_failures."""

    fatal = False

    def __init__(self, step: int, seconds: float) -> None:
        self.step, self.seconds = step, seconds
        super().__init__(f"step {step} timed out after {seconds:g}s")


class LLMTimeout(StepTimeout):
    """A step's model call was still unanswered (or still being retried) at the step's limit; counts
    towards max_failures, and names the job's category (``llm_timeout``) when it ends the job."""

    def __init__(self, step: int, seconds: float, *, role: str, model: str, detail: str = "") -> None:
        StepTimeout.__init__(self, step, seconds)
        self.role, self.model = role, model
        last = f" (last attempt: {detail})" if detail else ""
        self.args = (f"step {step}: the {role} model {model!r} gave no answer within the step's limit of "
                     f"{seconds:g}s{last}",)


class JobTimeout(AgentError):
    """The whole job ran past its wall-clock limit."""


    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"job timed out after {seconds:g}s")


class PausedTooLong(AgentError):
    """A paused job was not resumed in time: it held its browser as long as it may."""


    def __init__(self, seconds: float, *, job_limit: bool = False) -> None:
        self.seconds = seconds
        bound = ("until the job's own time limit ran out" if job_limit
                 else "the longest a paused job may hold its browser (BROWSERD_PAUSE_MAX_SECONDS)")
        super().__init__(f"the job stayed paused for {seconds:.0f}s, {bound}; it was not resumed")


class HumanTimeout(AgentError):
    """The agent asked a human (``request_human``) and nobody handed the job back within its
    ``human_timeout``: the job let go of its browser."""

    def __init__(self, reason: str, seconds: float) -> None:
        self.reason, self.seconds = reason, seconds
        super().__init__(f"the agent asked a human ({reason}) and nobody handed the job back within "
                         f"{seconds:.0f}s (options.human_timeout)")


class MaxStepsReached(AgentError):

    def __init__(self, steps: int) -> None:
        super().__init__(f"the task was not completed within {steps} steps")


class MaxFailuresReached(AgentError):
    """``max_failures`` steps failed in a row; ``cause`` is the last step's error, which names the
    job's category when it says more than "failures" (a model that never answers in time, answers cut
    at max_tokens)."""

    def __init__(self, failures: int, last: str, cause: BaseException | None = None) -> None:
        self.last, self.cause = last, cause
        super().__init__(f"{failures} consecutive failures; last: {last}")


class InvalidOutput(AgentError):
    """The job's data does not satisfy its output schema."""


    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("output does not match the schema: " + "; ".join(problems[:5]))


class TaskNotDone(AgentError):
    """The models ended the task without completing it: gave up, ran out of steps with partial
    findings, hit a sign-in wall, refused, or were blocked by the site. What was found is kept;
    ``outcome`` (never ``complete``) is the reason, and its category the job's."""

    def __init__(self, outcome: Outcome, explanation: str, said: str = "") -> None:
        self.outcome, self.said = outcome, said
        detail = " ".join(said.split())
        super().__init__(f"{explanation}: {detail[:300]}" if detail else explanation)


class Unverified(AgentError):
    """The models claimed the task done, and browserd could not show it from what the run recorded
    (workers/agent/validator.py), after the agent was told why and given more steps."""

    def __init__(self, reason: str, rejections: int) -> None:
        self.reason, self.rejections = reason, rejections
        super().__init__(f"the claimed success could not be verified ({rejections} claims refused): {reason}")


class Stuck(AgentError):
    """The agent repeated the same actions on an unchanged page (or around the same cycle of pages)
    after it was told it was looping (``workers.agent.loops``): more steps would only repeat them."""

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        super().__init__(f"the agent was stuck: it repeated the same actions on an unchanged page {repeats} times, "
                         "and went on after it was told it was looping")


class EgressUnavailable(AgentError):
    """The lease has no gate on the egress proxy, so the job's policy could not be enforced on
    everything its browser does; the job does not start (default-deny)."""

    def __init__(self) -> None:
        super().__init__("the browser context has no egress proxy: refusing to run a job whose network "
                         "policy cannot be enforced (create the pool with PoolConfig.egress set)")


class ProxyFailed(AgentError):
    """The job's own upstream proxy failed (unreachable, credentials refused, not a proxy): nothing
    the model can do about it, so the job ends at once. The message never holds the password."""


    def __init__(self, failure: str) -> None:
        self.failure = failure
        super().__init__(f"the job's proxy failed: {failure}")
