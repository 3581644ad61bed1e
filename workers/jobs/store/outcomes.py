"""What the store's transitions answer: typed outcomes, with the same words the Lua scripts return.

Each enum's values are the strings a script returns (and the HTTP API and logs show), so callers
compare members (``claim.outcome is ClaimOutcome.run``), never strings. Pure: the API maps them to
statuses without touching Redis.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, NamedTuple

from workers.jobs.model.status import JobStatus


class ClaimOutcome(StrEnum):
    """What ``JobStore.start`` decided for one delivery of a job (``job_start.lua``)."""

    run = "run"  # this delivery runs the job, as attempt ``Claim.attempt``
    missing = "missing"  # no such job (its record expired)
    finished = "finished"  # it already ended (a redelivery)
    busy = "busy"  # another worker runs it and still heartbeats
    cancelled = "cancelled"  # a cancel was asked before it started: this delivery made it final
    lost = "lost"  # its worker was lost too often, or during a follow-up: this delivery failed it


@dataclass(frozen=True)
class Claim:
    """What a delivery may do with a job: ``run`` it (as attempt ``attempt``) or leave it."""

    outcome: ClaimOutcome
    attempt: int


class FollowUpOutcome(StrEnum):
    """What ``JobStore.follow_up`` did (``job_follow_up.lua``)."""

    accepted = "accepted"
    missing = "missing"
    not_finished = "not_finished"  # the current task is still running
    not_kept = "not_kept"  # the job did not keep its session
    closed = "closed"  # its session closed (idle time passed, cancelled)
    lost = "lost"  # the worker holding the session stopped heartbeating


@dataclass(frozen=True)
class FollowUpClaim:
    """``accepted`` (as run ``run``; its events follow stream entry ``event_id``), or why not."""

    outcome: FollowUpOutcome
    run: int = 0
    event_id: str = ""


class PauseOutcome(StrEnum):
    """What ``JobStore.pause`` did (``job_pause.lua``)."""

    paused = "paused"
    already = "already"  # a pause was asked before
    missing = "missing"
    finished = "finished"
    not_running = "not_running"  # queued or retrying


class ResumeOutcome(StrEnum):
    """What ``JobStore.resume`` did (``job_resume.lua``)."""

    resumed = "resumed"
    missing = "missing"
    finished = "finished"
    not_paused = "not_paused"


class InputOutcome(StrEnum):
    """What ``HumanStore.push_input`` did (``job_input.lua``)."""

    accepted = "accepted"  # kept for the running job
    handed_back = "handed_back"  # kept, and the job that waited for a human goes on
    missing = "missing"
    finished = "finished"
    not_running = "not_running"  # queued or retrying: nothing reads it yet
    full = "full"  # the job holds as many inputs as it may


class CancelOutcome(StrEnum):
    """What ``JobStore.cancel`` did (``job_cancel.lua``)."""

    cancelled = "cancelled"  # it was queued: it never starts
    requested = "requested"  # it is running: it stops before its next action
    session_closed = "session_closed"  # it had finished: its kept session is closed now
    finished = "finished"  # too late: the state says how it ended
    missing = "missing"


NoJob = Literal[""]
"""The ``state`` of a steering answer about a job that does not exist."""


class PauseResult(NamedTuple):
    """A pause's outcome and the job's state when it was asked."""

    outcome: PauseOutcome
    state: JobStatus | NoJob


class ResumeResult(NamedTuple):
    """A resume's outcome and the job's state when it was asked."""

    outcome: ResumeOutcome
    state: JobStatus | NoJob


class InputResult(NamedTuple):
    """An input's outcome and the job's state when it was pushed."""

    outcome: InputOutcome
    state: JobStatus | NoJob


class CancelResult(NamedTuple):
    """A cancel's outcome and the job's state after it (``cancelled`` when it cancelled a queued job)."""

    outcome: CancelOutcome
    state: JobStatus | NoJob


def state_of(value: str) -> JobStatus | NoJob:
    """A script's state answer: a ``JobStatus``, or ``""`` when there is no such job."""
    return JobStatus(value) if value else ""
