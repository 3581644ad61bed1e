"""Typed failures of an agent job.

Each error knows the job's failure category and whether it ends the job at once (``fatal``) or
only counts towards ``max_failures`` so that the model can try something else.
"""

from __future__ import annotations

from workers.models import FailureCategory


class AgentError(Exception):
    """Base of every agent failure; ``category`` is what the job fails with if this ends it."""

    category: FailureCategory = FailureCategory.internal
    fatal: bool = True


class Cancelled(AgentError):
    """The job was cancelled by its owner; the result's status is ``cancelled``."""

    def __init__(self, where: str = "") -> None:
        self.where = where
        super().__init__(f"cancelled{' ' + where if where else ''}")


class LLMError(AgentError):
    """The model endpoint failed after the retries (5xx, rate limit, connection, timeout)."""

    category = FailureCategory.llm_error

    def __init__(self, message: str, *, role: str = "", model: str = "", status: int | None = None) -> None:
        self.role, self.model, self.status = role, model, status
        who = f"{role} model {model!r}" if role else f"model {model!r}"
        code = f" (HTTP {status})" if status else ""
        super().__init__(f"{who}{code}: {message}")


class LLMAuthError(LLMError):
    """401: the API key was refused. Retrying cannot help."""

    category = FailureCategory.llm_auth


class LLMForbiddenError(LLMError):
    """403: the key may not use this model or endpoint."""

    category = FailureCategory.llm_auth


class LLMBadRequestError(LLMError):
    """400/404/422: the endpoint refused the request itself (unknown model, context too long)."""

    category = FailureCategory.llm_bad_request


class LLMOutputError(AgentError):
    """The model answered but not in a shape we can act on; counts towards max_failures."""

    category = FailureCategory.max_failures
    fatal = False

    def __init__(self, message: str, *, raw: str = "") -> None:
        self.raw = raw
        super().__init__(message)


class URLBlocked(AgentError):
    """A URL the job's policy refuses; the model reads ``blocked: …``."""

    category = FailureCategory.url_blocked

    def __init__(self, url: str, reason: str) -> None:
        self.url, self.reason = url, reason
        super().__init__(f"blocked: {reason}: {url}")


class ActionError(AgentError):
    """One action could not be done; the message is what the model reads next step."""

    category = FailureCategory.action_error
    fatal = False

    def __init__(self, message: str, *, action: str = "", index: int | None = None) -> None:
        self.action, self.index = action, index
        super().__init__(message)


class ElementGone(ActionError):
    """The index the model chose is not on the page any more."""

    def __init__(self, index: int, *, action: str = "") -> None:
        super().__init__(f"element {index} no longer exists", action=action, index=index)


class StepTimeout(AgentError):
    """One step took longer than its limit; counts towards max_failures."""

    category = FailureCategory.timeout
    fatal = False

    def __init__(self, step: int, seconds: float) -> None:
        self.step, self.seconds = step, seconds
        super().__init__(f"step {step} timed out after {seconds:g}s")


class JobTimeout(AgentError):
    """The whole job ran past its wall-clock limit."""

    category = FailureCategory.timeout

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"job timed out after {seconds:g}s")


class MaxStepsReached(AgentError):
    category = FailureCategory.max_steps

    def __init__(self, steps: int) -> None:
        super().__init__(f"the task was not completed within {steps} steps")


class MaxFailuresReached(AgentError):
    category = FailureCategory.max_failures

    def __init__(self, failures: int, last: str) -> None:
        self.last = last
        super().__init__(f"{failures} consecutive failures; last: {last}")


class InvalidOutput(AgentError):
    """The job's data does not satisfy its output schema."""

    category = FailureCategory.invalid_output

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("output does not match the schema: " + "; ".join(problems[:5]))
