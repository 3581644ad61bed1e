"""``JobRun``: one job as it passes through the pipeline's stages, and what each stage added to it.

The pipeline creates it when a delivery claims a job and hands the same object to every stage
and every feature, so the data of a run has one obvious path: the spec the claim found, the time
budget made at the claim, the agent's inputs the features fill in before the browser opens, the
lease, the session, and (once it ran) its result. Features keep their own per-run state in it by
type (``put``/``get``), so adding a feature never adds a field here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import cdp
from workers.agent import JobInputs, JobSession
from workers.jobs.budget import TimeBudget
from workers.jobs.model.spec import JobSpec

T = TypeVar("T")


@dataclass
class Keep:
    """A kept session's word on the run just ended, recorded with its result: the session stays
    open ``until`` (epoch seconds) for a follow-up, or is ``closed`` (why)."""

    until: float | None = None
    closed: str | None = None


@dataclass
class JobRun:
    """One job in one delivery: ``attempt`` fences everything it writes; ``number`` is the run of a
    kept session (1: the job's own task; a follow-up's, 2, 3, ...) and ``task`` a follow-up's task."""

    job_id: str
    attempt: int
    spec: JobSpec
    budget: TimeBudget
    inputs: JobInputs  # the agent's inputs: features fill them in, the lease comes last
    lease: cdp.Lease | None = None
    session: JobSession | None = None
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)  # what the job holds: slot, lease, session
    number: int = 1
    task: str | None = None
    tenant: str | None = None  # whose job it is (None: the operator's): its named objects are looked up as its
    cancelled: bool = False  # the owner's cancel, as the worker's ticker read it
    paused: bool = False
    owner_cancel: Callable[[], bool] | None = None  # a cancel read directly (a local run's Ctrl-C)
    keep: Keep | None = None  # set by the kept-sessions feature before the result is recorded
    recorded: bool = False  # the latest run's result was recorded (the run still owned the job)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)
    _slots: dict[type, object] = field(default_factory=dict)

    def put(self, value: object) -> None:
        """Keep a feature's per-run state (one value per type)."""
        self._slots[type(value)] = value

    def get(self, kind: type[T]) -> T | None:
        """The value of type ``kind`` a feature kept, if any."""
        found = self._slots.get(kind)
        return found if isinstance(found, kind) else None

    def is_cancelled(self) -> bool:
        return self.cancelled or bool(self.owner_cancel and self.owner_cancel())

    def is_paused(self) -> bool:
        return self.paused
