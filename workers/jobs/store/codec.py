"""The job record's Redis hash: which fields it holds, and how they are written and read back.

``P job:{id}`` (``keys``) is a hash of strings. This module and the Lua scripts (``lua/*.lua``)
are the only code that knows its fields: every other module asks ``JobStore`` (``store.jobs``),
which reads and writes through the functions here, for a typed view (``JobRecord``, ``JobEnd``,
``JobLiveness``, ``RunFlags``). New fields may be added; readers ignore the ones they do not know.

======================  ==========================================================================
field                   holds
======================  ==========================================================================
``id``, ``seq``         the job id; its creation order (``jobs:seq``), its score in every index
``state``               a ``JobStatus`` value
``spec``                the ``JobSpec`` as JSON (secrets sealed; ``None`` fields left out)
``priority``            a ``Priority`` value
``labels``              the labels, a JSON object
``idempotency_key``     the key, or empty
``batch``               the batch id, when a batch created it (its transitions count in the batch)
``schedule``            the schedule id, when a schedule's run created it
``webhook_url``         where the ``job.finished`` webhook goes, or empty
``max_steps``, ``step`` the step budget; the steps the current attempt completed
``attempts``            times a worker started the job: the current run's fencing token
``worker``              the worker running (or that ran) the latest attempt
``*_at``                epoch seconds: ``created_at``, ``started_at``, ``first_command_at``,
                        ``heartbeat_at``, ``finished_at``, ``updated_at``, ``paused_at``,
                        ``reconciled_at`` (the reconciler last sent the job again)
``category``, ``error`` why the latest run failed: a ``FailureCategory`` value, the message
``result``              the latest run's ``JobResult`` as JSON
``cancel_requested``    ``1`` once a cancel was asked
``paused``              ``1`` while a pause is asked (``paused_at`` since when)
``waiting_for_human``   while the job waits for a human (``request_human``): the agent's reason;
                        ``human_until`` when the wait ends; ``human_requests`` how many it made
``inputs``              values pushed to the running job (``POST .../input``): a JSON object, name
                        -> the value sealed with BROWSERD_SECRETS_KEY
``session``             a kept session (``options.keep_session``): ``kept`` or ``closed``
                        (``SessionState``); ``session_until`` when it closes, ``session_note`` why
                        it closed
``runs``, ``run:{n}``   a job that keeps its session: how many runs, and each run's ``RunRecord``
                        JSON
======================  ==========================================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from workers.jobs.model.record import JobEvent, JobRecord, Progress
from workers.jobs.model.result import JobResult, RunRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus, Priority, SessionState

RUN_FIELD = "run:"
"""``run:{n}``: the record (``RunRecord`` JSON) of run n of a job that keeps its session."""
FLAG_FIELDS = ("cancel_requested", "paused")
END_FIELDS = ("state", "category", "error", "batch", "labels", "runs", "created_at", "started_at", "finished_at",
              "tenant")
LIVENESS_FIELDS = ("state", "priority", "spec", "created_at", "heartbeat_at", "reconciled_at", "tenant",
                   "attempts")


def now() -> float:
    """The clock the store stamps records with (epoch seconds)."""
    return datetime.now(UTC).timestamp()


def _when(value: str | None) -> datetime | None:
    return datetime.fromtimestamp(float(value), UTC) if value else None


def _seconds(value: str | None) -> float | None:
    return float(value) if value else None


# --- writing ----------------------------------------------------------------------------------


def create_fields(spec: JobSpec, max_steps: int, *, batch: str | None = None,
                  schedule: str | None = None, tenant: str | None = None,
                  admission: str | None = None) -> dict[str, Any]:
    """The fields a new job's hash is created with (``job_create.lua`` adds id, seq, created_at,
    attempts and state): ``batch`` and ``schedule`` only for a job a batch (a schedule's run) made,
    ``tenant`` only for a tenant's job (the operator's have none), ``admission`` only for one
    admitted on its quotas (the token its creation counts off the reservation, ``tenants.quotas``)."""
    return {
        "spec": spec.model_dump_json(exclude_none=True),
        "priority": spec.priority.value,
        "labels": json.dumps(spec.labels),
        "idempotency_key": spec.idempotency_key or "",
        "max_steps": max_steps,
        "webhook_url": str(spec.webhook_url) if spec.webhook_url else "",
        **({"batch": batch} if batch else {}),
        **({"schedule": schedule} if schedule else {}),
        **({"tenant": tenant} if tenant else {}),
        **({"admission": admission} if admission else {}),
    }


# --- reading: the whole record ------------------------------------------------------------------


def record_of(raw: dict[str, str], *, with_result: bool = True) -> JobRecord | None:
    """The record a hash holds (None when it holds none: the key expired); without ``with_result``,
    as listings show it (no spec, no results)."""
    if not raw.get("state"):
        return None
    return JobRecord(
        id=raw["id"],
        state=JobStatus(raw["state"]),
        priority=Priority(raw.get("priority") or "normal"),
        labels=json.loads(raw.get("labels") or "{}"),
        batch=raw.get("batch") or None,
        schedule=raw.get("schedule") or None,
        tenant=raw.get("tenant") or None,
        idempotency_key=raw.get("idempotency_key") or None,
        attempts=int(raw.get("attempts") or 0),
        worker=raw.get("worker") or None,
        progress=Progress(step=int(raw.get("step") or 0), max_steps=int(raw.get("max_steps") or 0)),
        cancel_requested=raw.get("cancel_requested") == "1",
        paused=raw.get("paused") == "1",
        paused_at=_when(raw.get("paused_at")),
        waiting_for_human=raw.get("waiting_for_human") or None,
        human_until=_when(raw.get("human_until")),
        session=SessionState(raw["session"]) if raw.get("session") else None,
        session_until=_when(raw.get("session_until")),
        session_note=raw.get("session_note") or None,
        runs=runs_of(raw, with_result=with_result),
        category=FailureCategory(raw["category"]) if raw.get("category") else None,
        error=raw.get("error") or None,
        created_at=_when(raw.get("created_at")),
        started_at=_when(raw.get("started_at")),
        first_command_at=_when(raw.get("first_command_at")),
        heartbeat_at=_when(raw.get("heartbeat_at")),
        finished_at=_when(raw.get("finished_at")),
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


def event_of(entry_id: str, fields: dict[str, str]) -> JobEvent:
    """One entry of the job's event stream (``P job:{id}:events``: fields ``type`` and ``data`` JSON)."""
    return JobEvent(id=entry_id, type=fields.get("type", "unknown"), data=json.loads(fields.get("data") or "{}"))


