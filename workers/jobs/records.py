"""The job record as users see it, read from its Redis hash; and the entries of its event stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from workers.jobs.models import (
    FailureCategory,
    JobResult,
    JobSpec,
    JobStatus,
    Priority,
    RunRecord,
    SessionState,
)

# Hash fields of ``P job:{id}`` (see ``keys``). New fields may be added; readers ignore unknown ones.
JOB_FIELDS = (
    "id", "seq", "state", "spec", "priority", "labels", "idempotency_key", "batch", "max_steps", "step",
    "attempts", "worker", "created_at", "started_at", "first_command_at", "heartbeat_at", "finished_at",
    "updated_at", "category", "error", "result", "cancel_requested", "paused", "paused_at", "session",
    "session_until", "session_note", "runs",
)
RUN_FIELD = "run:"
"""``run:{n}``: the record (``RunRecord`` JSON) of run n of a job that keeps its session."""


class Progress(BaseModel):
    step: int = Field(0, description="Steps completed in the current attempt.")
    max_steps: int = Field(0, description="Step budget of the job.")


class JobRecord(BaseModel):
    """A job's state, progress and (once finished) result."""

    id: str
    state: JobStatus
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict)
    batch: str | None = Field(None, description="The batch the job belongs to, if any.")
    schedule: str | None = Field(None, description="The schedule whose run (a batch) created the job, if any.")
    idempotency_key: str | None = None
    attempts: int = Field(0, description="Times a worker started the job (a redelivery after a lost worker adds one).")
    worker: str | None = Field(None, description="Worker that ran (or runs) the latest attempt.")
    progress: Progress = Field(default_factory=Progress)
    cancel_requested: bool = False
    paused: bool = Field(False, description="A pause was asked (POST .../pause): the agent stops between steps "
                         "and holds its browser until resumed (POST .../resume), cancelled, or "
                         "BROWSERD_PAUSE_MAX_SECONDS.")
    paused_at: datetime | None = None
    session: SessionState | None = Field(None, description="For a job with options.keep_session: kept (a "
                                         "follow-up may be sent until session_until) or closed.")
    session_until: datetime | None = Field(None, description="When the kept session closes if no follow-up comes.")
    session_note: str | None = Field(None, description="Why the session closed.")
    runs: list[RunRecord] = Field(default_factory=list, description="A job that keeps its session: its task and "
                                  "each follow-up, oldest first, each with its own result; the job's result, state, "
                                  "category and error are the latest run's.")
    category: FailureCategory | None = Field(None, description="Why the job failed, when it did.")
    error: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    first_command_at: datetime | None = Field(None, description="When the job sent its first CDP command.")
    heartbeat_at: datetime | None = None
    finished_at: datetime | None = None
    spec: JobSpec | None = None
    result: JobResult | None = None
    seq: int = Field(0, description="Creation order; listing cursors refer to it.")

    @classmethod
    def from_hash(cls, raw: dict[str, str], *, with_result: bool = True) -> JobRecord:
        def when(name: str) -> datetime | None:
            value = raw.get(name)
            return datetime.fromtimestamp(float(value), UTC) if value else None

        return cls(
            id=raw["id"],
            state=JobStatus(raw["state"]),
            priority=Priority(raw.get("priority") or "normal"),
            labels=json.loads(raw.get("labels") or "{}"),
            batch=raw.get("batch") or None,
            schedule=raw.get("schedule") or None,
            idempotency_key=raw.get("idempotency_key") or None,
            attempts=int(raw.get("attempts") or 0),
            worker=raw.get("worker") or None,
            progress=Progress(step=int(raw.get("step") or 0), max_steps=int(raw.get("max_steps") or 0)),
            cancel_requested=raw.get("cancel_requested") == "1",
            paused=raw.get("paused") == "1",
            paused_at=when("paused_at"),
            session=SessionState(raw["session"]) if raw.get("session") else None,
            session_until=when("session_until"),
            session_note=raw.get("session_note") or None,
            runs=runs_of(raw, with_result=with_result),
            category=FailureCategory(raw["category"]) if raw.get("category") else None,
            error=raw.get("error") or None,
            created_at=when("created_at"),
            started_at=when("started_at"),
            first_command_at=when("first_command_at"),
            heartbeat_at=when("heartbeat_at"),
            finished_at=when("finished_at"),
            spec=JobSpec.model_validate_json(raw["spec"]) if with_result and raw.get("spec") else None,
            result=JobResult.model_validate_json(raw["result"]) if with_result and raw.get("result") else None,
            seq=int(raw.get("seq") or 0),
        )


def runs_of(raw: dict[str, str], *, with_result: bool) -> list[RunRecord]:
    """The ``run:{n}`` fields of a job hash, in run order (results left out for listings)."""
    runs = []
    for n in range(1, int(raw.get("runs") or 0) + 1):
        value = raw.get(f"{RUN_FIELD}{n}")
        if value:
            run = RunRecord.model_validate_json(value)
            runs.append(run if with_result else run.model_copy(update={"result": None}))
    return runs


AGENT_EVENT = "agent"
"""Stream entries of the agent's execution events (Nanobrowser's actor x state model), next to
the ``state``, ``step`` and ``cancel_requested`` entries; SSE sends them as ``event: agent``."""

POLITENESS_EVENT = "politeness"
"""Stream entries of a job's politeness waits and refusals (``workers.politeness``): ``data`` has
``kind`` (``slot`` | ``navigation`` | ``robots``), ``state`` (``waiting`` | ``acquired`` |
``refused``), the ``domain`` (or ``url``) and what it waited; SSE sends them as ``event: politeness``."""


class SubmittedJob(JobRecord):
    """The answer to a submission: the job, and whether this request created it."""

    created: bool = Field(description="False when the idempotency key matched an existing job.")


class FollowUpAccepted(JobRecord):
    """The answer to a follow-up: the job (running again), the run number, and where its events start."""

    run: int = Field(description="The follow-up's run number (the job's own task is run 1).")
    last_event_id: str = Field(description="Follow this run's events from here: pass it as Last-Event-ID to "
                               "GET /v1/jobs/{id}/events (earlier runs' events come before it).")


class JobPage(BaseModel):
    """One page of a listing, newest first."""

    jobs: list[JobRecord]
    next_cursor: int | None = Field(None, description="Pass as ?cursor= for the next (older) page.")


class JobEvent(BaseModel):
    """One entry of a job's event stream: a step, a state change, or a cancel request."""

    id: str = Field(description="Stream entry id; pass it back as Last-Event-ID to resume.")
    type: str
    data: dict[str, Any]

    @classmethod
    def from_entry(cls, entry_id: str, fields: dict[str, str]) -> JobEvent:
        return cls(id=entry_id, type=fields.get("type", "unknown"), data=json.loads(fields.get("data") or "{}"))

    @property
    def final(self) -> bool:
        return self.type == "state" and JobStatus(self.data.get("state", "queued")).finished


def now() -> float:
    return datetime.now(UTC).timestamp()
