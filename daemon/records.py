"""The job record as users see it, read from its Redis hash; and the entries of its event stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from workers.models import FailureCategory, JobResult, JobSpec, JobStatus, Priority

# Hash fields of ``P job:{id}`` (see daemon.keys). New fields may be added; readers ignore unknown ones.
JOB_FIELDS = (
    "id", "seq", "state", "spec", "priority", "labels", "idempotency_key", "batch", "max_steps", "step",
    "attempts", "worker", "created_at", "started_at", "first_command_at", "heartbeat_at", "finished_at",
    "updated_at", "category", "error", "result", "cancel_requested",
)


class Progress(BaseModel):
    step: int = Field(0, description="Steps completed in the current attempt.")
    max_steps: int = Field(0, description="Step budget of the job.")


class JobRecord(BaseModel):
    """A job's state, progress and (once finished) result."""

    id: str
    state: JobStatus
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict)
    idempotency_key: str | None = None
    attempts: int = Field(0, description="Times a worker started the job (a redelivery after a lost worker adds one).")
    worker: str | None = Field(None, description="Worker that ran (or runs) the latest attempt.")
    progress: Progress = Field(default_factory=Progress)
    cancel_requested: bool = False
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
            idempotency_key=raw.get("idempotency_key") or None,
            attempts=int(raw.get("attempts") or 0),
            worker=raw.get("worker") or None,
            progress=Progress(step=int(raw.get("step") or 0), max_steps=int(raw.get("max_steps") or 0)),
            cancel_requested=raw.get("cancel_requested") == "1",
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
