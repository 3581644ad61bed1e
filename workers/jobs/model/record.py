"""A job as users see it: its record (state, progress, result, runs), the answers that carry it,
and the entries of its event stream.

Pure pydantic: how these are kept in Redis is the store's business (``store.codec``).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from workers.jobs.model.result import JobResult, RunRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus, Priority, SessionState


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
    tenant: str | None = Field(None, description="The tenant whose key submitted the job; null: the operator's.")
    idempotency_key: str | None = None
    attempts: int = Field(0, description="Times a worker started the job (a redelivery after a lost worker adds one).")
    worker: str | None = Field(None, description="Worker that ran (or runs) the latest attempt, by its Celery node name "
                               "(as Flower, `celery inspect` and Prometheus name it).")
    progress: Progress = Field(default_factory=Progress)
    cancel_requested: bool = False
    paused: bool = Field(False, description="A pause was asked (POST .../pause): the agent stops between steps "
                         "and holds its browser until resumed (POST .../resume), cancelled, or "
                         "BROWSERD_PAUSE_MAX_SECONDS.")
    paused_at: datetime | None = None
    waiting_for_human: str | None = Field(
        None, description="The job waits for a human (its agent used request_human; options.allow_human): why, in "
        "the agent's words. It holds its browser until handed back (POST .../hand-back, or .../input) or "
        "human_until, then fails human_timeout. The job's state stays running (and paused is true) meanwhile.")
    human_until: datetime | None = Field(None, description="When a job waiting for a human gives up.")
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


class EventType(StrEnum):
    """What one entry of a job's event stream is (SSE sends it as ``event:``). The store's scripts
    write ``state``, ``step``, the owner's requests and ``session``; the pipeline the other two."""

    state = "state"  # a state change: data has the state, attempt, run, worker, category
    step = "step"  # a step ended: data is its StepRecord
    cancel_requested = "cancel_requested"
    pause_requested = "pause_requested"
    resume_requested = "resume_requested"
    session = "session"  # the kept session closed: data has why
    waiting_for_human = "waiting_for_human"  # the agent asked a human: data has the reason and until when
    takeover = "takeover"  # an operator took the browser (state started: who, at) or gave it back (ended: seconds, counts)
    input = "input"  # a value was pushed to the job (POST .../input): data names it, never the value
    # the agent's execution events (Nanobrowser's actor x state model)
    agent = "agent"
    # a job's politeness waits and refusals (``workers.politeness``): data has ``kind`` (slot | navigation |
    # robots), ``state`` (waiting | acquired | refused), the ``domain`` (or ``url``) and what it waited
    politeness = "politeness"
    end = "end"  # closes a followed stream: the job (its last run) ended; never stored


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

    @property
    def final(self) -> bool:
        return self.type == EventType.state and JobStatus(self.data.get("state", "queued")).finished
