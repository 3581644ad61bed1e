"""The job kernel's errors: typed, with the context a caller needs, and no HTTP in them.

The API turns them into responses at its edge (``daemon.api.errors``): ``SpecError`` is a 422
naming each bad field, ``QueueUnavailable`` a 503. A Celery task that meets one ends with it, not
with an HTTP status. Each concept's own errors live with it (``sessions.errors``,
``profiles.models``, ``artifacts.names``, ``secrets.sealing``, ``lifecycle.steering``); they all
derive from ``JobsError``.
"""

from __future__ import annotations

from dataclasses import dataclass


class JobsError(Exception):
    """Base of the kernel's own errors.

    Each survives pickling as it is (its class, message and context attributes): Celery pickles
    what a task raised to test it against the task's ``throws``, and an error that does not come
    back (a subclass whose ``__init__`` takes other arguments than its message) became an
    ``UnpickleableExceptionWrapper``, logged as an unexpected ERROR with a traceback (issue 25).
    """

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(kind: type[JobsError], args: tuple[object, ...], state: dict[str, object]) -> JobsError:
    """A pickled kernel error back, without calling its ``__init__`` (whose arguments differ)."""
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(state)
    return error


@dataclass(frozen=True)
class FieldProblem:
    """One bad field of a submitted spec: ``options.max_steps``, ``jobs[3].script``, ``body``; and,
    when a named bound refused it, which one (``limit``: ``branches`` of an output schema)."""

    field: str
    message: str
    limit: str | None = None


class SpecError(JobsError):
    """A job, batch or schedule spec that can never run; ``problems`` names each bad field."""

    def __init__(self, problems: list[FieldProblem], summary: str | None = None) -> None:
        self.problems = problems
        self.summary = summary or "; ".join(f"{p.field}: {p.message}" for p in problems[:5]) or "invalid spec"
        super().__init__(self.summary)

    @classmethod
    def at(cls, field: str, message: str) -> SpecError:
        """One problem, at one field."""
        return cls([FieldProblem(field, message)])

    def within(self, prefix: str) -> SpecError:
        """The same problems, inside a larger document (``jobs[3]`` + ``.script``)."""
        problems = [FieldProblem(prefix if p.field == "body" else f"{prefix}.{p.field}", p.message, p.limit)
                    for p in self.problems]
        return SpecError(problems, f"{prefix}: {self.summary}" if len(problems) == 1 else None)


class PageRequeued(JobsError):
    """A crawl's page job run again after its worker was lost, whose page the site had refused and
    another job of the crawl now visits (``crawl_retry.lua``): it does not visit the site again."""


class CrawlNotCancelled(JobsError):
    """Only a cancelled crawl may be resumed: this one completed, or is running (a resume already
    took it). The API answers 409."""


class QueueUnavailable(JobsError):
    """Records were written but their messages could not be published; the caller cancelled them."""


# --- why a run could not start or finish (the failure table, ``workers.agent.failures``, names
# each one's category) ------------------------------------------------------------------------


class CredentialsMissing(JobsError):
    """The credential set a job names does not exist (deleted after the job was submitted?): the
    tenant's to fix."""

    def __init__(self, name: str, detail: str | None = None) -> None:
        self.name = name
        super().__init__(detail or f"the credential set {name!r} does not exist (deleted after the job was submitted?)")


class InputFileMissing(JobsError):
    """An input file a job names by artifact is not there for it: the job that kept it expired, is
    another tenant's (told the same way, so no tenant learns of another's jobs), or no longer has
    the file: the tenant's to fix."""

    def __init__(self, job: str, name: str, detail: str | None = None) -> None:
        self.job, self.name = job, name
        super().__init__(detail or f"input file: job {job!r} has no artifact {name!r} of yours (expired, deleted, or "
                         "another tenant's job)")


class RecipeUnavailable(JobsError):
    """The recipe a job names was deleted, marked broken, or changed its parameters after the job was
    queued: the tenant's to fix."""


class JobVanished(JobsError):
    """The job's record was gone when its delivery came to run it."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        super().__init__("the job record vanished before it could run")


class BrowserWaitExpired(JobsError):
    """No browser context came free within the job's own limit."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        super().__init__(f"no browser was free within the job's {limit:g}s limit")


class RunBackstop(JobsError):
    """The run went past its limit and its grace without stopping; the pipeline stopped it."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        super().__init__(f"the job exceeded its {limit:g}s limit")


class ResultTooLarge(JobsError):
    """The result is larger than ``BROWSERD_MAX_RESULT_BYTES``."""

    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(f"the result is {size} bytes, above the limit of {limit} (BROWSERD_MAX_RESULT_BYTES)")


class HardLimitReached(JobsError):
    """The run ignored its soft limit and the backstop; its worker thread gave up on it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the job ignored its time limit and was stopped after {seconds:g}s")


class SchemaCheckExpired(JobsError):
    """Checking the result against the job's output schema took longer than its bound; the check,
    which runs off the worker's event loop, stopped itself there."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"checking the data against the output schema took longer than {seconds:g}s (the schema "
                         "check's limit); make the schema simpler (fewer anyOf/oneOf branches) or the data smaller")