# --- reading: views for one purpose ---------------------------------------------------------------


@dataclass(frozen=True)
class RunFlags:
    """What the job's owner asked of a running job (the worker reads them every tick)."""

    cancel: bool = False
    pause: bool = False


def flags_of(row: list[str | None]) -> RunFlags:
    """``FLAG_FIELDS`` as ``HMGET`` returned them."""
    return RunFlags(cancel=row[0] == "1", pause=row[1] == "1")


@dataclass(frozen=True)
class ResultHead:
    """What a result says outside its steps: read from the result JSON for webhooks and batch results."""

    final_answer: str | None = None
    data: Any = None
    error: str | None = None
    result_artifact: str | None = None
    cost_usd: float | None = None
    reused_from: str | None = None


@dataclass(frozen=True)
class JobEnd:
    """How a job ended (or stands), without its spec and steps: what metrics, webhooks and a batch's
    results need. ``head`` is empty unless it was read ``with_result`` and the job has a result."""

    job_id: str
    state: JobStatus
    category: FailureCategory | None
    error: str | None
    batch: str | None
    labels: dict[str, str]
    runs: int  # 1 for a job that never ran a follow-up
    created_at: float | None
    started_at: float | None
    finished_at: float | None
    head: ResultHead = ResultHead()
    tenant: str | None = None  # the tenant whose key submitted it; None: the operator's


def end_of(job_id: str, row: list[str | None], result: str | None = None) -> JobEnd | None:
    """``END_FIELDS`` (and the ``result`` field, if read) as ``HMGET`` returned them; None when the
    record is gone."""
    state, category, error, batch, labels, runs, created, started, finished, tenant = row
    if not state:
        return None
    parsed = json.loads(result) if result else {}
    head = ResultHead(final_answer=parsed.get("final_answer"), data=parsed.get("data"), error=parsed.get("error"),
                      result_artifact=parsed.get("result_artifact"), cost_usd=parsed.get("cost_usd"),
                      reused_from=parsed.get("reused_from"))
    return JobEnd(job_id=job_id, state=JobStatus(state), category=FailureCategory(category) if category else None,
                  error=error or None, batch=batch or None, labels=json.loads(labels) if labels else {},
                  runs=int(runs or 1), created_at=_seconds(created), started_at=_seconds(started),
                  finished_at=_seconds(finished), head=head, tenant=tenant or None)


@dataclass(frozen=True)
class JobLiveness:
    """Whether a job moves: what the reconciler needs to find one nobody runs or nobody queued."""

    job_id: str
    state: JobStatus
    priority: Priority
    timeout: float | None  # the spec's own timeout (None: the settings')
    created_at: float | None
    heartbeat_at: float | None
    reconciled_at: float | None  # when the reconciler last sent it again
    tenant: str | None = None  # a tenant's job goes back to its fair dispatch, not straight to the broker
    attempts: int = 0  # attempts started so far
    allow_human: bool = False  # options.allow_human: its message's limit holds the wait for humans too
    human_timeout: float | None = None  # options.human_timeout (None: the settings')


def liveness_of(job_id: str, row: list[str | None]) -> JobLiveness | None:
    """``LIVENESS_FIELDS`` as ``HMGET`` returned them; None when the record is gone."""
    state, priority, spec, created, beat, resent, tenant, attempts = row
    if not state:
        return None
    parsed = json.loads(spec or "{}")
    timeout, options = parsed.get("timeout"), parsed.get("options") or {}
    human = options.get("human_timeout")
    return JobLiveness(job_id=job_id, state=JobStatus(state), priority=Priority(priority or "normal"),
                       timeout=float(timeout) if timeout else None, created_at=_seconds(created),
                       heartbeat_at=_seconds(beat), reconciled_at=_seconds(resent), tenant=tenant or None,
                       attempts=int(attempts or 0), allow_human=bool(options.get("allow_human")),
                       human_timeout=float(human) if human else None)
