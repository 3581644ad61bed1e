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
    """Base of the kernel's own errors."""


@dataclass(frozen=True)
class FieldProblem:
    """One bad field of a submitted spec: ``options.max_steps``, ``jobs[3].script``, ``body``."""

    field: str
    message: str


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
        problems = [FieldProblem(prefix if p.field == "body" else f"{prefix}.{p.field}", p.message)
                    for p in self.problems]
        return SpecError(problems, f"{prefix}: {self.summary}" if len(problems) == 1 else None)


class QueueUnavailable(JobsError):
    """Records were written but their messages could not be published; the caller cancelled them."""
